// A draft layer's chain (ForwardResult::chain; `jf train --draft-chain`): the layer run again on a virtual
// row after the last verified one. The inference chain computes what the training chain trains, whatever
// else the forward's batch held; its gradient goes through both passes of the layer into the draft tensors
// alone; training it lowers the chain rows' loss and marks the file.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "draft_layer_support.h"
#include "model/transformer.h"
#include "train/objectives.h"
#include "train/trainer.h"
#include "test_support.h"

namespace jf {
namespace {

constexpr int V = 32;
const std::vector<int32_t> kTokens = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};

// The training chain's logits for a virtual row after row `from` of kTokens (causal), on `token`.
std::vector<float> training_chain(TrainableModel& m, int32_t from, int32_t token) {
  m.forward(TrainSequence::causal(kTokens));
  const DraftChainRow chain{from, token, 0};
  const float* z = m.draft_logits({}, {}, std::span<const DraftChainRow>(&chain, 1));
  return std::vector<float>(z, z + V);  // row 0 took the chain's logits
}

double largest_difference(const float* a, const float* b, int n) {
  double worst = 0;
  for (int i = 0; i < n; i++) worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

TEST(DraftChain, CachedChainComputesTheTrainingChain) {
  DraftLayerModel d = draft_layer_model(true);
  Transformer tf(d.model->config(), d.model->weights());
  for (int32_t from : {2, 6, 11}) {
    const int32_t token = (from * 5 + 1) % V;
    const std::vector<float> want = training_chain(d.trainable, from, token);
    KvCache cache(d.model->config(), 64);
    SequenceInput in;
    in.set_causal(&cache, std::vector<int32_t>(kTokens.begin(), kTokens.begin() + from + 1), SequenceInput::Logits::Last);
    in.draft_logits = true;
    const ForwardResult res = tf.forward(in);
    const std::vector<float> first_pass(res.draft_logits(0), res.draft_logits(0) + V);
    int32_t out = -1;
    ASSERT_EQ(res.chain(0, token, 1, &out), 1);
    EXPECT_EQ(cache.size(), from + 1);  // the virtual row's slot stays free
    EXPECT_LT(largest_difference(tf.last_chain_logits(), want.data(), V), 1e-3) << "after row " << from;
    EXPECT_GT(largest_difference(want.data(), first_pass.data(), V), 0.1);  // the second pass changes something
    EXPECT_EQ(out, static_cast<int32_t>(std::max_element(want.begin(), want.end()) - want.begin()));
  }
}

// Step 2 of the training chain (a third pass of the layer, continuing step 1's row) is what the cached chain
// drafts second, given step 1's draft as its token.
TEST(DraftChain, CachedChainComputesTheTrainingChainsSecondStep) {
  DraftLayerModel d = draft_layer_model(true);
  Transformer tf(d.model->config(), d.model->weights());
  for (int32_t from : {2, 6, 10}) {
    const int32_t token = (from * 5 + 1) % V;
    KvCache cache(d.model->config(), 64);
    SequenceInput in;
    in.set_causal(&cache, std::vector<int32_t>(kTokens.begin(), kTokens.begin() + from + 1), SequenceInput::Logits::Last);
    in.draft_logits = true;
    int32_t out[2] = {-1, -1};
    ASSERT_EQ(tf.forward(in).chain(0, token, 2, out), 2);
    const std::vector<float> second(tf.last_chain_logits(), tf.last_chain_logits() + V);

    d.trainable.forward(TrainSequence::causal(kTokens));
    const DraftChainRow chain[2] = {{from, token, 0}, {from, out[0], 1, 0}};
    const float* z = d.trainable.draft_logits({}, {}, chain);
    EXPECT_EQ(out[0], static_cast<int32_t>(std::max_element(z, z + V) - z)) << "after row " << from;
    EXPECT_LT(largest_difference(second.data(), z + V, V), 1e-3) << "after row " << from;
    EXPECT_EQ(out[1], static_cast<int32_t>(std::max_element(z + V, z + 2 * V) - (z + V)));
  }
}

// A chain from a sequence's row of a batched forward gives the same bits as from the sequence alone, and
// neither disturbs what the cache gives the next forward.
TEST(DraftChain, IsBatchInvariantAndLeavesTheCacheAsItWas) {
  DraftLayerModel d = draft_layer_model(true);
  Transformer tf(d.model->config(), d.model->weights());
  const int T = static_cast<int>(kTokens.size());
  auto chain_alone = [&](KvCache& cache, std::vector<float>* next_logits) {
    SequenceInput in;
    in.set_causal(&cache, kTokens, SequenceInput::Logits::Last);
    in.draft_logits = true;
    int32_t out[3];
    EXPECT_EQ(tf.forward(in).chain(0, 7, 3, out), 3);
    std::vector<float> chain(tf.last_chain_logits(), tf.last_chain_logits() + V);
    if (next_logits) {
      in.set_causal(&cache, std::vector<int32_t>{7}, SequenceInput::Logits::Last);
      const float* z = tf.forward(in).logits(0);
      next_logits->assign(z, z + V);
    }
    return chain;
  };
  KvCache a(d.model->config(), 64), b(d.model->config(), 64), c(d.model->config(), 64);
  std::vector<float> next_after_chain;
  const std::vector<float> alone = chain_alone(a, &next_after_chain);

  SequenceInput other, mine;
  other.set_causal(&b, std::vector<int32_t>{7, 7, 2, 8}, SequenceInput::Logits::All);
  other.draft_logits = true;
  mine.set_causal(&c, kTokens, SequenceInput::Logits::Last);
  mine.draft_logits = true;
  SequenceInput* both[] = {&other, &mine};
  const ForwardResult batch = tf.forward(std::span<SequenceInput* const>(both, 2));
  int32_t out[3];
  ASSERT_EQ(batch.chain(3, 1, 3, out), 3);  // the other sequence's chain first
  ASSERT_EQ(batch.chain(4, 7, 3, out), 3);
  EXPECT_EQ(std::memcmp(tf.last_chain_logits(), alone.data(), sizeof(float) * V), 0);

  KvCache plain(d.model->config(), 64);
  SequenceInput in;
  in.set_causal(&plain, kTokens, SequenceInput::Logits::None);
  tf.forward(in);
  in.set_causal(&plain, std::vector<int32_t>{7}, SequenceInput::Logits::Last);
  EXPECT_EQ(std::memcmp(tf.forward(in).logits(0), next_after_chain.data(), sizeof(float) * V), 0);
  EXPECT_EQ(plain.size(), T + 1);
}

TEST(DraftChain, MisuseIsAnError) {
  DraftLayerModel d = draft_layer_model(true);
  Transformer tf(d.model->config(), d.model->weights());
  KvCache cache(d.model->config(), 64);
  SequenceInput in;
  in.set_causal(&cache, kTokens, SequenceInput::Logits::All);
  int32_t out[2];
  EXPECT_THROW(tf.forward(in).chain(11, 1, 1, out), std::logic_error);  // the forward ran no draft layer
  cache.truncate(0);
  in.set_causal(&cache, kTokens, SequenceInput::Logits::All);
  in.draft_logits = true;
  const ForwardResult res = tf.forward(in);
  EXPECT_EQ(res.chain(11, 1, 1, out), 1);  // the right use
  EXPECT_THROW(res.chain(0, 1, 1, out), std::logic_error);  // the cache goes past row 0
  EXPECT_THROW(res.chain(12, 1, 1, out), std::logic_error);  // not a row
  EXPECT_THROW(res.chain(11, V, 1, out), std::logic_error);  // token outside the vocabulary
  EXPECT_EQ(res.chain(11, 1, 0, out), 0);
  KvCache full(d.model->config(), static_cast<int>(kTokens.size()));
  in.set_causal(&full, kTokens, SequenceInput::Logits::Last);
  in.draft_logits = true;
  EXPECT_EQ(tf.forward(in).chain(0, 1, 2, out), 0);  // no free slot: no chain
  TrainableModel plain(preset_config("tiny"));
  EXPECT_THROW(plain.set_draft_chain(1), Error);
  EXPECT_THROW(d.trainable.set_draft_chain(TrainableModel::kMaxDraftChain + 1), Error);
}

// L = sum over the draft rows and the chain's rows of c . z: the gradient of every draft tensor (4 samples of
// each of the 12) against central differences.
void expect_chain_gradients(TrainableModel& m, const TrainSequence& s, const std::vector<int32_t>& from,
                            const std::vector<int32_t>& into, const std::vector<DraftChainRow>& chain) {
  std::vector<int32_t> read = into;
  for (const DraftChainRow& c : chain) read.push_back(c.into);
  const LinearProbe probe(s.tokens.size(), V, read);
  auto loss = [&] {
    m.forward(s);
    return probe.of(m.draft_logits(from, into, chain));
  };
  loss();
  m.zero_grad();
  m.backward_draft_head(probe.c.data());
  int checked = 0;
  expect_draft_gradients(m, loss, [](int64_t n) { return std::vector<int64_t>{0, n / 3, n / 2 + 1, n - 1}; }, &checked);
  EXPECT_EQ(checked, 4 * 12);
}

// L = sum over the draft rows and the chain's rows of c . z: the gradient of every draft tensor through the
// head, the norm and both passes of the layer against central differences; the model itself gets none.
TEST(DraftChainTraining, GradientsGoThroughBothPasses) {
  DraftLayerModel d = draft_layer_model(true);
  TrainableModel& m = d.trainable;
  const PackedSequence p = toy_packed(0);
  const TrainSequence s = train_sequence(p);
  const std::vector<DraftChainRow> rows = draft_chain_rows(p);
  ASSERT_EQ(rows.size(), 1u);  // block 0 (first mismatch 1 of 3); block 1's mismatch is its last row
  EXPECT_EQ(rows[0].from, 3);
  EXPECT_EQ(rows[0].into, 5);
  EXPECT_EQ(rows[0].token, p.tokens[8]);
  const std::vector<DraftChainRow> chain = {rows[0], {7, 9, 14}};
  const std::vector<int32_t> from = {3, 10}, into = {4, 11};
  expect_chain_gradients(m, s, from, into, chain);
}

// Two steps: the gradient goes through all three passes (step 2's rows continue step 1's, which continue the
// first pass's), against central differences.
TEST(DraftChainTraining, GradientsGoThroughEveryStepsPass) {
  DraftLayerModel d = draft_layer_model(true);
  TrainableModel& m = d.trainable;
  const PackedSequence p = toy_packed_long(0);
  const TrainSequence s = train_sequence(p);
  const std::vector<DraftChainRow> chain = draft_chain_rows(p, 2);
  // block 0 (mismatch at 0) from the context's last row into noisy rows 1, 2; block 1 (mismatch at 1) from its
  // noisy row 0 into noisy rows 2, 3; step 1's rows first
  ASSERT_EQ(chain.size(), 4u);
  EXPECT_EQ(chain[0].from, 2);
  EXPECT_EQ(chain[0].into, 4);
  EXPECT_EQ(chain[1].from, 13);
  EXPECT_EQ(chain[1].into, 15);
  EXPECT_EQ(chain[2].prev, 0);
  EXPECT_EQ(chain[2].into, 5);
  EXPECT_EQ(chain[2].token, p.tokens[10]);
  EXPECT_EQ(chain[3].prev, 1);
  EXPECT_EQ(chain[3].into, 16);
  EXPECT_EQ(draft_chain_rows(p, 4).size(), 4u + 2u + 1u);  // as far as the blocks reach
  const std::vector<int32_t> from = {2}, into = {3};
  expect_chain_gradients(m, s, from, into, chain);
  // a chain row must continue an earlier row of its own chain, in step order
  const DraftChainRow ahead[2] = {{2, 1, 4, 1}, {2, 1, 5, -1}}, other[2] = {{2, 1, 4}, {13, 1, 5, 0}};
  m.forward(s);
  EXPECT_THROW(m.draft_logits({}, {}, ahead), std::logic_error);
  EXPECT_THROW(m.draft_logits({}, {}, other), std::logic_error);
}

// 80 steps of the draft-head objective at lr 1e-2 (accum 2): the toy chain tests' training.
TrainOptions chain_training_options() {
  TrainOptions o;
  o.objective = Objective::DraftHead;
  o.steps = 80;
  o.accum = 2;
  o.lr = 1e-2f;
  return o;
}

// The chain's mean KL to the clean rows' distributions over the rows draft_chain_rows picks in `data`.
double chain_kl(TrainableModel& m, const TrainData& data, int depth = 1, int only_step = 0) {
  double sum = 0;
  int n = 0;
  std::vector<float> target(V), scratch(V);
  for (const PackedSequence& p : data.packed) {
    const float* z = m.forward(train_sequence(p));
    const std::vector<float> clean(z, z + p.tokens.size() * V);
    const std::vector<DraftChainRow> chain = draft_chain_rows(p, depth);
    z = m.draft_logits({}, {}, chain);
    for (const DraftChainRow& entry : chain) {
      if (only_step == 2 && entry.prev < 0) continue;
      const int32_t row = entry.into;
      const float* c = &clean[static_cast<size_t>(row + p.n) * V];  // the clean row beside it
      const float top = *std::max_element(c, c + V);
      float total = 0;
      for (int v = 0; v < V; v++) total += target[v] = std::exp(c[v] - top);
      for (int v = 0; v < V; v++) target[v] /= total;
      float kl = 0;
      soft_cross_entropy(z + static_cast<size_t>(row) * V, target.data(), V, 0.0f, scratch.data(), &kl);
      sum += kl;
      n++;
    }
  }
  return sum / n;
}

// The trainer sends the row after each first mismatch through the chain: the chain's KL falls, and ends well
// below that of the same layer trained the same way without its chain (which sends that row through the
// first pass from the row before it).
TEST(DraftChainTraining, TrainsTheChainRowsAndNeedsTheirRows) {
  TrainData data;
  for (int s = 0; s < 6; s++) data.packed.push_back(toy_packed(s));
  TrainOptions o = chain_training_options();
  o.loss.consistency_rows = 2;
  double trained[2];
  for (int with_chain : {0, 1}) {
    DraftLayerModel d = draft_layer_model(true);  // moved at random: the chain starts far from its targets
    TrainableModel& m = d.trainable;
    const double before = chain_kl(m, data);
    m.set_draft_chain(with_chain);
    Trainer t(m, data, o, GgufMetadata{});
    t.run();
    trained[with_chain] = chain_kl(m, data);
    std::printf("chain KL %.4f -> %.4f %s the chain trained\n", before, trained[with_chain], with_chain ? "with" : "without");
    if (with_chain) {
      EXPECT_LT(trained[1], 0.5 * before);
    }
  }
  EXPECT_LT(trained[1], 0.7 * trained[0]);
  DraftLayerModel d = draft_layer_model(false);
  d.trainable.set_draft_chain(1);
  o.loss.consistency_rows = 1;
  EXPECT_THROW(Trainer(d.trainable, data, o, GgufMetadata{}), Error);  // the chain's rows would weigh nothing
}

// Trained end to end (--consistency-rows 3), the chain's second step drafts its rows better than the same
// layer trained on its first step alone and run twice (--consistency-rows 2).
TEST(DraftChainTraining, TrainsTheSecondStepEndToEnd) {
  TrainData data;
  for (int s = 0; s < 6; s++) data.packed.push_back(toy_packed_long(s));
  TrainOptions o = chain_training_options();
  double second_step[2];
  for (int end_to_end : {0, 1}) {
    DraftLayerModel d = draft_layer_model(true);
    TrainableModel& m = d.trainable;
    const double before = chain_kl(m, data, 2, 2);
    m.set_draft_chain(2);
    o.loss.consistency_rows = end_to_end ? 3 : 2;
    Trainer t(m, data, o, GgufMetadata{});
    t.run();
    second_step[end_to_end] = chain_kl(m, data, 2, 2);
    std::printf("second step KL %.4f -> %.4f trained %s\n", before, second_step[end_to_end],
                end_to_end ? "end to end" : "on the first step alone");
  }
  EXPECT_LT(second_step[1], 0.75 * second_step[0]);  // (deterministic: 0.60x here)
}

}  // namespace
}  // namespace jf
