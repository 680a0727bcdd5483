// Objectives (gradients against finite differences, the teacher detached), and the training loop: the loss
// falls, and a run interrupted and resumed from its checkpoint ends with bit-identical weights.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/error.h"
#include "base/rng.h"
#include "model/random_model.h"
#include "train/layers.h"
#include "train/objectives.h"
#include "train/quality.h"
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
  for (int variant = 0; variant < 3; variant++) {
    const Objective obj = variant == 1 ? Objective::Cllm : Objective::JacobiForcing;
    ObjectiveOptions o;
    if (variant == 2) o.consistency_norm = ConsistencyNorm::PerBlock;
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

// Reference: every kept position weighs 1 / (kept positions x blocks); per-block: 1 / (block's positions x
// counted blocks). toy_packed keeps 2 positions in block 0 and 1 in block 1.
TEST(Objectives, ConsistencyNormalisations) {
  const int V = 10;
  const PackedSequence p = toy_packed();
  std::vector<float> logits(p.tokens.size() * V), d(logits.size()), scratch(V), teacher(V);
  Rng rng(4);
  for (auto& x : logits) x = 2.0f * rng.normal();
  double kl[3];
  const int rows[3][2] = {{4, 7}, {5, 8}, {11, 14}};  // (noisy row, clean row) of each kept position
  for (int i = 0; i < 3; i++) {
    const float* c = logits.data() + rows[i][1] * V;
    float mx = *std::max_element(c, c + V), sum = 0;
    for (int v = 0; v < V; v++) sum += (teacher[v] = std::exp(c[v] - mx));
    for (int v = 0; v < V; v++) teacher[v] /= sum;
    float k = 0;
    soft_cross_entropy(logits.data() + rows[i][0] * V, teacher.data(), V, 1.0f, scratch.data(), &k);
    kl[i] = k;
  }
  ObjectiveOptions o;
  EXPECT_EQ(o.consistency_norm, ConsistencyNorm::Reference);
  LossReport ref = packed_loss(Objective::JacobiForcing, p, logits.data(), V, o, d.data());
  EXPECT_NEAR(ref.consistency, (kl[0] + kl[1] + kl[2]) / (3.0 * 2.0), 1e-5);
  o.consistency_norm = ConsistencyNorm::PerBlock;
  LossReport per = packed_loss(Objective::JacobiForcing, p, logits.data(), V, o, d.data());
  EXPECT_NEAR(per.consistency, (kl[0] + kl[1]) / 4.0 + kl[2] / 2.0, 1e-5);
  EXPECT_NEAR(per.ar, ref.ar, 1e-9);  // the AR term does not depend on the normalisation
}

// Consistency limited to the first K rows after each first mismatch, or decayed by offset: rows past K get no
// gradient, the kept ones are renormalised, and the per-offset report still covers every noisy row.
TEST(Objectives, ConsistencyRowsAndDecayByOffset) {
  const int V = 10;
  PackedSequence p = toy_packed();
  p.first_mismatch = {0, 1};  // block 0: offsets 0, 1, 2 at rows 3, 4, 5; block 1: offsets 0, 1 at rows 10, 11
  std::vector<float> logits(p.tokens.size() * V), d(logits.size()), d_all(logits.size());
  Rng rng(5);
  for (auto& x : logits) x = 2.0f * rng.normal();
  auto row_norm = [&](const std::vector<float>& g, int row) {
    double s = 0;
    for (int v = 0; v < V; v++) s += std::fabs(g[row * V + v]);
    return s;
  };
  const LossReport all = packed_loss(Objective::JacobiForcing, p, logits.data(), V, ObjectiveOptions{}, d_all.data());
  EXPECT_EQ(all.consistency_positions, 5);
  ObjectiveOptions k1;
  k1.consistency_rows = 1;
  const LossReport first = packed_loss(Objective::JacobiForcing, p, logits.data(), V, k1, d.data());
  EXPECT_EQ(first.consistency_positions, 2);
  for (int row : {4, 5, 11}) EXPECT_EQ(row_norm(d, row), 0.0) << row;  // offsets >= 1: not trained
  for (int row : {3, 10}) {
    EXPECT_GT(row_norm(d, row), 0.0) << row;
    EXPECT_NEAR(row_norm(d, row), row_norm(d_all, row) * 5.0 / 2.0, 1e-5) << row;  // 1/(2 x blocks) vs 1/(5 x blocks)
  }
  // Every noisy row is reported by offset either way: 2 at offset 0, 2 at 1, 1 at 2.
  for (const LossReport* r : {&all, &first}) {
    EXPECT_EQ(r->by_offset.rows[0], 2);
    EXPECT_EQ(r->by_offset.rows[1], 2);
    EXPECT_EQ(r->by_offset.rows[2], 1);
    EXPECT_EQ(r->by_offset.rows[3] + r->by_offset.rows[4], 0);
    EXPECT_NEAR(r->by_offset.kl[0], all.by_offset.kl[0], 1e-6);
  }
  ObjectiveOptions decay;
  decay.consistency_decay = 0.5f;
  packed_loss(Objective::JacobiForcing, p, logits.data(), V, decay, d.data());
  // Row gradients scale as 0.5^offset relative to the undecayed ones, up to the common normaliser.
  const double scale = row_norm(d, 3) / row_norm(d_all, 3);
  EXPECT_NEAR(row_norm(d, 4) / row_norm(d_all, 4), scale * 0.5, 1e-5);
  EXPECT_NEAR(row_norm(d, 5) / row_norm(d_all, 5), scale * 0.25, 1e-5);
  EXPECT_NEAR(row_norm(d, 11) / row_norm(d_all, 11), scale * 0.5, 1e-5);

  // Top-1 match: a noisy row whose logits equal its clean row's matches; the report's summary says so.
  std::vector<float> same = logits;
  for (int t = 0; t < 3; t++) std::copy_n(&logits[(6 + t) * V], V, &same[(3 + t) * V]);
  const LossReport m = packed_loss(Objective::JacobiForcing, p, same.data(), V, ObjectiveOptions{}, d.data());
  EXPECT_EQ(m.by_offset.match[2], 1);
  EXPECT_NEAR(m.by_offset.kl[2], 0.0, 1e-6);
  EXPECT_NE(m.by_offset.summary().find("top-1 "), std::string::npos);
}

// EOS trained: the clean row before EOS predicts it; rows at and after EOS carry no loss.
TEST(Objectives, EosIsInTheArLossAndPaddingIsNot) {
  PackedSequence p = toy_packed();
  p.eos = 1;  // clean1 = {7, 8, 1}: 8 is EOS, 1 padding
  EXPECT_EQ(clean_stream_targets(p), (std::vector<int32_t>{2, 3, 4, -1, -1, -1, 5, 6, 7, -1, -1, -1, 8, -1, -1}));
  const int V = 10;
  std::vector<float> logits(p.tokens.size() * V), d(logits.size());
  Rng rng(6);
  for (auto& x : logits) x = rng.normal();
  LossReport r = packed_loss(Objective::JacobiForcing, p, logits.data(), V, ObjectiveOptions{}, d.data());
  EXPECT_EQ(r.ar_tokens, 7);
  EXPECT_EQ(r.consistency_positions, 2);  // block 1's first mismatch (2) is past its EOS row
  for (int row : {13, 14, 9, 10, 11})
    for (int v = 0; v < V; v++) EXPECT_EQ(d[row * V + v], 0.0f) << row;
  p.first_mismatch = {1, 0};  // noisy1 rows 0 .. EOS-1 are trained, the EOS row is not
  r = packed_loss(Objective::JacobiForcing, p, logits.data(), V, ObjectiveOptions{}, d.data());
  EXPECT_EQ(r.consistency_positions, 2 + 1);
}

// A frozen teacher equal to the model: the AR target is the model's own distribution, so the clean rows get
// no gradient and the teacher KL is 0. Against another teacher the gradient matches finite differences.
TEST(Objectives, TeacherSoftTargets) {
  const int V = 10;
  const PackedSequence p = toy_packed();
  std::vector<float> logits(p.tokens.size() * V), teacher(logits.size()), d(logits.size());
  Rng rng(8);
  for (auto& x : logits) x = 2.0f * rng.normal();
  ObjectiveOptions o;
  LossReport r = packed_loss(Objective::JacobiForcing, p, logits.data(), V, o, d.data(), logits.data());
  EXPECT_NEAR(r.teacher_kl, 0.0, 1e-6);
  for (int row : {0, 1, 2, 6, 7, 8, 12, 13})
    for (int v = 0; v < V; v++) EXPECT_NEAR(d[row * V + v], 0.0f, 1e-6) << row;
  o.teacher_consistency = true;  // the teacher's clean rows equal the student's: the same consistency
  const double plain = packed_loss(Objective::JacobiForcing, p, logits.data(), V, ObjectiveOptions{}, d.data()).consistency;
  EXPECT_NEAR(packed_loss(Objective::JacobiForcing, p, logits.data(), V, o, d.data(), logits.data()).consistency, plain, 1e-9);

  for (auto& x : teacher) x = 2.0f * rng.normal();
  o = ObjectiveOptions{};
  o.teacher_mix = 0.5f;
  r = packed_loss(Objective::JacobiForcing, p, logits.data(), V, o, d.data(), teacher.data());
  EXPECT_GT(r.teacher_kl, 0.0);
  auto ar = [&](const std::vector<float>& l) {
    std::vector<float> dd(l.size());
    return packed_loss(Objective::JacobiForcing, p, l.data(), V, o, dd.data(), teacher.data()).ar * o.ar_weight;
  };
  const double eps = 1e-2;
  for (int row : {0, 2, 7, 12})
    for (int v = 0; v < V; v++) {
      std::vector<float> a = logits, b = logits;
      a[row * V + v] += eps, b[row * V + v] -= eps;
      const double numeric = (ar(a) - ar(b)) / (2 * eps);
      EXPECT_NEAR(d[row * V + v], numeric, 2e-3 + 1e-2 * std::fabs(numeric)) << row << " " << v;
    }
}

TEST(Optimizer, AnchorDecayPullsTowardTheBase) {
  AdamWOptions ao;
  ao.anchor_decay = 0.5f;
  std::vector<int64_t> sizes = {3};
  AdamW adam(sizes, ao);
  std::vector<float> p = {1.0f, -2.0f, 0.5f}, g = {0, 0, 0};
  adam.set_anchor({{0.0f, 0.0f, 0.5f}});
  float* pp = p.data();
  float* gp = g.data();
  adam.step(std::span<float* const>(&pp, 1), std::span<float* const>(&gp, 1), {}, 0.1f);
  // Zero gradient: only the pull, p -= lr * d * (p - p0).
  EXPECT_FLOAT_EQ(p[0], 1.0f - 0.1f * 0.5f * 1.0f);
  EXPECT_FLOAT_EQ(p[1], -2.0f - 0.1f * 0.5f * -2.0f);
  EXPECT_EQ(p[2], 0.5f);
  AdamW no_anchor(sizes, ao);
  EXPECT_ANY_THROW(no_anchor.step(std::span<float* const>(&pp, 1), std::span<float* const>(&gp, 1), {}, 0.1f));
}

TEST(Quality, MergeEndsAreExactAndMeasuresOfIdenticalModels) {
  std::vector<float> b = {1e8f, 0.1f, -3.0f}, t = {1.0f, 0.3f, 5.0f}, out(3);
  merge_weights(b.data(), t.data(), 3, 0.0f, out.data());
  EXPECT_EQ(out, b);
  merge_weights(b.data(), t.data(), 3, 1.0f, out.data());
  EXPECT_EQ(out, t);
  merge_weights(b.data(), t.data(), 3, 0.5f, out.data());
  EXPECT_FLOAT_EQ(out[2], 1.0f);
  std::vector<float> l = {0.1f, 2.0f, -1.0f, 0.5f}, m = {3.0f, 0.0f, 0.0f, 0.0f};
  TokenComparison c;
  compare_row(l.data(), l.data(), 4, 1, c);
  EXPECT_EQ(c.agreement(), 1.0);
  EXPECT_EQ(c.mean_kl(), 0.0);
  EXPECT_EQ(c.mean_nll_base(), c.mean_nll_model());
  compare_row(l.data(), m.data(), 4, -1, c);
  EXPECT_EQ(c.agreement(), 0.5);
  EXPECT_GT(c.mean_kl(), 0.0);
  EXPECT_EQ(c.scored, 1);
  int64_t rep = 0, tot = 0;
  std::vector<int32_t> text = {1, 2, 3, 4, 1, 2, 3, 4};
  count_repeated_4grams(text, &rep, &tot);
  EXPECT_EQ(tot, 5);
  EXPECT_EQ(rep, 1);
  // A loop: some 8-gram twice within the first 64 tokens (only there).
  std::vector<int32_t> varied(100);
  for (int i = 0; i < 100; i++) varied[i] = i;
  EXPECT_FALSE(loops_within(varied));
  std::vector<int32_t> late = varied;
  for (int i = 0; i < 8; i++) late[80 + i] = i;  // repeats tokens 0..7, but after token 64
  EXPECT_FALSE(loops_within(late));
  std::vector<int32_t> early = varied;
  for (int i = 0; i < 8; i++) early[50 + i] = 10 + i;  // tokens 10..17 again at 50..57
  EXPECT_TRUE(loops_within(early));
  early[57] = 99;  // a 7-gram repeat is not one
  EXPECT_FALSE(loops_within(early));
  EXPECT_FALSE(loops_within(std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(first_divergence(text, std::vector<int32_t>{1, 2, 9}), 2);
  EXPECT_EQ(first_divergence(text, text), 8);
  EXPECT_EQ(median({3, 1, 2}), 2.0);
  EXPECT_EQ(median({4, 1, 2, 3}), 2.5);
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
    for (int s = 0; s < 3; s++) {  // "real text": sequences unrelated to the packed trajectories
      std::vector<int32_t> t(12);
      for (auto& x : t) x = static_cast<int32_t>(rng.below(32));
      data.text.push_back(t);
    }
  }
};

// Mean KL(teacher || model) per token over the text sequences.
double text_kl(TrainableModel& model, TrainableModel& teacher, const TrainData& data) {
  const int V = model.config().vocab_size;
  double total = 0;
  for (const auto& t : data.text) {
    const TrainSequence s = TrainSequence::causal(t);
    const float* tl = teacher.forward(s);
    std::vector<float> tcopy(tl, tl + t.size() * V), d(tcopy.size());
    total += text_loss(t, model.forward(s), V, 1.0f, d.data(), tcopy.data()).text;
  }
  return total / static_cast<double>(data.text.size());
}

TEST(Objectives, TextTermIsKlToTheTeacherOrCrossEntropy) {
  const int V = 10;
  const std::vector<int32_t> tokens = {1, 4, 2, 8, 5};
  std::vector<float> logits(tokens.size() * V), teacher(logits.size()), d(logits.size());
  Rng rng(3);
  for (auto& x : logits) x = 2.0f * rng.normal();
  LossReport r = text_loss(tokens, logits.data(), V, 3.0f, d.data(), logits.data());  // teacher == model
  EXPECT_NEAR(r.text, 0.0, 1e-6);
  EXPECT_EQ(r.text_tokens, 5);
  for (float g : d) EXPECT_NEAR(g, 0.0f, 1e-7);

  for (auto& x : teacher) x = 2.0f * rng.normal();
  const float w = 3.0f;
  r = text_loss(tokens, logits.data(), V, w, d.data(), teacher.data());
  EXPECT_GT(r.text, 0.0);
  EXPECT_NEAR(r.total, w * r.text, 1e-9);
  auto weighted_kl = [&](const std::vector<float>& l) {
    std::vector<float> dd(l.size());
    return w * text_loss(tokens, l.data(), V, w, dd.data(), teacher.data()).text;
  };
  const double eps = 1e-2;
  for (int row : {0, 2, 4})
    for (int v = 0; v < V; v++) {
      std::vector<float> a = logits, b = logits;
      a[row * V + v] += eps, b[row * V + v] -= eps;
      const double numeric = (weighted_kl(a) - weighted_kl(b)) / (2 * eps);
      EXPECT_NEAR(d[row * V + v], numeric, 2e-3 + 1e-2 * std::fabs(numeric)) << row << " " << v;
    }

  // Without a teacher: w x the next-token cross-entropy, nothing reported as the AR term.
  std::vector<float> dl(logits.size());
  const LossReport lm = lm_loss(tokens, logits.data(), V, dl.data());
  r = text_loss(tokens, logits.data(), V, w, d.data(), nullptr);
  EXPECT_NEAR(r.text, lm.ar, 1e-9);
  EXPECT_EQ(r.ar, 0.0);
  for (size_t i = 0; i < d.size(); i++) EXPECT_NEAR(d[i], w * dl[i], 1e-7);
}

TEST(Trainer, RealTextTermHoldsTheModelToTheTeacherOnText) {
  TinySetup s;
  TrainableModel teacher(s.cfg);
  teacher.init_random(2);
  auto train = [&](int text_accum, float text_weight) {
    auto m = std::make_unique<TrainableModel>(s.cfg);
    m->init_random(2);  // starts as the teacher, as a fine-tune starts from its base
    TrainOptions o;
    o.steps = 30;
    o.accum = 2;
    o.lr = 1e-2f;
    o.loss.teacher_mix = 0.0f;  // the AR target is the packed fixed points alone
    o.text_accum = text_accum;
    o.text_weight = text_weight;
    Trainer t(*m, s.data, o, GgufMetadata{});
    t.set_teacher(&teacher);
    std::vector<double> text_losses;
    t.run([&](const StepReport& r) { text_losses.push_back(r.loss.text); });
    if (text_accum == 0) {
      EXPECT_EQ(text_losses.back(), 0.0);
    }
    return m;
  };
  auto plain = train(0, 1.0f);
  auto held = train(1, 5.0f);
  auto zero = train(2, 0.0f);
  // The packed objective moves the model away from the teacher on unrelated text; the text term holds it.
  const double kl_plain = text_kl(*plain, teacher, s.data), kl_held = text_kl(*held, teacher, s.data);
  EXPECT_GT(kl_plain, 0.01);
  EXPECT_LT(kl_held, 0.5 * kl_plain) << kl_held << " vs " << kl_plain;
  std::printf("text KL to the teacher: %.4f without the text term, %.4f with it\n", kl_plain, kl_held);
  // Weight 0: text micro-batches run but add exact zeros; the packed part is not rescaled.
  for (int64_t i = 0; i < plain->n_params(); i++) ASSERT_EQ(zero->param_data()[i], plain->param_data()[i]) << i;
}

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
  for (int variant = 0; variant < 2; variant++) {  // 1: with a frozen teacher and the anchor decay
    TrainOptions o;
    o.steps = 8;
    o.accum = 2;
    o.lr = 1e-3f;
    o.seed = 9;
    TrainableModel teacher(s.cfg);
    teacher.init_random(2);
    if (variant == 1) o.adam.anchor_decay = 50.0f, o.loss.teacher_mix = 0.5f;  // lr x decay = 0.05 per step
    if (variant == 1) o.text_accum = 2;  // the real-text order resumes too
    TrainableModel* tp = variant == 1 ? &teacher : nullptr;
    TrainableModel straight(s.cfg);
    straight.init_random(2);
    Trainer ts(straight, s.data, o, GgufMetadata{});
    ts.set_teacher(tp);
    ts.run();

    TrainableModel first(s.cfg);
    first.init_random(2);
    TrainOptions part = o;
    part.stop_at = 3;
    part.checkpoint_path = ckpt;
    Trainer t1(first, s.data, part, GgufMetadata{});
    t1.set_teacher(tp);
    t1.run();
    TrainableModel second(s.cfg);  // a fresh process would start from nothing but the checkpoint
    Trainer t2(second, s.data, o, GgufMetadata{});
    t2.set_teacher(tp);
    t2.resume(ckpt);
    EXPECT_EQ(t2.step(), 3);
    t2.run();
    ASSERT_EQ(second.n_params(), straight.n_params());
    for (int64_t i = 0; i < straight.n_params(); i++) ASSERT_EQ(second.param_data()[i], straight.param_data()[i]) << variant << " " << i;
    if (variant == 1) {  // the anchor held the run near the start: closer than without it
      TrainableModel free_run(s.cfg);
      free_run.init_random(2);
      TrainOptions fo = o;
      fo.adam.anchor_decay = 0;
      Trainer tf(free_run, s.data, fo, GgufMetadata{});
      tf.set_teacher(tp);
      tf.run();
      double d_anchor = 0, d_free = 0;
      for (int64_t i = 0; i < straight.n_params(); i++) {
        d_anchor += std::pow(straight.param_data()[i] - teacher.param_data()[i], 2);
        d_free += std::pow(free_run.param_data()[i] - teacher.param_data()[i], 2);
      }
      EXPECT_LT(d_anchor, d_free);
    }
  }
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
  TrainData packed_only = s.data;
  packed_only.text.clear();
  EXPECT_THROW(Trainer(m, packed_only, o, GgufMetadata{}), Error);
  EXPECT_THROW(Trainer(m, TrainData{}, TrainOptions{}, GgufMetadata{}), Error);
  o.objective = Objective::JacobiForcing;
  o.text_accum = 1;
  EXPECT_THROW(Trainer(m, packed_only, o, GgufMetadata{}), Error);  // text micro-batches without text
  o.text_weight = -1;
  EXPECT_THROW(Trainer(m, s.data, o, GgufMetadata{}), Error);
}

}  // namespace
}  // namespace jf
