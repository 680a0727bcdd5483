// `jf generate`: text generation with streaming output and an optional JSON report.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "kernels/cpu.h"
#include "kernels/parallel.h"
#include "tokenizer/tokenizer.h"
#include "tune/tuner.h"
#include "viz/trace_doc.h"
#include "viz/trajectory_page.h"

namespace jf::cli {

namespace {

struct GenerateArgs {
  ModelOptions model;
  PromptOptions prompt;
  GenerationConfig gen;
  DecoderOptions decoder;
  RuleOptions rules;
  bool json = false;
  bool no_echo = false;
  std::string trace_path, viz_path, config;
};

// The trace document of one generation: rows of every forward plus the text of each token in it, so that
// `jf viz` needs no model.
viz::TraceDoc trace_doc(const Decoder& decoder, const std::vector<int32_t>& prompt, const GenerationResult& r,
                        ForwardTrace trace, const std::string& text, const Tokenizer& tok) {
  viz::TraceDoc d;
  d.decoder = decoder.name();
  d.prompt = prompt;
  d.output = r.tokens;
  d.text = text;
  d.trace = std::move(trace);
  auto add = [&](int32_t id) {
    if (id >= 0 && id < tok.n_vocab() && !d.pieces.count(id)) d.pieces[id] = tok.token_bytes(id, true);  // with its leading space, as it sits in the text
  };
  for (int32_t t : d.full_tokens()) add(t);
  for (const ForwardRecord& f : d.trace.forwards)
    for (int32_t t : f.tokens) add(t);
  return d;
}

nlohmann::json stats_json(const GenerationResult& r) {
  const GenerationStats& s = r.stats;
  nlohmann::json j;
  j["n_prompt"] = s.n_prompt;
  j["n_tokens"] = s.n_tokens;
  j["n_forwards"] = s.n_forwards;
  j["n_forward_rows"] = s.n_forward_rows;
  j["tpf"] = s.tpf();
  j["tps"] = s.tps();
  j["gen_seconds"] = s.gen_seconds;
  j["prefill_seconds"] = s.prefill_seconds;
  j["forward_seconds"] = s.forward_seconds;
  j["decoder_seconds"] = s.gen_seconds - s.forward_seconds;
  j["accepted_histogram"] = s.accepted_histogram;
  j["counters"] = s.counters;
  j["stop_reason"] = stop_reason_name(r.stop);
  return j;
}

int run_generate(GenerateArgs& a) {
  a.gen.sampling.validate();  // bad flag values fail before the model is loaded
  check_output_path(a.trace_path, "--trace");
  check_output_path(a.viz_path, "--viz");
  expand_decoder_spec(a.decoder);
  if (!a.config.empty()) a.decoder = parse_decoder_spec(tune::read_tune_config(a.config).decoder, a.decoder);
  const bool automatic = a.decoder.name == "auto";
  if (!automatic) a.decoder.validate(a.gen.sampling.greedy());
  LoadedModel lm = open_model(a.model);
  if (!lm.tokenizer) throw Error(a.model.path + ": the model has no tokenizer; generate needs one");
  const Tokenizer& tok = *lm.tokenizer;
  std::string prompt_text;
  std::vector<int32_t> prompt = prompt_tokens(a.prompt, tok, &prompt_text);
  std::unique_ptr<ForwardPass> fwd = open_forward(a.model, *lm.model);
  Session session(*fwd, context_size(a.model, *lm.model), kv_type(a.model, *fwd));
  check_prompt(prompt, session.context_size());  // before the prompt is echoed
  if (automatic) {
    if (!a.gen.sampling.greedy()) throw Error("--decoder auto is for greedy decoding (--temp 0)");
    std::string why;
    a.decoder = parse_decoder_spec(tune::auto_decoder(a.model.path, session.forward_pass(), &why), a.decoder);
    a.decoder.validate(true);
    std::fprintf(stderr, "jf: --decoder auto: %s\n", why.c_str());
  }
  a.gen.eos_ids = tok.eog_ids();
  compile_rules(a.rules, tok, a.gen.rules);
  if (a.gen.rules.active() && a.decoder.name == "fastcot") throw Error("fastcot inserts text of its own: it takes no grammar, bias or penalty");

  if (!a.decoder.ngram_corpus.empty()) a.decoder.corpus_tokens = read_ngram_corpus(a.decoder.ngram_corpus, tok);
  a.decoder.trigger_tokens = tok.encode(a.decoder.answer_trigger, /*add_special=*/false, /*parse_special=*/false);
  std::unique_ptr<Decoder> decoder_ptr = make_decoder(a.decoder);
  Decoder& decoder = *decoder_ptr;
  StreamingDecoder stream(tok, prompt);  // the text after the prompt, with its leading space
  std::string text;
  const bool echo = !a.json && !a.no_echo && !a.prompt.chat;
  if (echo) {
    std::fputs(prompt_text.c_str(), stdout);
    std::fflush(stdout);
  }
  TokenSink sink = [&](std::span<const int32_t> toks) {
    std::string piece;
    for (int32_t t : toks) piece += stream.push(t);
    text += piece;
    if (!a.json && !piece.empty()) {
      std::fputs(piece.c_str(), stdout);
      std::fflush(stdout);
    }
  };
  ForwardTrace trace;
  if (!a.trace_path.empty() || !a.viz_path.empty()) a.gen.trace = &trace;
  GenerationResult r = decoder.generate(session, prompt, a.gen, sink);
  std::string tail = stream.finish();
  text += tail;
  if (a.gen.trace) {
    const viz::TraceDoc doc = trace_doc(decoder, prompt, r, std::move(trace), text, tok);
    if (!a.trace_path.empty()) viz::write_trace(a.trace_path, doc);
    if (!a.viz_path.empty()) viz::write_trajectory_html(a.viz_path, doc);
  }
  if (a.json) {
    nlohmann::json j = stats_json(r);
    j["text"] = text;
    j["prompt_tokens"] = prompt;
    j["tokens"] = r.tokens;
    j["decoder"] = decoder.name();
    j["prompt"] = prompt_text;
    j["model"] = a.model.path;
    j["threads"] = num_threads();
    j["kernels"] = isa_name(active_isa());
    j["kv_type"] = dtype_name(kv_type(a.model, *fwd));
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("%s\n", tail.c_str());
  }
  std::fflush(stdout);  // the text's last line before the summary on stderr
  std::fprintf(stderr, "jf: %s: %d tokens, %lld forwards (%.2f tokens/forward), %.1f tokens/s, prefill %d tokens in %.3f s, stop: %s\n",
               decoder.name().c_str(), r.stats.n_tokens, static_cast<long long>(r.stats.n_forwards), r.stats.tpf(),
               r.stats.tps(), r.stats.n_prompt, r.stats.prefill_seconds, stop_reason_name(r.stop).c_str());
  return 0;
}

}  // namespace

Command add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text from a prompt");
  add_model_options(cmd, args->model);
  add_prompt_options(cmd, args->prompt);
  add_generation_options(cmd, args->gen);
  add_sampling_options(cmd, args->gen.sampling);
  add_rule_options(cmd, args->rules);
  add_decoder_options(cmd, args->decoder);
  cmd->add_flag("--json", args->json, "Print one JSON object with the text, token ids and statistics at the end");
  cmd->add_flag("--no-echo", args->no_echo, "Do not print the prompt before the generated text");
  cmd->add_option("--config", args->config, "Decoder configuration from jf tune -o (overrides --decoder)");
  cmd->add_option("--trace", args->trace_path,
                  "Write every forward's rows (tokens, roles), committed tokens and the output to this JSON file");
  cmd->add_option("--viz", args->viz_path, "Write the trajectory page (self-contained HTML, see jf viz) to this file");
  return [args] { return run_generate(*args); };
}

}  // namespace jf::cli
