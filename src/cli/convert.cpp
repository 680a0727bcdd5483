// `jf convert` (any supported model -> GGUF, optionally changing the weight type) and `jf random`
// (randomly initialised models of realistic shapes, for speed measurements).
#include <cstdio>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "model/convert.h"
#include "model/draft_file.h"
#include "model/hf.h"
#include "model/random_model.h"
#include "tokenizer/tokenizer.h"

namespace jf::cli {

namespace {

WeightScheme parse_scheme(const std::string& s) {
  WeightScheme w;
  if (!weight_scheme_from_name(s, &w)) throw Error("unknown weight type '" + s + "' (expected " + weight_scheme_names() + ")");
  return w;
}

// The keys llama.cpp's quantizer writes, which other tools read to name a file's type.
void set_file_type(GgufMetadata& meta, const WeightScheme& scheme) {
  if (scheme.file_type >= 0) meta.set("general.file_type", GgufValue::of_u32(static_cast<uint32_t>(scheme.file_type)));
  meta.set("general.quantization_version", GgufValue::of_u32(2));
}

int run_convert(const ModelOptions& o, const std::string& out, const std::string& type, const std::string& split_draft) {
  if (out.empty()) throw Error("missing output path (-o)");
  ModelOptions own = o;
  own.no_draft = own.draft.empty();  // a draft file beside the model stays beside it; --draft merges one in
  LoadedModel lm = open_model(own);
  if (!split_draft.empty() && !lm.model->config().draft_head) throw Error("--split-draft: " + o.path + " has no draft tensors");
  ModelConfig cfg;
  TensorSet ts = to_gguf_layout(lm.model->config(), lm.model->tensors(), &cfg);
  if (!type.empty()) {
    std::vector<std::string> notes;
    ts = convert_tensors(ts, parse_scheme(type), cfg, &notes);
    for (const auto& n : notes) std::fprintf(stderr, "jf: %s\n", n.c_str());
  }
  GgufMetadata meta;
  if (!type.empty()) set_file_type(meta, parse_scheme(type));
  if (lm.tokenizer) lm.tokenizer->to_gguf(meta);
  if (!split_draft.empty()) {  // the model without its draft tensors, and a draft file bound to it
    ModelConfig base = cfg;
    base.draft_head = base.draft_layer = false, base.draft_chain = 0;
    TensorSet own;
    for (const auto& [name, t] : ts.tensors)
      if (!is_draft_tensor(name)) own.tensors[name] = t;
    write_model_gguf(out, base, own, meta);
    write_draft_file(split_draft, cfg, ts, base_fingerprint(own));
    std::fprintf(stderr, "jf: wrote %s (%s) and its draft file %s\n", out.c_str(), base.summary().c_str(), split_draft.c_str());
    return 0;
  }
  write_model_gguf(out, cfg, ts, meta);
  std::fprintf(stderr, "jf: wrote %s (%s)\n", out.c_str(), cfg.summary().c_str());
  return 0;
}

constexpr int64_t kFastRowPool = 256;  // jf random --fast: distinct rows per matrix

int run_random(std::string preset, const std::string& arch, const std::string& type, uint64_t seed, int layers,
               const std::string& vocab_from, bool fast, const std::string& out) {
  if (out.empty()) throw Error("missing output path (-o)");
  if (!arch.empty()) {  // a tiny test model of that architecture
    Arch a;
    if (!arch_from_name(arch, &a)) throw Error("unknown architecture '" + arch + "' (supported: " + supported_arch_names() + ")");
    preset = a == Arch::Llama ? "tiny" : arch + "-tiny";
  }
  ModelConfig cfg = preset_config(preset);
  if (layers > 0) cfg.n_layers = layers;
  GgufMetadata meta;
  if (!vocab_from.empty()) {  // borrow a real vocabulary so the random model can be driven with text
    auto f = GgufFile::open(vocab_from);
    auto tok = Tokenizer::from_gguf(f->meta());
    const bool tiny = preset.find("tiny") != std::string::npos;  // test shapes: any vocabulary fits
    if (tiny) cfg.vocab_size = tok->n_vocab();
    if (tok->n_vocab() != cfg.vocab_size)
      throw Error(vocab_from + " has " + std::to_string(tok->n_vocab()) + " tokens; preset '" + preset + "' needs " +
                  std::to_string(cfg.vocab_size));
    tok->to_gguf(meta);
  }
  const WeightScheme scheme = parse_scheme(type);
  set_file_type(meta, scheme);
  TensorSet ts = random_tensors(cfg, scheme, seed, fast ? kFastRowPool : 0);
  write_model_gguf(out, cfg, ts, meta);
  std::fprintf(stderr, "jf: wrote %s (%s, %s weights)\n", out.c_str(), cfg.summary().c_str(), type.c_str());
  return 0;
}

}  // namespace

Command add_convert_command(CLI::App& app) {
  auto o = std::make_shared<ModelOptions>();
  auto out = std::make_shared<std::string>();
  auto type = std::make_shared<std::string>();
  auto split = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("convert", "Convert a model (llama2.c, safetensors or GGUF) to GGUF, optionally requantizing");
  add_model_options(cmd, *o);
  cmd->add_option("-o,--output", *out, "Output GGUF file")->required();
  cmd->add_option("--type", *type, std::string("Weight type of the output matrices: ") + weight_scheme_names() + " (default: unchanged)");
  cmd->add_option("--split-draft", *split,
                  "Write the model's draft tensors to this draft file and the model without them to -o (a model every "
                  "GGUF tool loads; name the draft file MODEL.draft.gguf to have it found beside MODEL.gguf)");
  return [o, out, type, split] { return run_convert(*o, *out, *type, *split); };
}

Command add_random_command(CLI::App& app) {
  struct Args {
    std::string preset = "llama-1b", arch, type = "f16", out;
    uint64_t seed = 1;
    int layers = 0;
    std::string vocab_from;
    bool fast = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("random", "Write a randomly initialised model of a realistic shape (for benchmarks)");
  cmd->add_option("--preset", a->preset,
                  "Shape: tiny, tiny-256 (every matrix 256 wide: all K-quant types apply), llama3-tiny (Llama 3.1's RoPE), "
                  "llama-1b (TinyLlama 1.1B), llama-8b (Llama 3.1 8B's layers, a 32,000-token vocabulary), qwen2-0.5b (Qwen2.5 0.5B), qwen2-tiny, qwen2-yarn-tiny, qwen3-tiny, qwen3-0.6b "
                  "(Qwen3 0.6B), phi3-tiny, phi3-mini (Phi-3-mini), gemma2-tiny, gemma3-tiny, gemma3-1b (Gemma 3 1B)");
  cmd->add_option("--arch", a->arch, "A tiny test model of this architecture (" + supported_arch_names() + ")")
      ->excludes(cmd->get_option("--preset"));
  cmd->add_option("--type", a->type, std::string("Weight type: ") + weight_scheme_names() + " (default f16)");
  cmd->add_option("--seed", a->seed, "Random seed (default 1)");
  cmd->add_option("--layers", a->layers, "Override the number of layers")->check(CLI::Range(0, 1000));
  cmd->add_option("--vocab-from", a->vocab_from, "Copy the tokenizer of this GGUF file (its size must match the preset; the tiny presets take its size)");
  cmd->add_flag("--fast", a->fast,
                 "Draw 256 rows per matrix and repeat them: a forward costs the same, and an 8B file takes seconds, not "
                 "minutes (speed files only: the model's outputs are meaningless either way)");
  cmd->add_option("-o,--output", a->out, "Output GGUF file")->required();
  return [a] { return run_random(a->preset, a->arch, a->type, a->seed, a->layers, a->vocab_from, a->fast, a->out); };
}

}  // namespace jf::cli
