// Per-forward time vs tokens per forward M for a model (random preset or file), against the memory
// bandwidth limit and the compute roofline. Prints ratios measured in this run.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "base/rng.h"
#include "base/timer.h"
#include "device/device.h"
#include "formats/gguf.h"
#include "kernels/cpu.h"
#include "kernels/parallel.h"
#include "model/model.h"
#include "model/quant_mix.h"
#include "model/random_model.h"
#include "model/transformer.h"

using namespace jf;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// --interleave: every round runs each M once, so a ratio pairs forwards measured moments apart.
int run_interleaved(ForwardPass& tf, KvCache& cache, SequenceInput& in, Rng& rng, const ModelConfig& c,
                    const std::vector<int>& ms, int reps, int context) {
  std::vector<std::vector<int32_t>> batches;
  for (int M : ms) {
    batches.emplace_back(M);
    for (auto& x : batches.back()) x = static_cast<int32_t>(rng.below(c.vocab_size));
  }
  auto forward_seconds = [&](size_t i) {
    in.set_causal(&cache, batches[i], SequenceInput::Logits::All);
    const double s = now_seconds();
    tf.forward(in);
    const double e = now_seconds() - s;
    cache.truncate(context);
    return e;
  };
  for (const double until = now_seconds() + 0.1; now_seconds() < until;)  // warm caches and clocks
    for (size_t i = 0; i < ms.size(); i++) forward_seconds(i);
  std::vector<std::vector<double>> times(ms.size()), ratios(ms.size());
  for (int r = 0; r < reps; r++) {
    std::vector<double> round(ms.size());
    for (size_t i = 0; i < ms.size(); i++) round[i] = forward_seconds(i);
    for (size_t i = 0; i < ms.size(); i++) {
      times[i].push_back(round[i]);
      ratios[i].push_back(round[i] / round[0]);
    }
  }
  std::printf("\n%d rounds, each M once per round\n\n", reps);
  std::printf("| M | median ms/forward | fastest ms | median of per-round time(M)/time(%d) | tokens/s at the median |\n",
              ms.front());
  std::printf("|---|---|---|---|---|\n");
  for (size_t i = 0; i < ms.size(); i++) {
    const double t = median(times[i]);
    std::printf("| %d | %.3f | %.3f | %.2f | %.0f |\n", ms[i], t * 1e3,
                *std::min_element(times[i].begin(), times[i].end()) * 1e3, median(ratios[i]), ms[i] / t);
  }
  return 0;
}

// One forward of a `tokens`-token prompt from an empty cache, the last row's logits (what a prompt costs).
void time_prefill(ForwardPass& fp, KvCache& cache, Rng& rng, const ModelConfig& c, int tokens, int reps) {
  std::vector<int32_t> prompt(tokens);
  for (auto& x : prompt) x = static_cast<int32_t>(rng.below(c.vocab_size));
  SequenceInput in;
  std::vector<double> host, device;
  for (int r = 0; r <= reps; r++) {  // the first is a warm-up
    cache.truncate(0);
    in.set_causal(&cache, prompt, SequenceInput::Logits::Last);
    const double s = now_seconds();
    fp.forward(in);
    if (r > 0) host.push_back(now_seconds() - s), device.push_back(fp.last_device_seconds());
  }
  std::printf("\nprefill of %d tokens: %.3f ms (device %.3f ms), %.0f tokens/s\n", tokens, median(host) * 1e3,
              median(device) * 1e3, tokens / median(host));
  const std::string table = fp.take_profile();
  if (!table.empty()) std::printf("\ndevice time by kernel, the prompt:\n\n%s", table.c_str());
}

int run(int argc, char** argv) {
  CLI::App app{"Per-forward cost vs number of tokens M"};
  std::string preset = "llama-1b", type = "f16", file;
  std::vector<int> ms = {1, 2, 4, 8, 16, 32, 64};
  int threads = 2, reps = 5, context = 128;
  double bw_gbs = 30.0, peak_gflops = 200.0;
  app.add_option("--preset", preset, "Random model shape: tiny, llama-1b, llama-8b, qwen2-0.5b")
      ->check(CLI::IsMember({"tiny", "llama-1b", "llama-8b", "qwen2-0.5b"}));
  app.add_option("--type", type, "Weight type for the random model: f32, f16, bf16, q8_0, q4_0, ..., q4_k_m (see jf random)");
  app.add_option("-m,--model", file, "Measure this GGUF file instead of a random model");
  app.add_option("-t,--threads", threads, "Threads")->check(CLI::Range(1, 256));
  app.add_option("--ms", ms, "Comma-separated token counts")->delimiter(',')->check(CLI::Range(1, 1 << 16));
  app.add_option("--reps", reps, "Repetitions per M (median reported)")->check(CLI::Range(1, 100000));
  app.add_option("--context", context, "Tokens already in the KV cache")->check(CLI::Range(0, 1 << 20));
  app.add_option("--bandwidth", bw_gbs, "Memory bandwidth for the bound, GB/s")->check(CLI::PositiveNumber);
  app.add_option("--peak", peak_gflops, "Peak compute for the roofline, GFLOP/s")->check(CLI::PositiveNumber);
  bool compare = false;
  app.add_flag("--compare-row-major", compare,
               "Also time the row-major kernels (no panel copies), alternating with the default ones");
  int prefill = 0;
  app.add_option("--prefill", prefill,
                 "Also time a prompt's forward: this many tokens from an empty cache, the last row's logits only")
      ->check(CLI::Range(0, 1 << 16));
  std::string device = "cpu";
  app.add_option("--device", device, "Device: cpu, vulkan, vulkan:N or auto (see jf devices)");
  std::string kv = "f32";
  app.add_option("--kv-type", kv, "KV cache type: f32 or f16")->check(CLI::IsMember({"f32", "f16"}));
  std::string schedule = "auto";
  app.add_option("--schedule", schedule,
                 "How a small model uses the threads: auto (time each way, keep the fastest), serial, rows, matrices")
      ->check(CLI::IsMember({"auto", "serial", "rows", "matrices"}));
  bool interleave = false;
  app.add_flag("--interleave", interleave,
               "Run the Ms in turn, one forward each per round, and report each M's median and the median over "
               "rounds of time(M) / time(first M) in the same round (a ratio that neighbours' load on a shared "
               "machine moves less)");
  CLI11_PARSE(app, argc, argv);
  if (compare && device != "cpu") {
    std::fprintf(stderr, "error: --compare-row-major times the CPU's kernels; it needs --device cpu\n");
    return 2;
  }
  if (interleave && compare) {
    std::fprintf(stderr, "error: --interleave and --compare-row-major cannot be combined\n");
    return 2;
  }
  set_num_threads(threads);
  set_multirow_schedule(schedule == "rows"       ? MultiRowSchedule::SplitRows
                        : schedule == "matrices" ? MultiRowSchedule::SplitMatrices
                        : schedule == "serial"   ? MultiRowSchedule::Serial
                                                 : MultiRowSchedule::Auto);

  std::unique_ptr<Model> model;
  std::shared_ptr<const GgufFile> gguf;
  double t0 = now_seconds();
  if (!file.empty()) {
    gguf = std::shared_ptr<const GgufFile>(GgufFile::open(file));
    model = model_from_gguf(gguf);
  } else {
    WeightScheme scheme;
    if (!weight_scheme_from_name(type, &scheme)) {
      std::fprintf(stderr, "bad --type (expected %s)\n", weight_scheme_names());
      return 2;
    }
    const ModelConfig cfg = preset_config(preset);
    model = std::make_unique<Model>(cfg, random_tensors(cfg, scheme, 1), "memory");
  }
  const ModelConfig& c = model->config();
  // Bytes and FLOPs one forward streams: every matrix except the embedding table (rows are looked up).
  double bytes = 0, params = 0;
  for (const auto& [name, t] : model->tensors().tensors) {
    if (t.dims.size() != 2 || name == "token_embd.weight") continue;
    bytes += t.nbytes();
    params += t.n_elements();
  }
  if (c.tied_output) bytes += model->weights().output.row_bytes() * c.vocab_size, params += double(c.vocab_size) * c.dim;
  std::unique_ptr<ForwardPass> pass = make_forward_pass(*model, device);
  const bool on_cpu = pass->device_name() == "cpu";
  std::printf("model: %s (%s), %s, %d threads, setup %.1f s\n", c.summary().c_str(),
              file.empty() ? (preset + " " + type).c_str() : file.c_str(),
              on_cpu ? (isa_name(active_isa()) + " kernels").c_str() : pass->device_name().c_str(), threads,
              now_seconds() - t0);
  std::printf("streamed weights %.3f GB -> bandwidth bound %.1f ms at %.0f GB/s; %.2f GFLOP per token\n", bytes / 1e9,
              bytes / (bw_gbs * 1e9) * 1e3, bw_gbs, 2 * params / 1e9);

  // The row-major variant: the same weights without their panel copies (it points into model->weights()).
  const ModelWeights& w = model->weights();
  ModelWeights row_major;
  row_major.tok_embd = w.tok_embd, row_major.output_norm = w.output_norm, row_major.output = w.output;
  row_major.layers = w.layers;
  for (LayerWeights& L : row_major.layers)
    for (WeightMatrix* m : L.matrices()) m->packed = nullptr;
  row_major.output.packed = nullptr;
  ForwardPass& tf = *pass;
  std::unique_ptr<Transformer> tf_rm_owner = compare ? std::make_unique<Transformer>(c, row_major) : nullptr;
  KvCache cache = tf.make_cache(std::max(prefill, context + *std::max_element(ms.begin(), ms.end())),
                                kv == "f16" ? DType::F16 : DType::F32);
  Rng rng(7);
  SequenceInput in;
  std::vector<int32_t> toks(context);
  for (auto& x : toks) x = static_cast<int32_t>(rng.below(c.vocab_size));
  in.set_causal(&cache, toks, SequenceInput::Logits::None);
  tf.forward(in);

  if (interleave) return run_interleaved(tf, cache, in, rng, c, ms, reps, context);
  // On a GPU the device's own time (timestamps) beside the host's: their difference is launch and host work.
  std::printf("\n| M | ms/forward | time(M)/time(1) | roofline ms | time/roofline | tokens/s (M x forwards/s) |%s\n",
              compare ? " row-major ms | row-major / default |" : on_cpu ? "" : " device ms | device time(M)/time(1) |");
  std::printf("|---|---|---|---|---|---|%s\n", compare || !on_cpu ? "---|---|" : "");
  double d1 = 0;
  double t1 = 0;
  tf.take_profile();  // (the start-up forwards' profile dropped)
  std::vector<std::pair<int, std::string>> profiles;
  for (int M : ms) {
    std::vector<int32_t> batch(M);
    for (auto& x : batch) x = static_cast<int32_t>(rng.below(c.vocab_size));
    std::vector<double> times, times_rm, device_times;
    auto run = [&](int variant) {
      in.set_causal(&cache, batch, SequenceInput::Logits::All);
      const double s = now_seconds();
      (variant == 0 ? tf : static_cast<ForwardPass&>(*tf_rm_owner)).forward(in);
      const double e = now_seconds() - s;
      if (variant == 0) device_times.push_back(tf.last_device_seconds());
      cache.truncate(context);
      return e;
    };
    // Warm caches (and the core's clock) for at least 0.1 s: a single warm-up forward of a small model
    // left the first M measured ~1.5x slow.
    for (const double until = now_seconds() + 0.1; now_seconds() < until;)
      for (int variant = 0; variant < (compare ? 2 : 1); variant++) run(variant);
    for (int r = 0; r < reps; r++)
      for (int variant = 0; variant < (compare ? 2 : 1); variant++)  // alternate: same machine conditions
        (variant == 0 ? times : times_rm).push_back(run(variant));
    const double t = median(times);
    if (M == ms.front()) t1 = t;
    double roof = std::max(bytes / (bw_gbs * 1e9), 2 * params * M / (peak_gflops * 1e9));
    std::printf("| %d | %.3f | %.2f | %.3f | %.2f | %.0f |", M, t * 1e3, t / t1, roof * 1e3, t / roof, M / t);
    if (compare) {
      const double trm = median(times_rm);
      std::printf(" %.3f | %.2f |", trm * 1e3, trm / t);
    } else if (!on_cpu) {
      const double d = median(device_times);
      if (M == ms.front()) d1 = d;
      std::printf(" %.3f | %.2f |", d * 1e3, d / d1);
    }
    std::printf("\n");
    profiles.emplace_back(M, tf.take_profile());  // (JF_VULKAN_PROFILE=1: where the device time went)
    std::fflush(stdout);  // each row kept if a time limit stops the run
  }
  for (const auto& [M, table] : profiles)
    if (!table.empty()) std::printf("\ndevice time by kernel, %d row%s a forward:\n\n%s", M, M == 1 ? "" : "s", table.c_str());
  if (prefill > 0) time_prefill(tf, cache, rng, c, prefill, reps);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a bad model file, a context too small for --context + M, ...
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
