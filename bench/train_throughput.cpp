// Training throughput (forward + loss + backward) of a ~7M-parameter model on 512-token sequences, 1 and 2
// threads, best of 5 steps each.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/rng.h"
#include "kernels/parallel.h"
#include "train/layers.h"
#include "train/trainable_model.h"

using namespace jf;

int main() {
  ModelConfig cfg;
  cfg.vocab_size = 4096, cfg.dim = 256, cfg.n_layers = 6, cfg.n_heads = 8, cfg.n_kv_heads = 8, cfg.head_dim = 32;
  cfg.ffn_dim = 768, cfg.context_length = 512, cfg.rope_dim = 32;
  const int T = 512;
  TrainableModel m(cfg);
  m.init_random(1);
  Rng rng(2);
  std::vector<int32_t> toks(T);
  for (auto& t : toks) t = static_cast<int32_t>(rng.below(cfg.vocab_size));
  const TrainSequence s = TrainSequence::causal(toks);
  std::vector<int32_t> targets(s.tokens.begin() + 1, s.tokens.end());
  targets.push_back(-1);
  std::vector<float> d(static_cast<size_t>(T) * cfg.vocab_size);
  std::printf("model: %.2fM parameters, T = %d\n", m.n_params() / 1e6, T);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    double best = 1e30, fwd_best = 1e30;
    for (int step = 0; step <= 5; step++) {  // step 0 warms up
      auto t0 = std::chrono::steady_clock::now();
      const float* l = m.forward(s);
      auto t1 = std::chrono::steady_clock::now();
      cross_entropy_mean(l, T, cfg.vocab_size, targets.data(), d.data());
      m.zero_grad();
      m.backward(d.data());
      auto t2 = std::chrono::steady_clock::now();
      if (step == 0) continue;
      best = std::min(best, std::chrono::duration<double>(t2 - t0).count());
      fwd_best = std::min(fwd_best, std::chrono::duration<double>(t1 - t0).count());
    }
    std::printf("threads %d: forward+backward %.0f tokens/s (%.1f ms/step, forward %.1f ms)\n", threads, T / best,
                best * 1e3, fwd_best * 1e3);
  }
  return 0;
}
