// What the Vulkan forward-pass tests share: random models without CPU panels, the one-token-per-forward
// reference every batch shape must reproduce bit for bit, and a bit-equality check.
#pragma once
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/random_model.h"
#include "model/transformer.h"
#include "model_helpers.h"
#include "vulkan/vulkan_forward.h"

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

// A tiny model with a draft head and layer, its forward on the device and on the CPU.
struct DraftModel {
  static ModelConfig config() {
    ModelConfig c = preset_config("tiny");
    c.draft_head = c.draft_layer = true;
    return c;
  }
  DraftModel(int device, uint64_t seed, vulkan::MatrixMath math = vulkan::MatrixMath::Fma)
      : cfg(config()), m(make_model(cfg, DType::F32, seed)), fwd(device, m->config(), m->weights(), {}, math), cpu(m->config(), m->weights()) {}
  ModelConfig cfg;
  std::unique_ptr<Model> m;
  vulkan::VulkanForward fwd;
  Transformer cpu;
};

}  // namespace jf::test
