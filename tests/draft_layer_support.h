// Test helpers for the draft layer (test_draft_head.cpp, test_draft_chain.cpp): a toy packed sequence and a tiny
// model with a draft layer, trainable and as an inference Model.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

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

// Two blocks of 5 (first mismatches 0 and 1) after 3 context tokens: room for chains of 3-4 steps.
inline PackedSequence toy_packed_long(int shift) {
  PackedSequence p;
  p.n = 5;
  p.context_len = 3;
  p.tokens = {1, 2, 3, /*noisy0*/ 9, 9, 9, 9, 9, /*clean0*/ 4, 5, 6, 7, 8, /*noisy1*/ 10, 2, 2, 2, 2,
              /*clean1*/ 10, 11, 12, 13, 14};
  for (auto& t : p.tokens) t = (t * 7 + shift) % 32;
  p.positions = {0, 1, 2};
  for (int k = 0; k < 4; k++)
    for (int t = 0; t < 5; t++) p.positions.push_back(3 + (k / 2) * 5 + t);
  p.first_mismatch = {0, 1};
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

// A packed sequence as the trainer feeds it to the model.
inline TrainSequence train_sequence(const PackedSequence& p) {
  TrainSequence s;
  s.tokens = p.tokens;
  s.positions = p.positions;
  p.build_mask(s.mask);
  return s;
}

// L = sum over `rows` of c . z (z: T x V logits), c normal at random (seed 8) on those rows, zero elsewhere:
// the scalar the gradient tests differentiate; c is also dL/dz.
struct LinearProbe {
  int V;
  std::vector<int32_t> rows;
  std::vector<float> c;
  LinearProbe(size_t T, int vocab, std::vector<int32_t> read) : V(vocab), rows(std::move(read)), c(T * vocab, 0.0f) {
    Rng r(8);
    for (int32_t row : rows)
      for (int v = 0; v < V; v++) c[static_cast<size_t>(row) * V + v] = r.normal();
  }
  double of(const float* z) const {
    double l = 0;
    for (int32_t row : rows)
      for (int v = 0; v < V; v++) l += static_cast<double>(c[static_cast<size_t>(row) * V + v]) * z[static_cast<size_t>(row) * V + v];
    return l;
  }
};

// dL/dw by central differences of loss() (h = 0.01), w restored.
inline double central_difference(float& w, const std::function<double()>& loss) {
  const float keep = w, h = 1e-2f;
  w = keep + h;
  const double up = loss();
  w = keep - h;
  const double down = loss();
  w = keep;
  return (up - down) / (2 * h);
}

// After m.backward_draft_head(probe.c) for the forward that loss() repeats: each draft tensor's gradient at
// the entries `picks` gives for its size against central differences of loss(), and no gradient at all for
// the frozen tensors. *checked counts the entries compared.
inline void expect_draft_gradients(TrainableModel& m, const std::function<double()>& loss,
                                   const std::function<std::vector<int64_t>(int64_t)>& picks, int* checked) {
  *checked = 0;
  for (const auto& prm : m.params()) {
    if (!prm.name.starts_with("draft_")) {
      for (int64_t i = 0; i < prm.size; i++) ASSERT_EQ(prm.grad[i], 0.0f) << prm.name;
      continue;
    }
    float largest = 0;
    for (int64_t i = 0; i < prm.size; i++) largest = std::max(largest, std::fabs(prm.grad[i]));
    for (int64_t k : picks(prm.size)) {
      const double numeric = central_difference(prm.data[k], loss);
      const double scale = std::max({std::fabs(numeric), std::fabs(static_cast<double>(prm.grad[k])), 0.01 * largest});
      EXPECT_LE(std::fabs(numeric - prm.grad[k]), 2e-2 * scale + 1e-3) << prm.name << "[" << k << "]: analytic "
                                                                        << prm.grad[k] << ", numeric " << numeric;
      (*checked)++;
    }
  }
}

}  // namespace jf
