// Training throughput (forward + loss + backward) on 512-token sequences, best of 5 steps: the default
// model's shape (7.2M parameters) and the larger base's (29.4M), 1 and 2 threads, with the linear layers'
// products in fp32 and in bfloat16 (jf train --matmul bf16), timed one after the other in one run.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/rng.h"
#include "kernels/parallel.h"
#include "train/gemm.h"
#include "train/layers.h"
#include "train/trainable_model.h"

using namespace jf;

namespace {

ModelConfig shape(int dim, int layers, int heads, int kv_heads, int ffn) {
  ModelConfig cfg;
  cfg.vocab_size = 4096, cfg.dim = dim, cfg.n_layers = layers, cfg.n_heads = heads, cfg.n_kv_heads = kv_heads;
  cfg.head_dim = dim / heads, cfg.ffn_dim = ffn, cfg.context_length = 512, cfg.rope_dim = dim / heads;
  return cfg;
}

// Seconds of the fastest of 5 steps (after one warm-up step) and of its forward.
std::pair<double, double> best_step(TrainableModel& m, const TrainSequence& s, const std::vector<int32_t>& targets) {
  const int T = static_cast<int>(s.tokens.size()), V = m.config().vocab_size;
  std::vector<float> d(static_cast<size_t>(T) * V);
  double best = 1e30, fwd_best = 1e30;
  for (int step = 0; step <= 5; step++) {
    auto t0 = std::chrono::steady_clock::now();
    const float* l = m.forward(s);
    auto t1 = std::chrono::steady_clock::now();
    cross_entropy_mean(l, T, V, targets.data(), d.data());
    m.zero_grad();
    m.backward(d.data());
    auto t2 = std::chrono::steady_clock::now();
    if (step == 0) continue;
    best = std::min(best, std::chrono::duration<double>(t2 - t0).count());
    fwd_best = std::min(fwd_best, std::chrono::duration<double>(t1 - t0).count());
  }
  return {best, fwd_best};
}

}  // namespace

int main() {
  const int T = 512;
  std::printf("bf16 products: %s\n", gemm_bf16_native() ? "AVX512-BF16" : "emulated (no AVX512-BF16 in this build)");
  for (const ModelConfig& cfg : {shape(256, 6, 8, 8, 768), shape(512, 8, 8, 4, 1536)}) {
    TrainableModel m(cfg);
    m.init_random(1);
    Rng rng(2);
    std::vector<int32_t> toks(T);
    for (auto& t : toks) t = static_cast<int32_t>(rng.below(cfg.vocab_size));
    const TrainSequence s = TrainSequence::causal(toks);
    std::vector<int32_t> targets(s.tokens.begin() + 1, s.tokens.end());
    targets.push_back(-1);
    std::printf("model: %.2fM parameters (dim %d, %d layers), T = %d\n", m.n_params() / 1e6, cfg.dim, cfg.n_layers, T);
    for (int threads : {1, 2}) {
      set_num_threads(threads);
      set_linear_precision(LinearPrecision::F32);
      const auto [f32, f32_fwd] = best_step(m, s, targets);
      set_linear_precision(LinearPrecision::Bf16);
      const auto [bf16, bf16_fwd] = best_step(m, s, targets);
      std::printf("  threads %d: f32 %.0f tokens/s (%.1f ms/step, forward %.1f)  bf16 %.0f tokens/s (%.1f ms/step, "
                  "forward %.1f)  bf16/f32 x%.2f\n",
                  threads, T / f32, f32 * 1e3, f32_fwd * 1e3, T / bf16, bf16 * 1e3, bf16_fwd * 1e3, f32 / bf16);
    }
  }
  return 0;
}
