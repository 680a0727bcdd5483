// `jf merge` (weights base + alpha * (tuned - base)) and `jf eval` (how far a fine-tuned model has moved
// from its base: teacher-forced agreement and KL on held-out text and on the base's greedy continuations,
// the base's NLL of each model's greedy outputs, repetition, first divergence, perplexity).
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

// ---------------------------------------------------------------- eval

struct EvalArgs {
  ModelOptions model;
  std::string base, text, prompts_file, format = "auto";
  int n = 128, window = 256, limit = 0;
  int64_t max_text_tokens = 0;
  bool json = false;
};

// One model's inference path for teacher forcing: every row's logits, in chunks, from a fresh cache.
struct Scorer {
  Scorer(const Model& m, int capacity, DType kv) : tf(m.config(), m.weights()), cache(m.config(), capacity, kv) {}
  Transformer tf;
  KvCache cache;
  SequenceInput in;
};

// Runs `toks` through both models and compares rows [from, T-1) (row i predicts toks[i+1]).
void compare_sequence(Scorer& base, Scorer& model, int V, const std::vector<int32_t>& toks, size_t from,
                      TokenComparison& c) {
  if (toks.size() < 2) return;
  base.cache.truncate(0);
  model.cache.truncate(0);
  std::vector<float> base_rows;
  for (size_t c0 = 0; c0 + 1 < toks.size(); c0 += kPrefillChunk) {
    const size_t len = std::min<size_t>(kPrefillChunk, toks.size() - 1 - c0);
    const auto piece = std::span<const int32_t>(toks).subspan(c0, len);
    base.in.set_causal(&base.cache, piece, SequenceInput::Logits::All);
    const float* bl = base.tf.forward(base.in);
    base_rows.assign(bl, bl + len * static_cast<size_t>(V));
    model.in.set_causal(&model.cache, piece, SequenceInput::Logits::All);
    const float* ml = model.tf.forward(model.in);
    for (size_t i = 0; i < len; i++)
      if (c0 + i >= from) compare_row(base_rows.data() + i * V, ml + i * V, V, toks[c0 + i + 1], c);
  }
}

nlohmann::json comparison_json(const TokenComparison& c) {
  return {{"tokens", c.rows}, {"top1_agreement", c.agreement()}, {"kl_base_model", c.mean_kl()},
          {"nll_base", c.mean_nll_base()}, {"nll_model", c.mean_nll_model()}};
}

int run_eval(EvalArgs& a) {
  if (a.text.empty() && a.prompts_file.empty()) throw Error("jf eval needs --text and/or --prompts");
  if (a.window < 2) throw Error("--window must be >= 2");
  LoadedModel lm = open_model(a.model);
  ModelOptions bo = a.model;
  bo.path = a.base;
  LoadedModel lb = open_model(bo);
  if (!lm.tokenizer) throw Error(a.model.path + ": the model has no tokenizer");
  const int V = lm.model->config().vocab_size;
  if (lb.model->config().vocab_size != V) throw Error(a.base + ": the base has another vocabulary size");
  const Tokenizer& tok = *lm.tokenizer;
  nlohmann::json out = {{"model", a.model.path}, {"base", a.base}};

  if (!a.text.empty()) {  // teacher-forced on real text, windows as in `jf perplexity`
    std::vector<int32_t> ids = tok.encode(read_text_file(a.text), false, false);
    if (a.max_text_tokens > 0 && static_cast<int64_t>(ids.size()) > a.max_text_tokens) ids.resize(a.max_text_tokens);
    Scorer sb(*lb.model, a.window, kv_type(a.model)), sm(*lm.model, a.window, kv_type(a.model));
    TokenComparison c;
    const size_t W = static_cast<size_t>(a.window - 1);
    for (size_t start = 0; start < ids.size(); start += W) {
      std::vector<int32_t> win(1, tok.bos() >= 0 ? tok.bos() : ids[start]);
      win.insert(win.end(), ids.begin() + start, ids.begin() + std::min(ids.size(), start + W));
      compare_sequence(sb, sm, V, win, 0, c);
    }
    if (c.rows == 0) throw Error(a.text + ": no tokens to score");
    nlohmann::json j = comparison_json(c);
    j["perplexity_model"] = std::exp(c.mean_nll_model());
    j["perplexity_base"] = std::exp(c.mean_nll_base());
    j["perplexity_ratio"] = std::exp(c.mean_nll_model() - c.mean_nll_base());
    out["text"] = j;
  }

  if (!a.prompts_file.empty()) {  // greedy continuations of held-out prompts by both models
    std::vector<std::string> texts = load_prompts(a.prompts_file, a.format);
    if (a.limit > 0 && static_cast<int>(texts.size()) > a.limit) texts.resize(a.limit);
    if (texts.empty()) throw Error(a.prompts_file + ": no prompts");
    GenerationConfig cfg;
    cfg.max_new_tokens = a.n;
    for (int32_t id = 0; id < tok.n_vocab(); id++)
      if (tok.is_eog(id)) cfg.eos_ids.push_back(id);
    const int ctx = context_size(a.model, *lm.model);
    Session gm(*lm.model, ctx, kv_type(a.model)), gb(*lb.model, ctx, kv_type(a.model));
    Scorer sb(*lb.model, ctx, kv_type(a.model)), sm(*lm.model, ctx, kv_type(a.model));
    TokenComparison on_base, on_model;  // teacher-forced on the base's / the model's greedy continuations
    int64_t rep_m = 0, tot_m = 0, rep_b = 0, tot_b = 0, identical = 0, loop_free_m = 0, loop_free_b = 0;
    std::vector<double> divergence;
    for (const std::string& t : texts) {
      PromptOptions po;
      po.prompt = t;
      std::string rendered;
      const std::vector<int32_t> prompt = prompt_tokens(po, tok, &rendered);
      const std::vector<int32_t> bc = ArDecoder().generate(gb, prompt, cfg).tokens;
      const std::vector<int32_t> mc = ArDecoder().generate(gm, prompt, cfg).tokens;
      std::vector<int32_t> seq = prompt;
      seq.insert(seq.end(), bc.begin(), bc.end());
      compare_sequence(sb, sm, V, seq, prompt.size() - 1, on_base);
      seq.resize(prompt.size());
      seq.insert(seq.end(), mc.begin(), mc.end());
      compare_sequence(sb, sm, V, seq, prompt.size() - 1, on_model);
      count_repeated_4grams(mc, &rep_m, &tot_m);
      count_repeated_4grams(bc, &rep_b, &tot_b);
      loop_free_m += !loops_within(mc);
      loop_free_b += !loops_within(bc);
      divergence.push_back(first_divergence(bc, mc));
      identical += bc == mc;
    }
    out["continuations"] = comparison_json(on_base);
    out["continuations"]["prompts"] = texts.size();
    out["greedy"] = {{"base_nll_of_model_outputs", on_model.mean_nll_base()},
                     {"base_nll_of_base_outputs", on_base.mean_nll_base()},
                     {"repeat4_model", tot_m ? double(rep_m) / tot_m : 0.0},
                     {"repeat4_base", tot_b ? double(rep_b) / tot_b : 0.0},
                     {"loop_free64_model", double(loop_free_m) / texts.size()},  // no 8-gram twice in 64 tokens
                     {"loop_free64_base", double(loop_free_b) / texts.size()},
                     {"median_first_divergence", median(divergence)},
                     {"identical_outputs", identical},
                     {"prompts", texts.size()},
                     {"max_new_tokens", a.n}};
  }

  if (a.json) {
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("model %s vs base %s\n", a.model.path.c_str(), a.base.c_str());
  if (out.contains("text")) {
    const auto& j = out["text"];
    std::printf("held-out text (%lld tokens): top-1 agreement %.4f, KL(base||model) %.4f nats/token, perplexity %.3f (base %.3f, x%.3f)\n",
                j["tokens"].get<long long>(), j["top1_agreement"].get<double>(), j["kl_base_model"].get<double>(),
                j["perplexity_model"].get<double>(), j["perplexity_base"].get<double>(), j["perplexity_ratio"].get<double>());
  }
  if (out.contains("greedy")) {
    const auto& c = out["continuations"];
    const auto& g = out["greedy"];
    std::printf("base greedy continuations (%lld tokens): top-1 agreement %.4f, KL(base||model) %.4f nats/token\n",
                c["tokens"].get<long long>(), c["top1_agreement"].get<double>(), c["kl_base_model"].get<double>());
    std::printf("greedy outputs (%lld prompts): base NLL/token of the model's %.4f vs of its own %.4f; repeated 4-grams %.4f (base %.4f); loop-free in 64 tokens %.2f (base %.2f); median first divergence %.1f; identical %lld\n",
                g["prompts"].get<long long>(), g["base_nll_of_model_outputs"].get<double>(),
                g["base_nll_of_base_outputs"].get<double>(), g["repeat4_model"].get<double>(),
                g["repeat4_base"].get<double>(), g["loop_free64_model"].get<double>(),
                g["loop_free64_base"].get<double>(), g["median_first_divergence"].get<double>(),
                g["identical_outputs"].get<long long>());
  }
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

Command add_eval_command(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "Compare a model with its base: agreement, KL, NLL, repetition, perplexity");
  add_model_options(cmd, a->model);
  cmd->add_option("--base", a->base, "Base model to compare against")->required();
  cmd->add_option("--text", a->text, "Held-out real text (teacher-forced agreement, KL, perplexity)");
  cmd->add_option("--max-text-tokens", a->max_text_tokens, "Score at most this many text tokens (default all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--window", a->window, "Text window, BOS included (default 256)");
  cmd->add_option("--prompts", a->prompts_file, "Held-out prompts (greedy continuations by both models)");
  cmd->add_option("--format", a->format, "Prompt file format: auto, jsonl, humaneval, mbpp, gsm8k, text");
  cmd->add_option("--limit", a->limit, "Use only the first N prompts")->check(CLI::NonNegativeNumber);
  cmd->add_option("-n,--n-predict", a->n, "Greedy tokens per prompt (default 128)")->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--json", a->json, "Print one JSON object");
  return [a] { return run_eval(*a); };
}

}  // namespace jf::cli
