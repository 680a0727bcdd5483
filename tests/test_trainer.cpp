// Objectives (gradients against finite differences, the teacher detached), and the training loop: the loss
// falls, and a run interrupted and resumed from its checkpoint ends with bit-identical weights.
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "base/rng.h"
#include "model/random_model.h"
#include "train/objectives.h"
#include "train/trainer.h"
#include "test_support.h"

namespace jf {
namespace {

// context 3 tokens, n = 3, two blocks; the noisy states differ from the fixed points from index 1 and 2.
PackedSequence toy_packed() {
  PackedSequence p;
  p.n = 3;
  p.context_len = 3;
  p.tokens = {1, 2, 3, /*noisy0*/ 4, 9, 9, /*clean0*/ 4, 5, 6, /*noisy1*/ 7, 8, 9, /*clean1*/ 7, 8, 1};
  p.positions = {0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8, 6, 7, 8};
  p.first_mismatch = {1, 2};
  return p;
}

TEST(Objectives, CleanStreamTargets) {
  const auto t = clean_stream_targets(toy_packed());
  EXPECT_EQ(t, (std::vector<int32_t>{2, 3, 4, -1, -1, -1, 5, 6, 7, -1, -1, -1, 8, 1, -1}));
}

double total_loss(Objective obj, const PackedSequence& p, const std::vector<float>& logits, int V, const ObjectiveOptions& o) {
  std::vector<float> d(logits.size());
  return packed_loss(obj, p, logits.data(), V, o, d.data()).total;
}

TEST(Objectives, GradientsMatchFiniteDifferencesWithTheTeacherDetached) {
  const int V = 10;
  const PackedSequence p = toy_packed();
  std::vector<float> logits(p.tokens.size() * V);
  Rng rng(3);
  for (auto& x : logits) x = 2.0f * rng.normal();
  for (Objective obj : {Objective::JacobiForcing, Objective::Cllm}) {
    ObjectiveOptions o;
    std::vector<float> d(logits.size());
    LossReport rep = packed_loss(obj, p, logits.data(), V, o, d.data());
    EXPECT_EQ(rep.consistency_positions, 2 + 1);
    EXPECT_EQ(rep.ar_tokens, 8);
    ObjectiveOptions ar_only = o;  // for clean rows: the AR term alone (the teacher role is detached)
    const double eps = 1e-2;
    for (size_t row = 0; row < p.tokens.size(); row++) {
      const bool noisy = (row >= 3 && row < 6) || (row >= 9 && row < 12);
      for (int v = 0; v < V; v++) {
        std::vector<float> a = logits, b = logits;
        a[row * V + v] += eps, b[row * V + v] -= eps;
        double numeric;
        if (noisy) {
          numeric = (total_loss(obj, p, a, V, o) - total_loss(obj, p, b, V, o)) / (2 * eps);
        } else {  // only the AR term depends on a clean row as far as gradients go
          std::vector<float> da(a.size()), db(b.size());
          const double la = packed_loss(obj, p, a.data(), V, ar_only, da.data()).ar * o.ar_weight;
          const double lb = packed_loss(obj, p, b.data(), V, ar_only, db.data()).ar * o.ar_weight;
          numeric = (la - lb) / (2 * eps);
        }
        EXPECT_NEAR(d[row * V + v], numeric, 2e-3 + 1e-2 * std::fabs(numeric)) << objective_name(obj) << " row " << row << " v " << v;
      }
    }
  }
}

TEST(Objectives, NoConsistencyLossWhenTheNoisyStateIsTheFixedPoint) {
  PackedSequence p = toy_packed();
  p.first_mismatch = {3, 3};
  std::vector<float> logits(p.tokens.size() * 10, 0.5f), d(logits.size());
  LossReport r = packed_loss(Objective::JacobiForcing, p, logits.data(), 10, ObjectiveOptions{}, d.data());
  EXPECT_EQ(r.consistency_positions, 0);
  EXPECT_EQ(r.consistency, 0.0);
  for (int row : {3, 4, 5, 9, 10, 11})
    for (int v = 0; v < 10; v++) EXPECT_EQ(d[row * 10 + v], 0.0f);
}

struct TinySetup {
  ModelConfig cfg = preset_config("tiny");
  TrainData data;
  TinySetup() {
    cfg.vocab_size = 32;
    Rng rng(5);
    for (int s = 0; s < 6; s++) {
      PackedSequence p = toy_packed();
      for (auto& t : p.tokens) t = static_cast<int32_t>((t * 7 + s) % 32);
      data.packed.push_back(p);
    }
  }
};

TEST(Trainer, LossFalls) {
  TinySetup s;
  TrainableModel m(s.cfg);
  m.init_random(1);
  TrainOptions o;
  o.steps = 40;
  o.accum = 2;
  o.lr = 3e-3f;
  std::vector<double> losses;
  Trainer t(m, s.data, o, GgufMetadata{});
  t.run([&](const StepReport& r) { losses.push_back(r.loss.total); });
  ASSERT_EQ(losses.size(), 40u);
  EXPECT_LT(losses.back(), 0.5 * losses.front());
}

TEST(Trainer, ResumedRunEqualsUninterruptedRun) {
  TinySetup s;
  const std::string ckpt = test::temp_path("trainer.gguf");
  TrainOptions o;
  o.steps = 8;
  o.accum = 2;
  o.lr = 1e-3f;
  o.seed = 9;
  TrainableModel straight(s.cfg);
  straight.init_random(2);
  Trainer(straight, s.data, o, GgufMetadata{}).run();

  TrainableModel first(s.cfg);
  first.init_random(2);
  TrainOptions part = o;
  part.stop_at = 3;
  part.checkpoint_path = ckpt;
  Trainer(first, s.data, part, GgufMetadata{}).run();
  TrainableModel second(s.cfg);  // a fresh process would start from nothing but the checkpoint
  Trainer t2(second, s.data, o, GgufMetadata{});
  t2.resume(ckpt);
  EXPECT_EQ(t2.step(), 3);
  t2.run();
  ASSERT_EQ(second.n_params(), straight.n_params());
  for (int64_t i = 0; i < straight.n_params(); i++) ASSERT_EQ(second.param_data()[i], straight.param_data()[i]) << i;
  std::remove(ckpt.c_str());
}

TEST(Trainer, BadSettingsAreErrors) {
  TinySetup s;
  TrainableModel m(s.cfg);
  TrainOptions o;
  o.accum = 0;
  EXPECT_THROW(Trainer(m, s.data, o, GgufMetadata{}), Error);
  o.accum = 1;
  o.objective = Objective::Ar;  // packed data given
  EXPECT_THROW(Trainer(m, s.data, o, GgufMetadata{}), Error);
  EXPECT_THROW(Trainer(m, TrainData{}, TrainOptions{}, GgufMetadata{}), Error);
}

}  // namespace
}  // namespace jf
