// Attention of one GQA group over a long cached context, alone: microseconds per call of attend_group for a
// few head shapes, with each of `--layers` calls reading its own keys and values (as the layers of a forward
// do, so they are not all cache-resident).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "base/rng.h"
#include "base/timer.h"
#include "kernels/cpu.h"
#include "kernels/dtype.h"
#include "kernels/ops.h"

using namespace jf;

int main(int argc, char** argv) {
  CLI::App app{"Attention kernel time per GQA group call"};
  int64_t n = 2048;
  int layers = 24, reps = 20;
  app.add_option("-n,--context", n, "Visible cache slots per call")->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  app.add_option("--layers", layers, "Separate key/value caches cycled through")->check(CLI::Range(1, 256));
  app.add_option("--reps", reps, "Repetitions (the fastest is reported)")->check(CLI::Range(1, 100000));
  std::string kv = "f32";
  app.add_option("--kv-type", kv, "Element type of the keys and values: f32 or f16")->check(CLI::IsMember({"f32", "f16"}));
  CLI11_PARSE(app, argc, argv);
  struct Shape {
    const char* model;
    int head_dim, heads;  // heads per GQA group
  };
  const Shape shapes[] = {{"qwen2-0.5b", 64, 7},  {"llama-1b", 64, 8},         {"llama-2-7b (MHA)", 128, 1},
                          {"stories260K", 8, 2}, {"gemma3-1b", 256, 4},      {"phi3-mini (MHA)", 96, 1}};
  std::printf("context %lld, %d caches, %s keys and values, %s kernels, fastest of %d\n\n", static_cast<long long>(n),
              layers, kv.c_str(), isa_name(active_isa()).c_str(), reps);
  std::printf("| shape | head_dim | heads per group | us per call | ns per key and head |\n|---|---|---|---|---|\n");
  Rng rng(1);
  for (const Shape& s : shapes) {
    const int64_t stride = s.head_dim;  // one kv head's values, slot after slot (model/kv_cache.h)
    const int64_t key_floats = (n + kKeyBlock - 1) / kKeyBlock * kKeyBlock * s.head_dim;
    std::vector<std::vector<float>> keys(layers, std::vector<float>(key_floats)), values(layers, std::vector<float>(n * stride));
    for (auto& k : keys)
      for (float& x : k) x = rng.normal();
    for (auto& v : values)
      for (float& x : v) x = rng.normal();
    std::vector<std::vector<uint16_t>> keys16, values16;  // the same, as fp16, for --kv-type f16
    if (kv == "f16")
      for (int l = 0; l < layers; l++) {
        keys16.emplace_back(keys[l].size());
        values16.emplace_back(values[l].size());
        for (size_t i = 0; i < keys[l].size(); i++) keys16[l][i] = f32_to_f16(keys[l][i]);
        for (size_t i = 0; i < values[l].size(); i++) values16[l][i] = f32_to_f16(values[l][i]);
      }
    std::vector<float> q(s.heads * s.head_dim), out(s.heads * s.head_dim), scores(attention_scratch(s.heads, n));
    for (float& x : q) x = 0.2f * rng.normal();
    std::vector<int32_t> slots(n);
    for (int64_t i = 0; i < n; i++) slots[i] = static_cast<int32_t>(i);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
      const double t0 = now_seconds();
      for (int l = 0; l < layers; l++)
        if (kv == "f16")
          attend_group(q.data(), s.heads, keys16[l].data(), values16[l].data(), stride, s.head_dim, slots.data(), n,
                       0.125f, scores.data(), out.data());
        else
          attend_group(q.data(), s.heads, keys[l].data(), values[l].data(), stride, s.head_dim, slots.data(), n,
                       0.125f, scores.data(), out.data());
      best = std::min(best, (now_seconds() - t0) / layers);
    }
    std::printf("| %s | %d | %d | %.1f | %.2f |\n", s.model, s.head_dim, s.heads, best * 1e6, best * 1e9 / (n * s.heads));
  }
  return 0;
}
