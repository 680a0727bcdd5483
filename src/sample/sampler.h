// Turning logits into the next token: temperature -> softmax -> top-k -> top-p -> min-p -> draw.
// The processed distribution is also available explicitly, because speculative verifiers need p(x).
#pragma once
#include <cstdint>
#include <vector>

#include "base/rng.h"

namespace jf {

struct SamplingParams {
  float temperature = 0.0f;  // 0: greedy (argmax)
  int top_k = 0;             // 0: off
  float top_p = 1.0f;        // 1: off
  float min_p = 0.0f;        // 0: off
  uint64_t seed = 42;
  bool greedy() const { return temperature <= 0.0f; }
  void validate() const;  // throws jf::Error naming the bad value
};

// A distribution over a subset of the vocabulary: candidate ids with unnormalised weights, in the order
// a draw walks them (vocabulary order, or by decreasing probability once top-k/top-p sorted them).
struct Distribution {
  std::vector<int32_t> ids;
  std::vector<float> weights;
  float total = 0.0f;
  int32_t draw(float coin) const;  // coin in [0, 1)
  void to_dense(int vocab, std::vector<float>& probs) const;  // normalised probabilities, zeros elsewhere
};

// Holds the RNG and scratch space; one per generation (not thread-safe).
class Sampler {
 public:
  Sampler(const SamplingParams& params, int vocab_size);
  const SamplingParams& params() const { return params_; }
  // Next token from one row of logits: argmax when greedy, otherwise a draw from distribution().
  int32_t sample(const float* logits);
  void distribution(const float* logits, Distribution& out);
  float coin() { return rng_.uniform(); }
  Rng& rng() { return rng_; }

 private:
  SamplingParams params_;
  int vocab_;
  Rng rng_;
  Distribution dist_;
  std::vector<float> probs_;
  std::vector<int32_t> order_;
};

}  // namespace jf
