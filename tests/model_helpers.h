// Helpers shared by the model-level tests: random token sequences and the one-token-per-forward reference.
#pragma once
#include <algorithm>
#include <vector>

#include "base/rng.h"
#include "model/model.h"
#include "model/transformer.h"
#include "wrapped_forward.h"

namespace jf::test {

using Logits = std::vector<std::vector<float>>;

inline std::vector<int32_t> random_tokens(int n, int vocab, uint64_t seed) {
  Rng r(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(r.below(static_cast<uint32_t>(vocab)));
  return t;
}

// The draft logits of logit rows first .. first + rows - 1 of a forward's result, each asked for on its own as
// ForwardResult::draft_logits requires (a backend may compute a row when asked).
inline std::vector<float> draft_rows(const ForwardResult& res, int rows, int first = 0) {
  const size_t V = static_cast<size_t>(res.vocab_size());
  std::vector<float> out;
  for (int r = first; r < first + rows; r++) {
    const float* d = res.draft_logits(r);
    if (!d) return {};
    out.insert(out.end(), d, d + V);
  }
  return out;
}

// One token per forward: the reference every batched computation must reproduce exactly.
inline Logits stepwise(const Model& m, const std::vector<int32_t>& toks) {
  Transformer tf(m.config(), m.weights());
  KvCache cache(m.config(), 256);
  Logits out;
  SequenceInput in;
  for (int32_t t : toks) {
    in.set_causal(&cache, std::vector<int32_t>{t}, SequenceInput::Logits::Last);
    const float* l = tf.forward(in).logits(0);
    out.emplace_back(l, l + m.config().vocab_size);
  }
  return out;
}

// All logit rows of a forward's result, one after another.
inline std::vector<float> all_logits(const ForwardResult& res) {
  std::vector<float> out;
  for (int r = 0; r < res.rows(); r++) out.insert(out.end(), res.logits(r), res.logits(r) + res.vocab_size());
  return out;
}

// A forward pass that counts its calls and the sequences they carried, around the real one.
class CountingForward : public WrappedForward {
 public:
  explicit CountingForward(const Model& m) : WrappedForward(tf_), tf_(m.config(), m.weights()) {}
  int forwards = 0, most_sequences = 0;

 protected:
  void run(std::span<SequenceInput* const> seqs) override {
    forwards++;
    most_sequences = std::max(most_sequences, static_cast<int>(seqs.size()));
    WrappedForward::run(seqs);
  }

 private:
  Transformer tf_;
};

}  // namespace jf::test
