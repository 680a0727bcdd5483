// `jf tune`: measure this machine's forward cost for a model, measure the tokens per forward of a grid of
// decoder configurations on sample prompts, predict each one's speed, time the most promising ones and
// keep the fastest lossless one (ar if none beats it). The result is a small JSON config that
// `jf generate --config`, `jf bench --config` and `--decoder auto` use.
#pragma once
#include <string>
#include <vector>

#include "decode/decoder.h"
#include "decode/options.h"
#include "tune/cost_table.h"
#include "tune/select.h"

namespace jf::tune {

struct TuneOptions {
  double budget_seconds = 60;  // wall time for the whole tuning, split between its phases
  int max_new_tokens = 48;
  std::vector<std::string> grid;  // empty: tuning_grid()
  int verify = 3;                 // configurations timed again besides ar
  double margin = 0.02;           // a configuration must beat ar by this much (relative) to be chosen
};

struct TuneResult {
  CostTable cost;
  std::vector<Candidate> candidates;
  std::string decoder, why;
  double context = 0;  // the context length predictions were made at (mean over a generation)
  double seconds = 0;  // wall time spent
};

// Every generation is greedy with gen's stop conditions. Throws jf::Error for a bad grid entry.
TuneResult tune(Session& s, const std::vector<std::vector<int32_t>>& prompts, const GenerationConfig& gen,
                const DecoderOptions& base, const TuneOptions& o, const ProgressFn& progress = {});

// The written config. `decoder` is a decoder spec; the rest says where it was measured.
struct TuneConfig {
  std::string decoder, why, model, model_key, machine;
  int threads = 0;
};
std::string tune_config_json(const TuneResult& r, const TuneConfig& meta, const TuneOptions& o);
// Throws jf::Error (naming the path) when the file is missing or not a jf tune config, or its decoder
// spec is invalid.
TuneConfig read_tune_config(const std::string& path);

// Identifies a model file cheaply: its size and a hash of its first and last MiB.
std::string model_key(const std::string& path);
// Identifies this machine for tuning: CPU model, kernels in use, threads, and the device the forward runs on
// (ForwardPass::device_name(): a GPU's best configuration is not the CPU's).
std::string machine_key(const std::string& device = "cpu");
// Where tune results are cached for this model and machine: $XDG_CACHE_HOME/jf or ~/.cache/jf.
std::string cache_path(const std::string& model_key, const std::string& machine_key);
// jf's cache directory: $XDG_CACHE_HOME/jf, else ~/.cache/jf, else /tmp/jf-cache (also jf chat's history).
std::string cache_dir();

// What `--decoder auto` runs: the cached tuning for this model and machine when there is one, else the
// cost-curve rule on a quick measurement. `why` says which.
std::string auto_decoder(const std::string& model_path, ForwardPass& fwd, std::string* why);

}  // namespace jf::tune
