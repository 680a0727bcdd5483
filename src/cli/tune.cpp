// `jf tune`: picks the fastest lossless decoder configuration for a model on this machine (src/tune) and
// writes it as a config for generate/bench --config and --decoder auto.
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/prompts.h"
#include "device/device.h"
#include "kernels/parallel.h"
#include "tune/cost_chart.h"
#include "tune/tuner.h"

namespace jf::cli {

namespace {

// Used when no --prompts file is given: short prompts of the kinds jf is benchmarked on (story, code, Q&A).
const std::vector<std::string> kSamplePrompts = {
    "Once upon a time, there was a little girl named Lily. She loved to play",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Question: Tom has 3 apples and buys 5 more. How many apples does he have?\nAnswer:",
    "The history of the city begins in the twelfth century, when",
};

struct TuneArgs {
  ModelOptions model;
  std::string prompts_file, format = "auto", out, plot, plot_beside;
  int limit = 4;
  bool no_cache = false, kernels = false, no_kernels = false;
  std::string grid, members, kernel_rows;
  int attention_context = 4096;
  tune::TuneOptions opt;
};

// --plot-beside: the other device's cost curve at the tuned one's first context (the model loaded again, so a
// CPU gets its panel copies), both drawn relative to their own one row.
void write_plot_beside(const TuneArgs& a, const tune::CostTable& cost, const std::string& device) {
  ModelOptions other = a.model;
  other.device = a.plot_beside;
  LoadedModel lm = open_model(other);
  std::unique_ptr<ForwardPass> fwd = open_forward(other, *lm.model);
  std::fprintf(stderr, "jf tune: measuring the cost curve on %s for --plot-beside\n", fwd->device_name().c_str());
  const tune::CostTable beside = tune::measure_cost(*fwd, {cost.contexts[0]}, cost.rows, 0.2);
  std::printf("\n");
  for (const auto& [name, t] : {std::pair<std::string, const tune::CostTable&>{device, cost}, {fwd->device_name(), beside}}) {
    std::printf("%s, time(M) / time(1) at context %d:", name.c_str(), cost.contexts[0]);
    for (size_t i = 0; i < t.rows.size(); i++) std::printf(" M=%d %.2f", t.rows[i], t.seconds[0][i] / t.seconds[0][0]);
    std::printf("\n");
  }
  viz::write_svg(a.plot, viz::line_chart_svg(tune::relative_cost_chart(
                             {{device, cost}, {fwd->device_name(), beside}}, "Forward cost by rows: " + a.model.path)));
}

// The GPU's matrix kernels timed and chosen (--kernels, and first on a hardware GPU): the table, printed.
void tune_kernels(TuneArgs& a, Model& model, bool software_too) {
  KernelTuneOptions o;
  o.members = split_list(a.members);
  for (const std::string& r : split_list(a.kernel_rows)) {
    if (r.empty() || r.size() > 5 || r.find_first_not_of("0123456789") != std::string::npos || std::stoi(r) < 1)
      throw Error("--kernel-rows takes row counts such as 1,4,16,64,512, got '" + a.kernel_rows + "'");
    o.rows.push_back(std::stoi(r));
  }
  o.budget_seconds = a.kernels ? a.opt.budget_seconds : std::min(a.opt.budget_seconds / 2, 120.0);
  o.cache = !a.no_cache;
  o.software_too = software_too;
  o.attention_context = a.attention_context;
  const std::string table = tune_gpu_kernels(model, a.model.device, o);
  if (!table.empty()) std::printf("matrix kernels on %s\n%s\n", a.model.device.c_str(), table.c_str());
  std::fflush(stdout);
}

int run_tune(TuneArgs& a) {
  if (!(a.opt.budget_seconds > 0)) throw Error("--budget must be > 0 seconds");
  if ((!a.members.empty() || !a.kernel_rows.empty()) && !a.kernels) throw Error("--members and --kernel-rows go with --kernels");
  if (a.attention_context < 0) throw Error("--attention-context must be >= 0 (0: attention not timed)");
  if (a.kernels && a.no_kernels) throw Error("--kernels and --no-kernels contradict each other");
  if (a.kernels) {
    if (!a.out.empty() || !a.plot.empty()) throw Error("--kernels tunes the GPU's matrix kernels only: -o and --plot do not apply");
    LoadedModel lm = open_model(a.model);
    tune_kernels(a, *lm.model, true);
    return 0;
  }
  check_output_path(a.out, "-o");
  check_output_path(a.plot, "--plot");
  if (!a.plot_beside.empty() && a.plot.empty()) throw Error("--plot-beside needs --plot FILE");
  if (!a.grid.empty()) {
    for (size_t s = 0, e; s <= a.grid.size(); s = e + 1) {
      e = a.grid.find(',', s);
      if (e == std::string::npos) e = a.grid.size();
      if (e > s) a.opt.grid.push_back(a.grid.substr(s, e - s));
    }
    for (const auto& spec : a.opt.grid) parse_decoder_spec(spec, DecoderOptions{}).validate(true);
  }
  std::vector<std::string> texts = a.prompts_file.empty() ? kSamplePrompts : load_prompts(a.prompts_file, a.format);
  if (a.limit > 0 && static_cast<int>(texts.size()) > a.limit) texts.resize(a.limit);
  LoadedModel lm = open_model(a.model);
  if (!lm.tokenizer) throw Error(a.model.path + ": the model has no tokenizer; tune needs one");
  GenerationConfig gen;
  gen.eos_ids = lm.tokenizer->eog_ids();
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& t : texts) {
    PromptOptions po;
    po.prompt = t;
    std::string rendered;
    prompts.push_back(prompt_tokens(po, *lm.tokenizer, &rendered));
  }
  if (a.model.device != "cpu" && !a.no_kernels) tune_kernels(a, *lm.model, false);  // (hardware GPUs only)
  std::unique_ptr<ForwardPass> fwd = open_forward(a.model, *lm.model);
  Session session(*fwd, context_size(a.model, *lm.model), kv_type(a.model, *fwd));
  for (const auto& p : prompts) check_prompt(p, session.context_size() - a.opt.max_new_tokens);

  Progress progress(1, "tune");
  const tune::TuneResult r = tune::tune(session, prompts, gen, DecoderOptions{}, a.opt, [&](int done, int total, const std::string& what) {
    progress.set_total(total);
    progress.update(done, what);
  });
  progress.finish();

  std::printf("model %s, %zu prompts, %d new tokens, %d threads, %.0f s\n\n", a.model.path.c_str(), prompts.size(),
              a.opt.max_new_tokens, num_threads(), r.seconds);
  std::printf("cost of a forward (ms) by rows M; context %d:", r.cost.contexts[0]);
  for (size_t i = 0; i < r.cost.rows.size(); i++) std::printf(" M=%d %.3f", r.cost.rows[i], 1e3 * r.cost.seconds[0][i]);
  std::printf("\nrows nearly free (<= 1.15x one row):");
  for (size_t c = 0; c < r.cost.contexts.size(); c++) std::printf(" %d at context %d;", r.cost.free_rows(c), r.cost.contexts[c]);
  std::printf("\n\n| decoder | TPF | rows/forward | lossless | predicted TPS | measured TPS |\n|---|---|---|---|---|---|\n");
  for (const tune::Candidate& c : r.candidates) {
    if (!c.measured) {
      std::printf("| %s | (out of budget) | | | | |\n", c.spec.c_str());
      continue;
    }
    char measured[32] = "";
    if (c.verified) std::snprintf(measured, sizeof measured, "%.1f", c.measured_tps);
    std::printf("| %s | %.2f | %.1f | %s | %.1f | %s |\n", c.spec.c_str(), c.tpf, c.rows_per_forward, c.lossless ? "yes" : "NO",
                c.predicted_tps, measured);
  }
  std::printf("\nchosen: %s\n", r.why.c_str());

  tune::TuneConfig meta;
  meta.model = a.model.path;
  meta.model_key = tune::model_key(a.model.path);
  meta.machine = tune::machine_key(fwd->device_name());
  meta.threads = num_threads();
  const std::string json = tune::tune_config_json(r, meta, a.opt);
  if (!a.out.empty()) write_file_atomic(a.out, json.data(), json.size());
  if (!a.no_cache) {
    const std::string cache = tune::cache_path(meta.model_key, meta.machine);
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(cache).parent_path(), ec);
    try {
      write_file_atomic(cache, json.data(), json.size());
      std::fprintf(stderr, "jf tune: cached for --decoder auto in %s\n", cache.c_str());
    } catch (const Error& e) {  // a read-only home must not lose the result already written with -o
      std::fprintf(stderr, "jf tune: warning: could not cache the result: %s\n", e.what());
    }
  }
  if (!a.plot.empty() && a.plot_beside.empty())
    viz::write_svg(a.plot, viz::line_chart_svg(tune::cost_chart(r.cost, "Forward cost: " + a.model.path)));
  if (!a.plot.empty() && !a.plot_beside.empty()) write_plot_beside(a, r.cost, fwd->device_name());
  return 0;
}

}  // namespace

Command add_tune_command(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  CLI::App* cmd = app.add_subcommand("tune", "Find the fastest lossless decoder configuration for a model on this machine");
  add_model_options(cmd, a->model);
  cmd->add_option("--prompts", a->prompts_file, "Prompt file (as jf bench); default: a small built-in sample");
  cmd->add_option("--format", a->format, "Prompt file format: auto, jsonl, humaneval, mbpp, gsm8k, text (default auto)");
  cmd->add_option("--limit", a->limit, "Use at most N prompts (default 4; 0 = all)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--budget", a->opt.budget_seconds, "Seconds to spend in all (default 60)");
  cmd->add_option("-n,--n-predict", a->opt.max_new_tokens, "Tokens generated per prompt (default 48)")->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--grid", a->grid, "Comma-separated decoder specs to try instead of the built-in grid");
  cmd->add_option("--verify", a->opt.verify, "Configurations timed again besides ar (default 3)")->check(CLI::Range(0, 64));
  cmd->add_option("-o,--output", a->out, "Write the chosen configuration and measurements to this JSON file");
  cmd->add_option("--plot", a->plot, "Write the cost curve (ms per forward vs rows, per context) as SVG");
  cmd->add_option("--plot-beside", a->plot_beside,
                  "With --plot: also measure the cost curve on this device (e.g. cpu when tuning with --device vulkan) "
                  "and draw both as time(M) / time(1), each relative to its own one row");
  cmd->add_flag("--no-cache", a->no_cache, "Do not store the result in ~/.cache/jf for --decoder auto (nor the kernels chosen)");
  cmd->add_flag("--kernels", a->kernels,
                "Only time the GPU's matrix-kernel family on the model's shapes and keep each shape's fastest for the device "
                "(also done first by a plain jf tune on a hardware GPU; --budget bounds it)");
  cmd->add_flag("--no-kernels", a->no_kernels, "On a GPU, tune the decoders without timing the matrix kernels first");
  cmd->add_option("--members", a->members, "With --kernels: only these family members (e.g. serial,split-wg128-o2-r8-pair-fold-sg,tiles-r64)");
  cmd->add_option("--kernel-rows", a->kernel_rows, "With --kernels: row counts to time (default 1,4,16,64,512; the first must be 1)");
  cmd->add_option("--attention-context", a->attention_context,
                  "Tokens in the cache when attention's kernels are timed (whole rows or chunks of slots; default 4096, 0: not timed)");
  return [a] { return run_tune(*a); };
}

}  // namespace jf::cli
