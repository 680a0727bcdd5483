// `jf merge`: weights base + alpha * (tuned - base), written atomically.
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/prompts.h"
#include "decode/decoder.h"
#include "model/convert.h"
#include "model/hf.h"
#include "model/transformer.h"
#include "train/quality.h"
#include "train/trainable_model.h"

namespace jf::cli {

namespace {

// ---------------------------------------------------------------- merge

struct MergeArgs {
  float alpha = 0.5f;
  std::string base, tuned, out, type = "f32";
};

int run_merge(MergeArgs& a) {
  if (!std::isfinite(a.alpha)) throw Error("--alpha must be a finite number");
  DType type;
  if (!dtype_from_name(a.type, &type)) throw Error("--type must be f32, f16, bf16, q8_0 or q4_0, got '" + a.type + "'");
  LoadedModel lb = load_model(a.base), lt = load_model(a.tuned);
  const ModelConfig& cb = lb.model->config();
  if (cb.summary() != lt.model->config().summary() || cb.vocab_size != lt.model->config().vocab_size)
    throw Error(a.tuned + " does not have the shape of " + a.base + " (" + cb.summary() + ")");
  // fp32 copies of every parameter (quantized files are dequantized), merged in place into the base's.
  TrainableModel base = TrainableModel::from_tensors(cb, lb.model->tensors());
  TrainableModel tuned = TrainableModel::from_tensors(lt.model->config(), lt.model->tensors());
  auto drafts = [](const ModelConfig& c) { return c.draft_layer ? 2 : c.draft_head ? 1 : 0; };
  if (drafts(base.config()) != drafts(tuned.config())) {
    const bool more = drafts(base.config()) > drafts(tuned.config());
    const char* what = drafts(more ? base.config() : tuned.config()) == 2 ? "a draft layer" : "a draft head";
    throw Error(std::string(more ? a.base : a.tuned) + " has " + what + " and " + (more ? a.tuned : a.base) +
                " has not: merge the models without it");
  }
  JF_CHECK(base.n_params() == tuned.n_params(), "same shape, same parameter count");
  merge_weights(base.param_data(), tuned.param_data(), base.n_params(), a.alpha, base.param_data());
  ModelConfig cfg;
  TensorSet ts = to_gguf_layout(base.config(), base.to_tensor_set(DType::F32), &cfg);
  if (type != DType::F32) ts = convert_tensors(ts, type);
  GgufMetadata meta;
  if (lb.tokenizer) lb.tokenizer->to_gguf(meta);
  meta.set("jf.merge.alpha", GgufValue::of_string(std::to_string(a.alpha)));
  write_model_gguf(a.out, cfg, ts, meta);
  std::fprintf(stderr, "jf merge: %s + %g x (%s - base) -> %s (%s)\n", a.base.c_str(), a.alpha, a.tuned.c_str(),
               a.out.c_str(), a.type.c_str());
  return 0;
}

}  // namespace

Command add_merge_command(CLI::App& app) {
  auto a = std::make_shared<MergeArgs>();
  CLI::App* cmd = app.add_subcommand("merge", "Merge weights: base + alpha x (tuned - base), written atomically");
  cmd->add_option("--alpha", a->alpha, "Interpolation weight: 0 = base, 1 = tuned (default 0.5)");
  cmd->add_option("--type", a->type, "Weight type of the output matrices (default f32)");
  cmd->add_option("base", a->base, "Base model")->required();
  cmd->add_option("tuned", a->tuned, "Fine-tuned model of the same shape")->required();
  cmd->add_option("output", a->out, "Output GGUF")->required();
  return [a] { return run_merge(*a); };
}

}  // namespace jf::cli
