// Test helpers for the draft layer (test_draft_head.cpp, test_draft_chain.cpp): a toy packed sequence and a tiny
// model with a draft layer, trainable and as an inference Model.
#pragma once
#include <algorithm>
#include <memory>

#include "base/rng.h"
#include "model/model.h"
#include "model/random_model.h"
#include "train/packing.h"
#include "train/trainable_model.h"

namespace jf {

// context 3 tokens, n = 3, two blocks; the noisy states differ from the fixed points from index 1 and 2.
inline PackedSequence toy_packed(int shift) {
  PackedSequence p;
  p.n = 3;
  p.context_len = 3;
  p.tokens = {1, 2, 3, /*noisy0*/ 4, 9, 9, /*clean0*/ 4, 5, 6, /*noisy1*/ 7, 8, 9, /*clean1*/ 7, 8, 1};
  for (auto& t : p.tokens) t = (t * 7 + shift) % 32;
  p.positions = {0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8, 6, 7, 8};
  p.first_mismatch = {1, 2};
  p.mask = MaskKind::CleanContext;
  return p;
}

// A tiny model with a draft layer, as a trainable model and as an inference Model in F32. The layer starts as
// `jf train --draft-layer` starts it (the identity), or with every draft tensor moved at random.
struct DraftLayerModel {
  TrainableModel trainable;
  std::unique_ptr<Model> model;
};

inline DraftLayerModel draft_layer_model(bool random_layer, float token_scale = 1.0f) {
  ModelConfig cfg = preset_config("tiny");
  cfg.vocab_size = 32;
  TrainableModel base(cfg);
  base.init_random(4);
  TrainableModel m = TrainableModel::from_tensors(base.config(), base.to_tensor_set(DType::F32), true, true);
  for (const auto& prm : m.params())
    if (prm.name == "draft_token_scale.weight") std::fill_n(prm.data, prm.size, token_scale);
  if (random_layer) {
    Rng r(6);
    for (const auto& prm : m.params())
      if (prm.name.starts_with("draft_"))
        for (int64_t i = 0; i < prm.size; i++) prm.data[i] += 0.1f * r.normal();
  }
  const ModelConfig c = m.config();
  auto model = std::make_unique<Model>(c, m.to_tensor_set(DType::F32), "memory");
  return DraftLayerModel{std::move(m), std::move(model)};
}

}  // namespace jf
