#include "tune/tuner.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/cache_dir.h"
#include "base/error.h"
#include "base/timer.h"
#include "kernels/cpu.h"
#include "kernels/parallel.h"

namespace jf::tune {

using nlohmann::json;

namespace {
// More row counts measured (`more`: rows 1, then the new ones) appended to `cost`, kept monotone; nothing when
// the model's context length dropped some of the contexts for the wider forwards.
void extend_rows(CostTable& cost, const CostTable& more) {
  if (more.contexts != cost.contexts) return;
  cost.rows.insert(cost.rows.end(), more.rows.begin() + 1, more.rows.end());
  for (size_t c = 0; c < cost.seconds.size(); c++)
    for (size_t i = 1; i < more.rows.size(); i++) cost.seconds[c].push_back(std::max(cost.seconds[c].back(), more.seconds[c][i]));
}
}  // namespace

TuneResult tune(Session& s, const std::vector<std::vector<int32_t>>& prompts, const GenerationConfig& gen_in,
                const DecoderOptions& base, const TuneOptions& o, const ProgressFn& progress) {
  JF_CHECK(!prompts.empty(), "tune needs prompts");
  const double t0 = now_seconds(), budget = std::max(1.0, o.budget_seconds);
  GenerationConfig gen = gen_in;
  gen.sampling = SamplingParams{};  // greedy: lossless means identical tokens to ar
  gen.max_new_tokens = o.max_new_tokens;
  gen.trace = nullptr;
  TuneResult r;
  // (the built-in grid widens once the cost curve says how many rows are free: choose_grid below)
  std::vector<std::string> grid;
  std::vector<DecoderOptions> opts;
  auto choose_grid = [&](int free_rows) {
    grid = o.grid.empty() ? tuning_grid(free_rows, s.forward_pass().config().draft_layer) : o.grid;
    grid.erase(std::remove(grid.begin(), grid.end(), "ar"), grid.end());
    grid.insert(grid.begin(), "ar");  // the reference for losslessness and speed, always first
    opts.clear();
    for (const std::string& spec : grid) {
      opts.push_back(parse_decoder_spec(spec, base));
      opts.back().validate(true);
    }
    r.candidates.clear();
    for (const std::string& spec : grid) r.candidates.push_back(Candidate{spec});
  };
  choose_grid(1);

  double mean_prompt = 0;
  for (const auto& p : prompts) mean_prompt += static_cast<double>(p.size()) / prompts.size();
  r.context = mean_prompt + o.max_new_tokens / 2.0;

  // Progress counts steps of all three phases; the verify phase's length is estimated as one pass.
  const std::vector<int> rows = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
  std::vector<int> contexts = {static_cast<int>(r.context), 4 * static_cast<int>(r.context) + 256, 2048};
  contexts.resize(std::min<size_t>(contexts.size(), 3));
  const int cost_steps = static_cast<int>(contexts.size() * rows.size());
  // The timing phase repeats while budget is left: its share is re-estimated after each pass.
  int total = cost_steps + static_cast<int>(grid.size() * prompts.size()) + (o.verify + 1) * static_cast<int>(prompts.size());
  int done = 0;
  auto report = [&](const std::string& what) {
    if (progress) progress(std::min(done, total), total, what);
  };

  // ---- 1. cost of a forward by rows (15% of the budget)
  const double per_point = std::clamp(0.15 * budget / cost_steps, 0.01, 1.0);
  r.cost = measure_cost(s.forward_pass(), contexts, rows, per_point, [&](int d, int, const std::string& what) {
    done = d;
    report(what);
  });
  done = cost_steps;
  if (r.cost.seconds[0].back() <= 1.5 * r.cost.seconds[0][0]) {  // 32 rows nearly free (a GPU): up to 128
    report("cost: rows 48-128");
    extend_rows(r.cost, measure_cost(s.forward_pass(), r.cost.contexts, {1, 48, 64, 96, 128}, per_point));
  }
  int free_rows = 1;
  for (size_t c = 0; c < r.cost.contexts.size(); c++) free_rows = std::max(free_rows, r.cost.free_rows(c));
  choose_grid(free_rows);
  total = cost_steps + static_cast<int>(grid.size() * prompts.size()) + (o.verify + 1) * static_cast<int>(prompts.size());

  // ---- 2. tokens per forward of each configuration, until 65% of the budget is spent (ar always)
  std::vector<std::vector<int32_t>> reference(prompts.size());
  for (size_t c = 0; c < grid.size(); c++) {
    if (c > 0 && now_seconds() - t0 > 0.65 * budget) break;
    auto dec = make_decoder(opts[c]);
    Candidate& cand = r.candidates[c];
    int64_t tokens = 0, forwards = 0, nrows = 0;
    cand.lossless = true;
    for (size_t p = 0; p < prompts.size(); p++) {
      report("tpf: " + grid[c] + ", prompt " + std::to_string(p + 1));
      const GenerationResult g = dec->generate(s, prompts[p], gen);
      if (c == 0) reference[p] = g.tokens;
      cand.lossless = cand.lossless && g.tokens == reference[p];
      tokens += g.stats.n_tokens, forwards += g.stats.n_forwards, nrows += g.stats.n_forward_rows;
      done++;
    }
    cand.measured = true;
    cand.tpf = forwards ? double(tokens) / forwards : 0;
    cand.rows_per_forward = forwards ? double(nrows) / forwards : 1;
  }
  predict(r.cost, r.context, r.candidates);

  // ---- 3. time ar and the best predicted ones back to back, prompt by prompt, until the budget is spent
  std::vector<size_t> timed = to_verify(r.candidates, static_cast<size_t>(std::max(0, o.verify)));
  timed.insert(timed.begin(), 0);
  std::vector<double> secs(timed.size(), 0);
  std::vector<int64_t> toks(timed.size(), 0);
  const int per_pass = static_cast<int>(timed.size() * prompts.size());
  total = done + per_pass;
  const double verify_start = now_seconds();
  for (int pass = 0; pass == 0 || now_seconds() - t0 < 0.95 * budget; pass++) {
    for (size_t p = 0; p < prompts.size(); p++) {
      for (size_t k = 0; k < timed.size(); k++) {  // alternating, so load on a shared machine hits all alike
        report("timing: " + grid[timed[k]] + ", prompt " + std::to_string(p + 1));
        // A fresh decoder each time: pld remembers earlier generations, and a prompt timed again would
        // otherwise be drafted from its own earlier output.
        const GenerationResult g = make_decoder(opts[timed[k]])->generate(s, prompts[p], gen);
        secs[k] += g.stats.gen_seconds, toks[k] += g.stats.n_tokens;
        done++;
      }
      if (pass > 0 && now_seconds() - t0 >= 0.95 * budget) break;
    }
    const double pass_seconds = (now_seconds() - verify_start) / (pass + 1);
    const double left = t0 + 0.95 * budget - now_seconds();
    total = done + (left > 0 ? per_pass * static_cast<int>(std::ceil(left / pass_seconds)) : 0);
  }
  for (size_t k = 0; k < timed.size(); k++) {
    Candidate& c = r.candidates[timed[k]];
    c.verified = true;
    c.measured_tps = secs[k] > 0 ? toks[k] / secs[k] : 0;
  }
  r.decoder = choose(r.candidates, o.margin, &r.why);
  r.seconds = now_seconds() - t0;
  done = total;
  report("done");
  return r;
}

std::string tune_config_json(const TuneResult& r, const TuneConfig& meta, const TuneOptions& o) {
  json cands = json::array();
  for (const Candidate& c : r.candidates)
    cands.push_back({{"spec", c.spec}, {"measured", c.measured}, {"tpf", c.tpf}, {"rows_per_forward", c.rows_per_forward},
                     {"lossless", c.lossless}, {"predicted_tps", c.predicted_tps}, {"verified", c.verified},
                     {"measured_tps", c.measured_tps}});
  const std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  json j = {{"format", "jf-tune-1"}, {"decoder", r.decoder}, {"why", r.why}, {"model", meta.model},
            {"model_key", meta.model_key}, {"machine", meta.machine}, {"threads", meta.threads}, {"created", when},
            {"budget_seconds", o.budget_seconds}, {"seconds", r.seconds}, {"max_new_tokens", o.max_new_tokens},
            {"context", r.context},
            {"cost", {{"contexts", r.cost.contexts}, {"rows", r.cost.rows}, {"seconds", r.cost.seconds}}},
            {"candidates", cands}};
  return j.dump(1) + "\n";
}

TuneConfig read_tune_config(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open the tune config");
  std::stringstream ss;
  ss << f.rdbuf();
  TuneConfig c;
  try {
    const json j = json::parse(ss.str());
    if (!j.is_object() || j.value("format", "") != "jf-tune-1") throw Error("not a jf tune config (format jf-tune-1)");
    c.decoder = j.at("decoder").get<std::string>();
    c.why = j.value("why", "");
    c.model = j.value("model", "");
    c.model_key = j.value("model_key", "");
    c.machine = j.value("machine", "");
    c.threads = j.value("threads", 0);
    parse_decoder_spec(c.decoder, DecoderOptions{}).validate(true);
  } catch (const json::exception& e) {
    throw Error(path + ": " + e.what());
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return c;
}

std::string model_key(const std::string& path) {
  if (std::filesystem::is_directory(path)) {  // a Hugging Face directory: its path and the size of its files
    uint64_t size = 0;
    for (const auto& e : std::filesystem::directory_iterator(path))
      if (e.is_regular_file()) size += e.file_size();
    return "dir-" + std::to_string(size) + "-" + std::to_string(std::hash<std::string>{}(std::filesystem::absolute(path)));
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open");
  f.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(f.tellg());
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the first and last MiB: enough to tell model files apart
  std::vector<char> buf(1 << 20);
  for (uint64_t at : {uint64_t(0), size > buf.size() ? size - buf.size() : uint64_t(0)}) {
    f.clear();
    f.seekg(static_cast<std::streamoff>(at));
    f.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    for (std::streamsize i = 0; i < f.gcount(); i++) h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ull;
  }
  char b[64];
  std::snprintf(b, sizeof b, "%llu-%016llx", static_cast<unsigned long long>(size), static_cast<unsigned long long>(h));
  return b;
}

std::string machine_key(const std::string& device) {
  std::string cpu = "unknown cpu";
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  const std::string key = cpu + ", " + isa_name(active_isa()) + ", " + std::to_string(num_threads()) + " threads";
  return device.empty() || device == "cpu" ? key : key + ", " + device;
}

std::string cache_dir() { return jf::cache_dir(); }

std::string cache_path(const std::string& mkey, const std::string& machine) {
  const std::string dir = cache_dir();
  uint64_t h = 1469598103934665603ull;
  for (char ch : machine) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  char b[40];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(h));
  return dir + "/tune-" + mkey + "-" + b + ".json";
}

std::string auto_decoder(const std::string& model_path, ForwardPass& fwd, std::string* why) {
  const std::string path = cache_path(model_key(model_path), machine_key(fwd.device_name()));
  if (std::filesystem::exists(path)) {
    try {
      const TuneConfig c = read_tune_config(path);
      if (why) *why = "tuned for this model and machine (" + path + "): " + c.why;
      return c.decoder;
    } catch (const Error&) {
      // a stale or damaged cache entry: fall through to the rule
    }
  }
  const CostTable cost = measure_cost(fwd, {64, 256}, {1, 2, 4, 8, 16}, 0.1);
  std::string rule;
  const std::string d = rule_from_cost(cost, &rule, fwd.config().draft_layer);
  if (why) *why = "not tuned yet (run jf tune); cost-curve rule: " + rule;
  return d;
}

}  // namespace jf::tune
