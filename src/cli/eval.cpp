// `jf eval`: how far a fine-tuned model has moved from its base, and what it gained. Primary: top-1
// agreement, KL and perplexity ratio on held-out real text (teacher-forced), and the tokens per forward of
// parallel decoders for the model beside the base's on held-out prompts, with both models' repetition.
// Secondary: agreement on the base's own greedy continuations, the base's NLL of each model's outputs.
// `jf frontier` draws several evaluations as TPF gain against held-out agreement (SVG).
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

struct EvalArgs {
  ModelOptions model;
  std::string base, text, prompts_file, format = "auto";
  int n = 128, window = 256, limit = 0;
  int64_t max_text_tokens = 0;
  bool json = false;
  std::string decoders = "jacobi:block=16,multiblock:block=16";  // TPF measured for model and base
};

// Outputs shorter than this are not judged for loops (a short text cannot show one).
constexpr size_t kLoopWindow = 64;

// Tokens per forward of greedy decoders on the prompts, for one model.
struct DecoderTpf {
  int64_t tokens = 0, forwards = 0;
  double tpf() const { return forwards ? double(tokens) / forwards : 0.0; }
};

// One model's inference path for teacher forcing: every row's logits, in chunks, from a fresh cache.
struct Scorer {
  Scorer(ForwardPass& f, int capacity, DType kv) : tf(f), cache(f.make_cache(capacity, kv)) {}
  ForwardPass& tf;
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
    const ForwardResult bl = base.tf.forward(base.in);
    base_rows.clear();
    for (size_t i = 0; i < len; i++) base_rows.insert(base_rows.end(), bl.logits(static_cast<int>(i)), bl.logits(static_cast<int>(i)) + V);
    model.in.set_causal(&model.cache, piece, SequenceInput::Logits::All);
    const ForwardResult ml = model.tf.forward(model.in);
    for (size_t i = 0; i < len; i++)
      if (c0 + i >= from) compare_row(base_rows.data() + i * V, ml.logits(static_cast<int>(i)), V, toks[c0 + i + 1], c);
  }
}

nlohmann::json comparison_json(const TokenComparison& c) {
  return {{"tokens", c.rows}, {"top1_agreement", c.agreement()}, {"kl_base_model", c.mean_kl()},
          {"nll_base", c.mean_nll_base()}, {"nll_model", c.mean_nll_model()}};
}

struct EvalModels {
  LoadedModel model, base;
  std::unique_ptr<ForwardPass> fmodel, fbase;  // their forward passes on --device
  int vocab = 0;
};

// Teacher-forced on real text, in windows as `jf perplexity` reads it: the primary quality figures.
nlohmann::json eval_text(const EvalArgs& a, EvalModels& m) {
  const Tokenizer& tok = *m.model.tokenizer;
  std::vector<int32_t> ids = tok.encode(read_text_file(a.text), false, false);
  if (a.max_text_tokens > 0 && static_cast<int64_t>(ids.size()) > a.max_text_tokens) ids.resize(a.max_text_tokens);
  Scorer sb(*m.fbase, a.window, kv_type(a.model, *m.fbase)), sm(*m.fmodel, a.window, kv_type(a.model, *m.fmodel));
  TokenComparison c;
  const size_t W = static_cast<size_t>(a.window - 1);
  for (size_t start = 0; start < ids.size(); start += W) {
    std::vector<int32_t> win(1, tok.bos() >= 0 ? tok.bos() : ids[start]);
    win.insert(win.end(), ids.begin() + start, ids.begin() + std::min(ids.size(), start + W));
    compare_sequence(sb, sm, m.vocab, win, 0, c);
  }
  if (c.rows == 0) throw Error(a.text + ": no tokens to score");
  nlohmann::json j = comparison_json(c);
  j["perplexity_model"] = std::exp(c.mean_nll_model());
  j["perplexity_base"] = std::exp(c.mean_nll_base());
  j["perplexity_ratio"] = std::exp(c.mean_nll_model() - c.mean_nll_base());
  return j;
}

// Repetition of one model's greedy outputs: repeated 4-grams, and loops among the outputs long enough to show one.
struct Repetition {
  int64_t repeated = 0, grams = 0, checked = 0, loop_free = 0;
  void add(const std::vector<int32_t>& out) {
    count_repeated_4grams(out, &repeated, &grams);
    if (out.size() < kLoopWindow) return;
    checked++;
    loop_free += !loops_within(out, 8, kLoopWindow);
  }
  double share() const { return grams ? double(repeated) / grams : 0.0; }
  double loop_free_share() const { return checked ? double(loop_free) / checked : 0.0; }
};

// Greedy continuations of held-out prompts by both models: repetition, the secondary agreement figures, and
// each decoder's tokens per forward for the model beside the base's.
void eval_prompts(const EvalArgs& a, EvalModels& m, nlohmann::json& out) {
  const Tokenizer& tok = *m.model.tokenizer;
  std::vector<std::string> texts = load_prompts(a.prompts_file, a.format);
  if (a.limit > 0 && static_cast<int>(texts.size()) > a.limit) texts.resize(a.limit);
  if (texts.empty()) throw Error(a.prompts_file + ": no prompts");
  const std::vector<std::string> specs = split_list(a.decoders);
  std::vector<DecoderOptions> decoders;
  for (const std::string& spec : specs) {
    decoders.push_back(parse_decoder_spec(spec, DecoderOptions{}));
    decoders.back().validate(/*greedy=*/true);
    // Every row sent, none priced away: the TPF of the model, not of this machine's cost of a row.
    decoders.back().draft_adaptive = false;
  }
  GenerationConfig cfg;
  cfg.max_new_tokens = a.n;
  cfg.eos_ids = tok.eog_ids();
  const int ctx = context_size(a.model, *m.model.model);
  Session gm(*m.fmodel, ctx, kv_type(a.model, *m.fmodel)), gb(*m.fbase, ctx, kv_type(a.model, *m.fbase));
  Scorer sb(*m.fbase, ctx, kv_type(a.model, *m.fbase)), sm(*m.fmodel, ctx, kv_type(a.model, *m.fmodel));
  TokenComparison on_base, on_model;  // teacher-forced on the base's / the model's greedy continuations
  Repetition rep_m, rep_b;
  std::vector<DecoderTpf> tpf_m(decoders.size()), tpf_b(decoders.size());
  int64_t identical = 0;
  std::vector<double> divergence;
  for (const std::string& t : texts) {
    PromptOptions po;
    po.prompt = t;
    std::string rendered;
    const std::vector<int32_t> prompt = prompt_tokens(po, tok, &rendered);
    const std::vector<int32_t> bc = ArDecoder().generate(gb, prompt, cfg).tokens;
    const std::vector<int32_t> mc = ArDecoder().generate(gm, prompt, cfg).tokens;
    for (size_t d = 0; d < decoders.size(); d++)
      for (auto [session, tpf] : {std::pair{&gm, &tpf_m[d]}, std::pair{&gb, &tpf_b[d]}}) {
        const GenerationResult r = make_decoder(decoders[d])->generate(*session, prompt, cfg);
        tpf->tokens += r.stats.n_tokens;
        tpf->forwards += r.stats.n_forwards;
      }
    std::vector<int32_t> seq = prompt;
    seq.insert(seq.end(), bc.begin(), bc.end());
    compare_sequence(sb, sm, m.vocab, seq, prompt.size() - 1, on_base);
    seq.resize(prompt.size());
    seq.insert(seq.end(), mc.begin(), mc.end());
    compare_sequence(sb, sm, m.vocab, seq, prompt.size() - 1, on_model);
    rep_m.add(mc);
    rep_b.add(bc);
    divergence.push_back(first_divergence(bc, mc));
    identical += bc == mc;
  }
  out["decoders"] = nlohmann::json::array();
  for (size_t d = 0; d < decoders.size(); d++)
    out["decoders"].push_back({{"decoder", specs[d]}, {"tpf_model", tpf_m[d].tpf()}, {"tpf_base", tpf_b[d].tpf()},
                               {"tpf_ratio", tpf_b[d].tpf() > 0 ? tpf_m[d].tpf() / tpf_b[d].tpf() : 0.0}});
  out["continuations"] = comparison_json(on_base);
  out["continuations"]["prompts"] = texts.size();
  out["greedy"] = {{"base_nll_of_model_outputs", on_model.mean_nll_base()},
                   {"base_nll_of_base_outputs", on_base.mean_nll_base()},
                   {"repeat4_model", rep_m.share()},
                   {"repeat4_base", rep_b.share()},
                   {"loop_free64_model", rep_m.loop_free_share()},  // no 8-gram twice in the first 64 tokens
                   {"loop_free64_base", rep_b.loop_free_share()},
                   {"loop_checked_model", rep_m.checked},  // outputs of at least 64 tokens
                   {"loop_checked_base", rep_b.checked},
                   {"median_first_divergence", median(divergence)},
                   {"identical_outputs", identical},
                   {"prompts", texts.size()},
                   {"max_new_tokens", a.n}};
}

void print_report(const EvalArgs& a, const nlohmann::json& out) {
  std::printf("model %s vs base %s\n", a.model.path.c_str(), a.base.c_str());
  if (out.contains("text")) {
    const auto& j = out["text"];
    std::printf("held-out text (%lld tokens): top-1 agreement %.4f, KL(base||model) %.4f nats/token, perplexity %.3f (base %.3f, x%.3f)\n",
                j["tokens"].get<long long>(), j["top1_agreement"].get<double>(), j["kl_base_model"].get<double>(),
                j["perplexity_model"].get<double>(), j["perplexity_base"].get<double>(), j["perplexity_ratio"].get<double>());
  }
  if (!out.contains("greedy")) return;
  const auto& g = out["greedy"];
  for (const auto& d : out["decoders"])
    std::printf("tokens per forward, %s: %.3f (base %.3f, x%.3f)\n", d["decoder"].get<std::string>().c_str(),
                d["tpf_model"].get<double>(), d["tpf_base"].get<double>(), d["tpf_ratio"].get<double>());
  std::printf("greedy outputs (%lld prompts): repeated 4-grams %.4f (base %.4f); loop-free in 64 tokens %.2f of %lld "
              "(base %.2f of %lld)\n",
              g["prompts"].get<long long>(), g["repeat4_model"].get<double>(), g["repeat4_base"].get<double>(),
              g["loop_free64_model"].get<double>(), g["loop_checked_model"].get<long long>(),
              g["loop_free64_base"].get<double>(), g["loop_checked_base"].get<long long>());
  const auto& c = out["continuations"];
  std::printf("secondary, on the base's greedy continuations (%lld tokens): top-1 agreement %.4f, KL(base||model) "
              "%.4f; base NLL/token of the model's outputs %.4f vs of its own %.4f; median first divergence %.1f; "
              "identical %lld\n",
              c["tokens"].get<long long>(), c["top1_agreement"].get<double>(), c["kl_base_model"].get<double>(),
              g["base_nll_of_model_outputs"].get<double>(), g["base_nll_of_base_outputs"].get<double>(),
              g["median_first_divergence"].get<double>(), g["identical_outputs"].get<long long>());
}

int run_eval(EvalArgs& a) {
  if (a.text.empty() && a.prompts_file.empty()) throw Error("jf eval needs --text and/or --prompts");
  if (a.window < 2) throw Error("--window must be >= 2");
  EvalModels m;
  m.model = open_model(a.model);
  ModelOptions bo = a.model;
  bo.path = a.base;
  bo.draft.clear(), bo.no_draft = true;  // the base as it is: --draft is the model's
  m.base = open_model(bo);
  if (!m.model.tokenizer) throw Error(a.model.path + ": the model has no tokenizer");
  m.vocab = m.model.model->config().vocab_size;
  if (m.base.model->config().vocab_size != m.vocab) throw Error(a.base + ": the base has another vocabulary size");
  m.fmodel = open_forward(a.model, *m.model.model);
  m.fbase = open_forward(a.model, *m.base.model);
  nlohmann::json out = {{"model", a.model.path}, {"base", a.base}};
  if (!a.text.empty()) out["text"] = eval_text(a, m);
  if (!a.prompts_file.empty()) eval_prompts(a, m, out);
  if (a.json) std::printf("%s\n", out.dump().c_str());
  else print_report(a, out);
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  CLI::App* cmd = app.add_subcommand("eval", "Compare a fine-tuned model with its base: held-out agreement, KL, "
                                             "perplexity, tokens per forward, repetition");
  add_model_options(cmd, a->model);
  cmd->add_option("--base", a->base, "Base model to compare against")->required();
  cmd->add_option("--text", a->text, "Held-out real text (teacher-forced agreement, KL, perplexity): the quality figures");
  cmd->add_option("--max-text-tokens", a->max_text_tokens, "Score at most this many text tokens (default all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--window", a->window, "Text window, BOS included (default 256)");
  cmd->add_option("--prompts", a->prompts_file,
                  "Held-out prompts: greedy continuations by both models (repetition, tokens per forward)");
  cmd->add_option("--format", a->format, "Prompt file format: auto, jsonl, humaneval, mbpp, gsm8k, text");
  cmd->add_option("--limit", a->limit, "Use only the first N prompts")->check(CLI::NonNegativeNumber);
  cmd->add_option("-n,--n-predict", a->n, "Greedy tokens per prompt (default 128)")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--decoders", a->decoders,
                  "Greedy decoders whose tokens per forward are measured for the model and the base, with "
                  "every row sent (draft-policy fixed: the model's TPF, not this machine's) "
                  "(default jacobi:block=16,multiblock:block=16)");
  cmd->add_flag("--json", a->json, "Print one JSON object");
  return [a] { return run_eval(*a); };
}

}  // namespace jf::cli
