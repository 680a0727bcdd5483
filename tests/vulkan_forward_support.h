// What the Vulkan forward-pass tests share: random models without CPU panels, the one-token-per-forward
// reference every batch shape must reproduce bit for bit, and a bit-equality check.
#pragma once
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/random_model.h"
#include "model_helpers.h"

namespace jf::test {

inline std::unique_ptr<Model> make_model(const ModelConfig& cfg, DType type, uint64_t seed) {
  auto m = random_model(cfg, type, seed);
  m->set_panels(false);
  return m;
}

inline std::vector<float> row_of(const ForwardResult& res, int row) { return std::vector<float>(res.logits(row), res.logits(row) + res.vocab_size()); }

// One token per forward, on `fwd`: the reference every other batch shape must reproduce bit for bit.
inline Logits stepwise(ForwardPass& fwd, const std::vector<int32_t>& toks, DType kv = DType::F32) {
  KvCache cache = fwd.make_cache(64, kv);
  Logits out;
  SequenceInput in;
  for (int32_t t : toks) {
    in.set_causal(&cache, std::vector<int32_t>{t}, SequenceInput::Logits::Last);
    out.push_back(row_of(fwd.forward(in), 0));
  }
  return out;
}

inline void expect_bits(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4)) << what << ": not bit-identical";
}

}  // namespace jf::test
