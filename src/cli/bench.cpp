// `jf bench`: every decoder on every prompt in one process; a Markdown table in the shape of the papers'
// (TPF, TPS, speedup over ar measured in the same run, outputs identical to ar) and per-prompt JSON.
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/prompts.h"
#include "decode/tree_draft.h"
#include "kernels/cpu.h"
#include "kernels/parallel.h"
#include "tune/cost_chart.h"
#include "tune/tuner.h"
#include "viz/svg.h"

namespace jf::cli {

namespace {

struct BenchArgs {
  ModelOptions model;
  PromptOptions prompt;  // --chat / --system / --chat-format apply to every prompt
  std::string row_cost = "measure";
  std::string prompts_file, format = "auto", decoders = "ar,jacobi,lookahead,pld,multiblock", json_out, plot, config;
  int limit = 0;
  DecoderOptions base;
  GenerationConfig gen;
  RuleOptions rules;  // structured output / penalties for every prompt
};

struct Totals {
  int64_t tokens = 0, forwards = 0, rows = 0, identical = 0, runs = 0, correct = 0;
  double gen_seconds = 0, forward_seconds = 0, device_seconds = 0;
  DeviceSyncs syncs;
  std::vector<int64_t> histogram;  // [k] = forwards that committed k tokens, over all prompts
  std::map<std::string, int64_t> counters;  // the decoder's own, over all prompts
};

// Draft trees (decode/tree_draft.h): rows a tree, how deep the accepted path went, and the calibrated acceptance
// the decoder learned, by depth (rows) and the draft's probability (columns: accepted / tried).
void print_trees(const std::string& spec, const Totals& t) {
  auto c = [&](const std::string& name) {
    const auto it = t.counters.find(name);
    return it == t.counters.end() ? int64_t{0} : it->second;
  };
  const int64_t trees = c("tree_forwards");
  if (trees == 0) return;
  std::printf("  %s: %.1f rows a tree, %lld tokens accepted off the draft's first guess; accepted path reached depth",
              spec.c_str(), double(c("tree_nodes")) / trees, static_cast<long long>(c("tree_branch_accepted")));
  for (int d = 1; c("tree_reached_depth_" + std::to_string(d)) > 0; d++)
    std::printf(" %d: %.0f%%", d, 100.0 * c("tree_reached_depth_" + std::to_string(d)) / trees);
  std::printf("\n    P(accepted | parent accepted) by depth, draft probability 0-0.1 .. 0.9-1:\n");
  for (int d = 1; d <= AcceptanceCalibration::kDepths; d++) {
    std::string line;
    for (int b = 0; b <= AcceptanceCalibration::kBuckets; b++) {
      const std::string cell = std::to_string(d) + "_" + std::to_string(b);
      const int64_t tried = c("tree_tried_" + cell);
      char buf[48];
      std::snprintf(buf, sizeof buf, tried ? " %5.2f" : "     -", tried ? double(c("tree_accepted_" + cell)) / tried : 0.0);
      line += buf;
    }
    if (line.find_first_not_of(" -") != std::string::npos) std::printf("    depth %d:%s\n", d, line.c_str());
  }
}

int run_bench(BenchArgs& a) {
  a.gen.sampling.validate();
  check_output_path(a.json_out, "--json");
  check_output_path(a.plot, "--plot");
  const bool greedy = a.gen.sampling.greedy();
  std::vector<std::string> specs = split_list(a.decoders);
  if (!a.config.empty()) {  // the tuned configuration joins the comparison
    const std::string tuned = tune::read_tune_config(a.config).decoder;
    if (std::find(specs.begin(), specs.end(), tuned) == specs.end()) specs.push_back(tuned);
  }
  if (specs.empty() || specs[0] != "ar") specs.insert(specs.begin(), "ar");  // the reference, measured in this run
  std::vector<DecoderOptions> options;  // checked before the model is loaded
  for (const auto& spec : specs) {
    options.push_back(parse_decoder_spec(spec, a.base));
    options.back().validate(greedy);
  }
  PromptSet set = load_prompt_set(a.prompts_file, a.format);
  std::vector<std::string>& texts = set.prompts;
  if (a.limit > 0 && static_cast<int>(texts.size()) > a.limit) texts.resize(a.limit);
  const bool scored = !set.answers.empty();  // gsm8k: each output's final answer is checked

  LoadedModel lm = open_model(a.model);
  if (!lm.tokenizer) throw Error(a.model.path + ": the model has no tokenizer; bench needs one");
  a.gen.eos_ids = lm.tokenizer->eog_ids();
  compile_rules(a.rules, *lm.tokenizer, a.gen.rules);
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& t : texts) {
    PromptOptions po = a.prompt;
    po.prompt = t;
    std::string rendered;
    prompts.push_back(prompt_tokens(po, *lm.tokenizer, &rendered));
  }
  std::vector<std::unique_ptr<Decoder>> decoders;
  std::map<std::string, std::vector<int32_t>> corpora;  // each corpus file read once
  for (DecoderOptions& o : options) {
    o.trigger_tokens = lm.tokenizer->encode(o.answer_trigger, /*add_special=*/false, /*parse_special=*/false);
    if (!o.ngram_corpus.empty()) {
      auto it = corpora.find(o.ngram_corpus);
      if (it == corpora.end()) it = corpora.emplace(o.ngram_corpus, read_ngram_corpus(o.ngram_corpus, *lm.tokenizer)).first;
      o.corpus_tokens = it->second;
    }
    decoders.push_back(make_decoder(o));
  }
  std::unique_ptr<ForwardPass> fwd = open_forward(a.model, *lm.model);
  Session session(*fwd, context_size(a.model, *lm.model), kv_type(a.model, *fwd));
  decoders[0]->generate(session, prompts[0], a.gen);  // warm caches before measuring
  // and every other decoder's first use, a few tokens each (a GPU driver compiles the pipelines of chains and
  // trees on first use: an H200's host time a drafting forward was 3-9x ar's, charged to the decoders timed)
  GenerationConfig warm = a.gen;
  warm.max_new_tokens = std::min(warm.max_new_tokens, 8);
  for (size_t d = 1; d < decoders.size(); d++) decoders[d]->generate(session, prompts[0], warm);
  if (a.row_cost == "measure") {
    // The decoders price their rows (decode/row_cost.h) on a quick measurement of this machine's forward
    // cost, the fastest of a few runs per row count: on a shared machine, costs learned from the timed
    // forwards themselves follow whatever else runs at the time.
    const tune::CostTable t = tune::measure_cost(session.forward_pass(), {64}, {1, 2, 3, 4, 6, 8, 12, 16}, 0.25);
    std::vector<std::pair<int, double>> curve;
    for (size_t i = 0; i < t.rows.size(); i++) curve.emplace_back(t.rows[i], t.seconds[0][i]);
    session.row_cost().set_curve(curve);
  }

  std::vector<Totals> totals(decoders.size());
  nlohmann::json runs = nlohmann::json::array();
  Progress progress(static_cast<int>(prompts.size() * decoders.size()), "bench");
  int done = 0;
  for (size_t p = 0; p < prompts.size(); p++) {
    std::vector<int32_t> reference;
    for (size_t d = 0; d < decoders.size(); d++) {  // all decoders back to back on a prompt: noise hits all alike
      progress.update(done++, specs[d] + ", prompt " + std::to_string(p + 1));
      const double device0 = session.device_seconds();
      GenerationResult r = decoders[d]->generate(session, prompts[p], a.gen);
      totals[d].device_seconds += session.device_seconds() - device0;
      if (d == 0) reference = r.tokens;
      const bool same = r.tokens == reference;
      Totals& t = totals[d];
      t.tokens += r.stats.n_tokens, t.forwards += r.stats.n_forwards, t.rows += r.stats.n_forward_rows;
      t.gen_seconds += r.stats.gen_seconds, t.forward_seconds += r.stats.forward_seconds;
      t.identical += same, t.runs++;
      t.syncs.submissions += r.stats.syncs.submissions, t.syncs.waits += r.stats.syncs.waits;
      t.syncs.extra_fetches += r.stats.syncs.extra_fetches, t.syncs.bytes_to_host += r.stats.syncs.bytes_to_host;
      std::string answer;
      if (scored) {
        answer = extract_answer(lm.tokenizer->decode(r.tokens));
        t.correct += answer == set.answers[p];
      }
      const auto& h = r.stats.accepted_histogram;
      if (t.histogram.size() < h.size()) t.histogram.resize(h.size());
      for (size_t k = 0; k < h.size(); k++) t.histogram[k] += h[k];
      for (const auto& [name, value] : r.stats.counters) t.counters[name] += value;
      runs.push_back({{"prompt_index", p}, {"decoder", specs[d]}, {"n_prompt", r.stats.n_prompt},
                      {"n_tokens", r.stats.n_tokens}, {"n_forwards", r.stats.n_forwards}, {"tpf", r.stats.tpf()},
                      {"tps", r.stats.tps()}, {"gen_seconds", r.stats.gen_seconds},
                      {"forward_seconds", r.stats.forward_seconds}, {"identical_to_ar", same},
                      {"stop_reason", stop_reason_name(r.stop)}, {"accepted_histogram", r.stats.accepted_histogram},
                      {"counters", r.stats.counters}, {"tokens", r.tokens}});
      if (scored) {
        runs.back()["answer"] = answer;
        runs.back()["reference_answer"] = set.answers[p];
        runs.back()["correct"] = answer == set.answers[p];
      }
    }
  }
  progress.finish();

  const double ar_tps = totals[0].gen_seconds > 0 ? totals[0].tokens / totals[0].gen_seconds : 0;
  std::printf("model %s, %zu prompts, %d new tokens max, %s, %d threads, %s kernels, %s KV cache\n\n",
              a.model.path.c_str(), prompts.size(), a.gen.max_new_tokens, greedy ? "greedy" : "sampling",
              num_threads(), isa_name(active_isa()).c_str(), dtype_name(kv_type(a.model, *fwd)).c_str());
  // On a GPU: where it ran, and the device's own time per forward beside the host's (the rest of ms/forward
  // is recording, submitting and waiting).
  const bool on_device = totals[0].device_seconds > 0;
  if (on_device) std::printf("device %s\n\n", session.forward_pass().device_name().c_str());
  // speedup / TPF is how much of the tokens per forward reaches the wall clock (1.0: extra rows are free).
  // ms/forward: inside the model's forward; + decoding: the rest of the generation's time per forward (the
  // decoder's own work: drafting, masks, verification, bookkeeping). On a device, also its submissions and host
  // waits per forward (1: the forward, its greedy tokens and its draft chain in one), and the bytes copied back.
  std::printf("| decoder | TPF | TPS | speedup | speedup / TPF | identical to ar | rows/forward | ms/forward | + decoding ms/forward |%s%s\n",
              scored ? " forwards/prompt | accuracy |" : "",
              on_device ? " device ms/forward | submissions/forward | waits/forward | KB to host/forward |" : "");
  std::printf("|---|---|---|---|---|---|---|---|---|%s%s\n", scored ? "---|---|" : "", on_device ? "---|---|---|---|" : "");
  nlohmann::json summary = nlohmann::json::array();
  std::vector<tune::DecoderPoint> points;
  for (size_t d = 0; d < decoders.size(); d++) {
    const Totals& t = totals[d];
    const double tpf = t.forwards ? double(t.tokens) / t.forwards : 0, tps = t.gen_seconds > 0 ? t.tokens / t.gen_seconds : 0;
    const double speedup = ar_tps > 0 ? tps / ar_tps : 0;
    const std::string same = greedy ? std::to_string(100 * t.identical / std::max<int64_t>(1, t.runs)) + "%" : "n/a (sampling)";
    const double accuracy = double(t.correct) / std::max<int64_t>(1, t.runs);
    std::printf("| %s | %.2f | %.0f | %.2fx | %.2f | %s | %.1f | %.3f | %.3f |", specs[d].c_str(), tpf, tps, speedup,
                tpf > 0 ? speedup / tpf : 0, same.c_str(), t.forwards ? double(t.rows) / t.forwards : 0,
                t.forwards ? 1e3 * t.forward_seconds / t.forwards : 0,
                t.forwards ? 1e3 * (t.gen_seconds - t.forward_seconds) / t.forwards : 0);
    if (scored) std::printf(" %.1f | %.1f%% |", double(t.forwards) / std::max<int64_t>(1, t.runs), 100 * accuracy);
    if (on_device) {
      const double f = static_cast<double>(std::max<int64_t>(1, t.forwards));
      std::printf(" %.3f | %.2f | %.2f | %.1f |", 1e3 * t.device_seconds / f, t.syncs.submissions / f, t.syncs.waits / f,
                  t.syncs.bytes_to_host / f / 1024.0);
    }
    std::printf("\n");
    points.push_back({specs[d], tpf, speedup});
    summary.push_back({{"decoder", specs[d]}, {"tpf", tpf}, {"tps", tps}, {"speedup", speedup},
                       {"identical_percent", greedy ? 100.0 * t.identical / std::max<int64_t>(1, t.runs) : -1.0},
                       {"tokens", t.tokens}, {"forwards", t.forwards}, {"gen_seconds", t.gen_seconds},
                       {"forward_seconds", t.forward_seconds}, {"device_seconds", t.device_seconds},
                       {"decoding_ms_per_forward", t.forwards ? 1e3 * (t.gen_seconds - t.forward_seconds) / t.forwards : 0.0},
                       {"submissions", t.syncs.submissions}, {"waits", t.syncs.waits}, {"extra_fetches", t.syncs.extra_fetches},
                       {"bytes_to_host", t.syncs.bytes_to_host}, {"counters", t.counters}});
    if (scored) summary.back()["accuracy"] = accuracy;
  }
  // What the decoders priced their rows at: the measured curve, or the one the session learned.
  std::printf("\nforward cost the rows were priced at (%s), time(m) / time(1):",
              a.row_cost == "measure" ? "measured before the runs" : "learned from the runs");
  for (int m : {2, 3, 4, 6, 8, 12, 16}) std::printf(" %d: %.2f", m, session.row_cost().relative(m));
  std::printf("\n");
  // How the tokens came: the share of forwards that committed k tokens (SJD-PAC's "long tail" is the k = 1 bar).
  std::printf("\ncommitted per forward (share of forwards):\n");
  for (size_t d = 0; d < decoders.size(); d++) {
    std::printf("  %s:", specs[d].c_str());
    for (size_t k = 1; k < totals[d].histogram.size(); k++)
      if (totals[d].histogram[k])
        std::printf(" %zu: %.0f%%", k, 100.0 * totals[d].histogram[k] / std::max<int64_t>(1, totals[d].forwards));
    std::printf("\n");
  }
  bool trees = false;
  for (const Totals& t : totals) trees |= t.counters.count("tree_forwards") > 0;
  if (trees) std::printf("\ndraft trees:\n");
  for (size_t d = 0; d < decoders.size(); d++) print_trees(specs[d], totals[d]);
  if (!a.plot.empty()) {
    char title[256];
    std::snprintf(title, sizeof title, "Speedup over ar against tokens per forward, %zu prompts, %s", prompts.size(),
                  on_device ? session.forward_pass().device_name().c_str() : (std::to_string(num_threads()) + " threads").c_str());
    viz::write_svg(a.plot, viz::line_chart_svg(tune::speedup_chart(points, title)));
  }
  if (!a.json_out.empty()) {
    nlohmann::json j = {{"model", a.model.path}, {"prompts_file", a.prompts_file}, {"n_prompts", prompts.size()},
                        {"max_new_tokens", a.gen.max_new_tokens}, {"greedy", greedy}, {"threads", num_threads()},
                        {"kernels", isa_name(active_isa())}, {"kv_type", dtype_name(kv_type(a.model, *fwd))}, {"summary", summary},
                        {"runs", runs}};
    const std::string text = j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    write_file_atomic(a.json_out, text.data(), text.size());
  }
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  a->gen.max_new_tokens = 128;
  CLI::App* cmd = app.add_subcommand("bench", "Run decoders over a prompt set and compare them with ar in one run");
  add_model_options(cmd, a->model);
  cmd->add_option("--prompts", a->prompts_file, "Prompt file (JSONL with a 'prompt' field, or a dataset file)")->required();
  cmd->add_option("--format", a->format, "Prompt file format: auto, jsonl, humaneval, mbpp, gsm8k, text (default auto); gsm8k also scores "
                  "each output's final answer (the number after 'answer is', else the last number) against '#### N'");
  cmd->add_option("--limit", a->limit, "Use only the first N prompts")->check(CLI::NonNegativeNumber);
  cmd->add_option("--decoders", a->decoders,
                  "Comma-separated decoders, each name[:key=value...], e.g. ar,jacobi:block=8,lookahead:W=8:N=4 "
                  "(ar is always run first as the reference)");
  cmd->add_option("--json", a->json_out, "Write per-prompt results and the summary to this JSON file");
  cmd->add_option("--config", a->config, "Also run the decoder configuration chosen by jf tune -o");
  cmd->add_option("--row-cost", a->row_cost,
                  "What the decoders price their rows at: measure (the forward's cost by rows, measured once before "
                  "the runs) or learn (from the timed forwards as they run, as jf generate does) (default measure)")
      ->check(CLI::IsMember({"measure", "learn"}));
  cmd->add_option("--plot", a->plot, "Write each decoder's speedup over ar against its tokens per forward as an SVG chart to this file");
  cmd->add_flag("--chat", a->prompt.chat, "Wrap each prompt in the model's chat template");
  cmd->add_option("--system", a->prompt.system, "System message for --chat");
  add_generation_options(cmd, a->gen);
  add_sampling_options(cmd, a->gen.sampling);
  add_rule_options(cmd, a->rules);
  add_decoder_options(cmd, a->base, /*with_name=*/false);
  return [a] { return run_bench(*a); };
}

}  // namespace jf::cli
