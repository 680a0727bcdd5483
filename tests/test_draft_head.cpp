// The draft head (decode/jacobi.h; trained by `jf train --objective draft-head`): Jacobi and multiblock take
// their next drafts from it and verify them with the output head, so the output is AR's whatever the head
// predicts; a head that predicts well raises the tokens per forward; training it moves nothing else.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "base/error.h"
#include "base/rng.h"
#include "decode/options.h"
#include "draft_layer_support.h"
#include "fake_model.h"
#include "model/random_model.h"
#include "train/trainer.h"
#include "model_helpers.h"
#include "test_support.h"

namespace jf {
namespace {

GenerationResult run(Session& s, const DecoderOptions& o, const std::vector<int32_t>& prompt, const GenerationConfig& cfg) {
  o.validate(true);
  return make_decoder(o)->generate(s, prompt, cfg);
}

DecoderOptions decoder(const std::string& name, int block, bool adaptive, bool head = true) {
  DecoderOptions o;
  o.name = name;
  o.block = block;
  o.draft_adaptive = adaptive;
  o.draft_head = head;
  return o;
}

// The decoders that draft from a head, over block sizes, both draft policies and multiblock's shapes.
std::vector<DecoderOptions> head_decoders() {
  std::vector<DecoderOptions> all;
  for (int n : {2, 4, 8, 16})
    for (bool adaptive : {false, true}) {
      all.push_back(decoder("jacobi", n, adaptive));
      all.push_back(decoder("multiblock", n, adaptive));
    }
  DecoderOptions running = decoder("jacobi", 8, false);
  running.running_window = true;
  all.push_back(running);
  DecoderOptions three = decoder("multiblock", 8, false);
  three.max_blocks = 3, three.spawn_ratio = 0.5f, three.pool = 0;
  all.push_back(three);
  return all;
}

std::string label(const DecoderOptions& o) {
  return o.name + " n=" + std::to_string(o.block) + (o.draft_adaptive ? " adaptive" : " fixed") +
         (o.running_window ? " running" : "") + " K=" + std::to_string(o.max_blocks);
}

// What a perfect draft head learns: a row that sees the text's first L-1 tokens, then anything, predicts
// text[L] — the token after the one its input should have been. Elsewhere a fixed wrong guess.
test::NextTokenRule skip_rule(std::vector<int32_t> text, int vocab) {
  return [text = std::move(text), vocab](std::span<const int32_t> seen, float* logits) {
    for (int v = 0; v < vocab; v++) logits[v] = 0.0f;
    const size_t L = seen.size();
    const bool on_text = L >= 1 && L < text.size() && std::equal(seen.begin(), seen.end() - 1, text.begin());
    logits[on_text ? text[L] : 0] = 10.0f;
  };
}

std::vector<int32_t> random_text(int n, int vocab, uint64_t seed) {
  Rng r(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(1 + r.below(static_cast<uint32_t>(vocab - 1)));
  return t;
}

// ---------------------------------------------------------------- decoding

// A text no draft from context or from the model's own rows can guess, decoded by the oracle model with
// ar and with jacobi and multiblock (block 16, every row sent) with and without its draft rule.
struct OracleCase {
  static constexpr int V = 64;
  std::vector<int32_t> text = random_text(400, V, 3);
  test::FakeModel fake{V, test::oracle_rule(text, V)};
  Session s{fake, 300};
  std::vector<int32_t> prompt{text.begin(), text.begin() + 10};
  GenerationConfig cfg() const {
    GenerationConfig c;
    c.max_new_tokens = 120;
    return c;
  }
  // jacobi and multiblock (block 16, every row sent) with and without a mechanism (`off` turns it off in the
  // options): AR's tokens both ways, `count` counted only with it, more than `faster` tokens per forward with
  // it and fewer than `slower` without.
  void expect_gain(const char* what, const std::function<void(DecoderOptions&)>& off, const char* count,
                   double faster, double slower) {
    const GenerationResult ar = run(s, decoder("ar", 1, false), prompt, cfg());
    for (const char* name : {"jacobi", "multiblock"}) {
      DecoderOptions without_options = decoder(name, 16, false);
      off(without_options);
      const GenerationResult with = run(s, decoder(name, 16, false), prompt, cfg());
      const GenerationResult without = run(s, without_options, prompt, cfg());
      ASSERT_EQ(with.tokens, ar.tokens) << name;
      ASSERT_EQ(without.tokens, ar.tokens) << name;
      EXPECT_GT(with.stats.counter(count), 0) << name;
      EXPECT_EQ(without.stats.counter(count), 0) << name;
      EXPECT_GT(with.stats.tpf(), faster) << name;
      EXPECT_LT(without.stats.tpf(), slower) << name;
      std::printf("%s: TPF %.2f with %s, %.2f without\n", name, with.stats.tpf(), what, without.stats.tpf());
    }
  }
  // With the draft rule: AR's tokens at more than 1.6 tokens per forward (a block's first forward drafts
  // from guesses); without it, AR's tokens at under 1.3.
  void expect_faster(const char* what) {
    expect_gain(what, [](DecoderOptions& o) { o.draft_head = false; }, "draft_head_forwards", 1.6, 1.3);
  }
};

// The oracle head gives about one draft token per forward on top of the verified one: twice the tokens per
// forward, and AR's tokens.
TEST(DraftHead, AGoodHeadRaisesTokensPerForwardAndTheOutputStaysAr) {
  OracleCase c;
  c.fake.set_draft_rule(skip_rule(c.text, OracleCase::V));
  c.expect_faster("the oracle head");
}

// What a perfect shifted draft (a draft layer's, ForwardPass::draft_shift 1) learns: a row that sees the
// text's first L tokens, all right, predicts text[L + 1] — the token after the one the row verifies.
test::NextTokenRule shifted_rule(std::vector<int32_t> text, int vocab) {
  return [text = std::move(text), vocab](std::span<const int32_t> seen, float* logits) {
    for (int v = 0; v < vocab; v++) logits[v] = 0.0f;
    const size_t L = seen.size();
    const bool on_text = L + 1 < text.size() && std::equal(seen.begin(), seen.end(), text.begin());
    logits[on_text ? text[L + 1] : 0] = 10.0f;
  };
}

// The last verified row of every forward drafts the token after the bonus one, right each time: two tokens
// per forward, even from forwards that send the pending token alone; AR's tokens.
TEST(DraftHead, AGoodShiftedDraftRaisesTokensPerForward) {
  OracleCase c;
  c.fake.set_draft_rule(shifted_rule(c.text, OracleCase::V), /*shift=*/1);
  c.expect_faster("the shifted oracle");
  // Read unshifted, the same drafts land one position late and almost never match.
  c.fake.set_draft_rule(shifted_rule(c.text, OracleCase::V), /*shift=*/0);
  EXPECT_LT(run(c.s, decoder("jacobi", 16, false, true), c.prompt, c.cfg()).stats.tpf(), 1.3);
}

// A draft chain (ForwardResult::chain) that continues the text right after the shifted draft: three
// more tokens per forward from the last verified row, against the shifted draft's one; a file that says
// its chain was trained is used without asking, --draft-chain 0 turns it off; AR's tokens throughout.
TEST(DraftHead, AGoodDraftChainRaisesTokensPerForwardFurther) {
  OracleCase c;
  c.fake.set_draft_rule(shifted_rule(c.text, OracleCase::V), /*shift=*/1);
  c.fake.set_draft_chain_rule(test::oracle_rule(c.text, OracleCase::V), /*depth=*/3);
  c.expect_gain("the oracle chain", [](DecoderOptions& o) { o.draft_chain = 0; }, "draft_chain_tokens", 3.0, 2.2);
}

// A head that predicts garbage (or follows the text only in places) changes how fast, never what.
TEST(DraftHead, AnyHeadKeepsEveryDecoderLossless) {
  const int V = 40;
  const std::vector<int32_t> text = random_text(300, V, 5);
  for (int variant = 0; variant < 4; variant++) {  // garbage / partly right, unshifted / shifted
    test::FakeModel fake(V, test::oracle_rule(text, V));
    const int shift = variant / 2;
    if (variant % 2 == 0) fake.set_draft_rule(test::sampling_rule(V, 8.0f), shift);
    else fake.set_draft_rule(shift ? shifted_rule(text, V) : skip_rule(text, V), shift);
    Session s(fake, 200);
    GenerationConfig cfg;
    cfg.max_new_tokens = 90;
    cfg.eos_ids = {text[60]};  // an end token inside the drafts
    const std::vector<int32_t> prompt(text.begin(), text.begin() + 7);
    const GenerationResult ar = run(s, decoder("ar", 1, false), prompt, cfg);
    for (const DecoderOptions& o : head_decoders()) {
      const GenerationResult r = run(s, o, prompt, cfg);
      ASSERT_EQ(r.tokens, ar.tokens) << label(o) << " variant " << variant;
      ASSERT_EQ(r.stop, ar.stop) << label(o) << " variant " << variant;
    }
  }
}

// A real forward with a random draft head: every decoder still returns AR's tokens, on float and int8 weights.
TEST(DraftHead, RandomModelsWithADraftHeadEqualAr) {
  for (DType type : {DType::F16, DType::Q8_0}) {
    ModelConfig c = preset_config("tiny");
    c.draft_head = true;
    auto m = random_model(c, type, 17);
    ASSERT_TRUE(m->config().draft_head);
    Session s(*m, 256);
    GenerationConfig cfg;
    cfg.max_new_tokens = 50;
    const std::vector<int32_t> prompt = {1, 5, 9, 5, 9};
    const GenerationResult ar = run(s, decoder("ar", 1, false), prompt, cfg);
    for (const DecoderOptions& o : head_decoders()) {
      const GenerationResult r = run(s, o, prompt, cfg);
      ASSERT_EQ(r.tokens, ar.tokens) << label(o) << " " << dtype_name(type);
      if (!o.draft_adaptive) {
        EXPECT_GT(r.stats.counter("draft_head_forwards"), 0) << label(o);
      }
    }
  }
}

// The forward returns the head's logits for exactly the rows it returns logits for: a head that is a copy of
// the output head gives the same bits; nothing when not asked or when the model has no head; and the same
// bits for a sequence alone as beside another (batch invariance).
TEST(DraftHead, ForwardGivesTheHeadsLogitsForTheLogitRows) {
  ModelConfig c = preset_config("tiny");
  c.draft_head = true;
  TensorSet ts = random_tensors(c, DType::Q8_0, 21);
  ts.tensors["draft_output.weight"] = *ts.find("output.weight");
  Model copy(c, ts, "memory");
  Transformer tf(copy.config(), copy.weights());
  const int V = c.vocab_size;
  KvCache a(copy.config(), 64), b(copy.config(), 64);
  SequenceInput in;
  in.set_causal(&a, std::vector<int32_t>{3, 1, 4, 1, 5}, SequenceInput::Logits::All);
  EXPECT_EQ(tf.forward(in).draft_logits(0), nullptr);  // not asked for
  a.truncate(0);
  in.draft_logits = true;
  const ForwardResult res = tf.forward(in);
  const std::vector<float> drafts = test::draft_rows(res, 5);
  ASSERT_FALSE(drafts.empty());
  EXPECT_EQ(std::memcmp(drafts.data(), test::all_logits(res).data(), sizeof(float) * 5 * V), 0);
  const std::vector<float> alone(drafts.begin() + 2 * V, drafts.begin() + 3 * V);  // row 2 of the five
  a.truncate(0);
  SequenceInput other, mine;
  other.set_causal(&b, std::vector<int32_t>{7, 7, 2}, SequenceInput::Logits::All);
  mine.set_causal(&a, std::vector<int32_t>{3, 1, 4, 1, 5}, std::vector<int32_t>{2});
  mine.draft_logits = true;
  SequenceInput* both[] = {&other, &mine};
  const ForwardResult batch = tf.forward(std::span<SequenceInput* const>(both, 2));
  const float* mine_draft = batch.draft_logits(3);  // after the other sequence's three rows
  ASSERT_NE(mine_draft, nullptr);
  EXPECT_EQ(std::memcmp(mine_draft, alone.data(), sizeof(float) * V), 0);

  ModelConfig plain_cfg = preset_config("tiny");
  auto plain = random_model(plain_cfg, DType::Q8_0, 21);
  Transformer tp(plain->config(), plain->weights());
  KvCache pc(plain->config(), 64);
  SequenceInput pin;
  pin.set_causal(&pc, std::vector<int32_t>{3, 1}, SequenceInput::Logits::All);
  pin.draft_logits = true;
  EXPECT_EQ(tp.forward(pin).draft_logits(0), nullptr);
}

// ---------------------------------------------------------------- training

// A model with a draft head that starts as a copy of its output head (as `jf train --objective draft-head`
// gives a model that has none).
TrainableModel model_with_head(ModelConfig cfg) {
  TrainableModel base(cfg);
  base.init_random(4);
  TensorSet ts = base.to_tensor_set(DType::F32);
  return TrainableModel::from_tensors(base.config(), ts, /*with_draft_head=*/true);
}

TEST(DraftHeadTraining, HeadStartsAsTheOutputHeadAndItsGradientMatchesItsDefinition) {
  ModelConfig cfg = preset_config("tiny");
  cfg.vocab_size = 32;
  TrainableModel m = model_with_head(cfg);
  const int V = 32, C = cfg.dim;
  const PackedSequence p = toy_packed(0);
  const TrainSequence s = train_sequence(p);
  const float* first = m.forward(s);
  const std::vector<float> plain(first, first + p.tokens.size() * V);
  const std::vector<int32_t> rows = consistency_rows(p);
  ASSERT_EQ(rows, (std::vector<int32_t>{4, 5, 11}));  // noisy0 from index 1, noisy1 from index 2
  const float* z = m.draft_logits(rows);
  for (size_t i = 0; i < plain.size(); i++) ASSERT_EQ(z[i], plain[i]) << i;  // the copy gives the same logits
  // dL/dW_draft for L = sum over the rows of c . z: c (x) the row's normalised hidden state; nothing else moves.
  LinearProbe probe(p.tokens.size(), V, rows);
  probe.c[0] = 5.0f;  // a row that is not a draft row: ignored
  m.zero_grad();
  m.backward_draft_head(probe.c.data());
  std::vector<TrainableModel::Param> params = m.params();
  for (const auto& prm : params) {
    if (prm.name != "draft_output.weight") {
      for (int64_t i = 0; i < prm.size; i++) ASSERT_EQ(prm.grad[i], 0.0f) << prm.name;
      continue;
    }
    // Finite differences on a few weights: L is linear in them.
    for (int64_t k : {int64_t{0}, int64_t{5} * C + 3, int64_t{31} * C + C - 1}) {
      EXPECT_NEAR(prm.grad[k], central_difference(prm.data[k], [&] { return probe.of(m.draft_logits(rows)); }), 1e-3) << k;
    }
  }
}

TEST(DraftHeadTraining, TrainsTheHeadAloneAndItsConsistencyFalls) {
  ModelConfig cfg = preset_config("tiny");
  cfg.vocab_size = 32;
  TrainableModel m = model_with_head(cfg);
  const std::vector<float> start(m.param_data(), m.param_data() + m.n_params());
  TrainData data;
  for (int s = 0; s < 6; s++) data.packed.push_back(toy_packed(s));
  TrainOptions o;
  o.objective = Objective::DraftHead;
  o.steps = 40;
  o.accum = 2;
  o.lr = 1e-2f;
  o.adam.weight_decay = 0.1f;  // must not touch the frozen matrices either
  std::vector<double> consistency;
  Trainer t(m, data, o, GgufMetadata{});
  t.run([&](const StepReport& r) { consistency.push_back(r.loss.consistency); });
  EXPECT_LT(consistency.back(), 0.5 * consistency.front()) << consistency.front() << " -> " << consistency.back();
  bool head_moved = false;
  for (const auto& prm : m.params()) {
    const float* s0 = start.data() + (prm.data - m.param_data());
    if (prm.name == "draft_output.weight") {
      head_moved = std::memcmp(prm.data, s0, sizeof(float) * prm.size) != 0;
      continue;
    }
    ASSERT_EQ(std::memcmp(prm.data, s0, sizeof(float) * prm.size), 0) << prm.name << " moved";
  }
  EXPECT_TRUE(head_moved);
}

TEST(DraftHeadTraining, BadSettingsAreErrors) {
  ModelConfig cfg = preset_config("tiny");
  cfg.vocab_size = 32;
  TrainData data;
  data.packed.push_back(toy_packed(0));
  TrainOptions o;
  o.objective = Objective::DraftHead;
  TrainableModel headless(cfg);
  EXPECT_THROW(Trainer(headless, data, o, GgufMetadata{}), Error);
  TrainableModel m = model_with_head(cfg);
  data.text.push_back({1, 2, 3, 4});
  o.text_accum = 1;
  EXPECT_THROW(Trainer(m, data, o, GgufMetadata{}), Error);
  EXPECT_THROW(m.draft_logits(std::vector<int32_t>{0}), std::logic_error);  // before any forward: a bug
}

// ---------------------------------------------------------------- the draft layer

// Started as `jf train --draft-layer` starts it, the layer is the identity on its input: with the token
// embedding scaled to zero the draft logits are the output logits, bit for bit, in the inference forward and
// in the training forward.
TEST(DraftLayer, StartsAsTheIdentity) {
  DraftLayerModel d = draft_layer_model(false, /*token_scale=*/0.0f);
  ASSERT_TRUE(d.model->config().draft_layer);
  EXPECT_EQ(d.model->config().kv_layers(), d.model->config().n_layers + 1);
  const std::vector<int32_t> tokens = {3, 1, 4, 1, 5, 9, 2};
  const int T = static_cast<int>(tokens.size()), V = 32;
  Transformer tf(d.model->config(), d.model->weights());
  KvCache cache(d.model->config(), 64);
  SequenceInput in;
  in.set_causal(&cache, tokens, SequenceInput::Logits::All);
  in.draft_logits = true;
  const ForwardResult res = tf.forward(in);
  const std::vector<float> drafts = test::draft_rows(res, T);
  ASSERT_FALSE(drafts.empty());
  EXPECT_EQ(std::memcmp(drafts.data(), test::all_logits(res).data(), sizeof(float) * T * V), 0);
  const float* z = d.trainable.forward(TrainSequence::causal(tokens));
  const std::vector<float> plain(z, z + T * V);
  const float* dz = d.trainable.draft_logits(std::vector<int32_t>{0, 3, 6});
  for (size_t i = 0; i < plain.size(); i++) ASSERT_EQ(dz[i], plain[i]) << i;
}

// The inference forward keeps the draft layer's keys and values in the KV cache: fed in chunks, its draft
// logits are those of the training forward over the whole sequence (one computation, two codes); and a
// sequence's draft logits are the same bits alone as beside another sequence.
TEST(DraftLayer, CachedForwardMatchesTheTrainingForwardAndIsBatchInvariant) {
  DraftLayerModel d = draft_layer_model(true);
  const std::vector<int32_t> tokens = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};
  const int T = static_cast<int>(tokens.size()), V = 32;
  const float* z = d.trainable.forward(TrainSequence::causal(tokens));
  const std::vector<float> plain(z, z + T * V);
  std::vector<int32_t> all(static_cast<size_t>(T));
  for (int i = 0; i < T; i++) all[i] = i;
  z = d.trainable.draft_logits(all);
  const std::vector<float> want(z, z + T * V);

  Transformer tf(d.model->config(), d.model->weights());
  KvCache cache(d.model->config(), 64);
  std::vector<float> got;
  for (auto [begin, end] : {std::pair{0, 5}, {5, 6}, {6, 9}, {9, 12}}) {
    SequenceInput in;
    in.set_causal(&cache, std::vector<int32_t>(tokens.begin() + begin, tokens.begin() + end), SequenceInput::Logits::All);
    in.draft_logits = true;
    const std::vector<float> drafts = test::draft_rows(tf.forward(in), end - begin);
    ASSERT_FALSE(drafts.empty());
    got.insert(got.end(), drafts.begin(), drafts.end());
  }
  double worst = 0, moved = 0;
  for (int i = 0; i < T * V; i++) {
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
    moved = std::max(moved, std::fabs(static_cast<double>(want[i]) - plain[i]));
  }
  EXPECT_LT(worst, 1e-3);
  EXPECT_GT(moved, 0.1);  // the layer does change the logits: the comparison means something

  KvCache alone_cache(d.model->config(), 64), other_cache(d.model->config(), 64), mine_cache(d.model->config(), 64);
  SequenceInput alone, other, mine;
  alone.set_causal(&alone_cache, tokens, std::vector<int32_t>{T - 1});
  alone.draft_logits = true;
  const float* a = tf.forward(alone).draft_logits(0);
  const std::vector<float> one(a, a + V);
  other.set_causal(&other_cache, std::vector<int32_t>{7, 7, 2, 8}, SequenceInput::Logits::All);
  mine.set_causal(&mine_cache, tokens, std::vector<int32_t>{T - 1});
  mine.draft_logits = true;
  SequenceInput* both[] = {&other, &mine};
  const ForwardResult batch = tf.forward(std::span<SequenceInput* const>(both, 2));
  const float* b = batch.draft_logits(4);  // after the other sequence's four rows
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(std::memcmp(b, one.data(), sizeof(float) * V), 0);
}

// Random draft layers over every decoder configuration, on float and int8 weights: AR's tokens.
TEST(DraftLayer, RandomModelsWithADraftLayerEqualAr) {
  for (DType type : {DType::F16, DType::Q8_0}) {
    ModelConfig c = preset_config("tiny");
    c.draft_head = c.draft_layer = true;
    auto m = random_model(c, type, 19);
    ASSERT_TRUE(m->config().draft_layer);
    Session s(*m, 256);
    GenerationConfig cfg;
    cfg.max_new_tokens = 50;
    const std::vector<int32_t> prompt = {1, 5, 9, 5, 9};
    const GenerationResult ar = run(s, decoder("ar", 1, false), prompt, cfg);
    for (int chain : {0, 3})  // without and with the layer's chain (ForwardResult::chain)
      for (DecoderOptions o : head_decoders()) {
        o.draft_chain = chain;
        const GenerationResult r = run(s, o, prompt, cfg);
        ASSERT_EQ(r.tokens, ar.tokens) << label(o) << " chain " << chain << " " << dtype_name(type);
        if (chain == 0) {
          EXPECT_EQ(r.stats.counter("draft_chain_tokens"), 0) << label(o);
        }
        // (the priced decoders draft the chain only for drafts they send; here they mostly send one)
        if (chain > 0 && o.block > 2 && !o.draft_adaptive) {
          EXPECT_GT(r.stats.counter("draft_chain_tokens"), 0) << label(o);
        }
      }
  }
}

// The draft layer's gradients (through the head, the draft norm, the feed-forward and the attention over
// every row) against central differences of L = sum over the draft rows of c . z; the model stays frozen.
TEST(DraftLayerTraining, GradientsMatchFiniteDifferencesAndTheModelGetsNone) {
  DraftLayerModel d = draft_layer_model(true);
  TrainableModel& m = d.trainable;
  const int V = 32;
  const PackedSequence p = toy_packed(0);
  const TrainSequence s = train_sequence(p);
  const LinearProbe probe(p.tokens.size(), V, consistency_rows(p));
  auto loss = [&] {
    m.forward(s);
    return probe.of(m.draft_logits(probe.rows));
  };
  loss();
  m.zero_grad();
  m.backward_draft_head(probe.c.data());
  int checked = 0;
  expect_draft_gradients(m, loss, [](int64_t n) { return std::vector<int64_t>{0, n / 3, n - 1}; }, &checked);
  EXPECT_EQ(checked, 3 * 12);  // the head, the token scale, the draft norm and the layer's nine tensors
}

TEST(DraftLayerTraining, TrainsTheDraftTensorsAloneAndItsConsistencyFalls) {
  DraftLayerModel d = draft_layer_model(false);
  TrainableModel& m = d.trainable;
  const std::vector<float> start(m.param_data(), m.param_data() + m.n_params());
  TrainData data;
  for (int s = 0; s < 6; s++) data.packed.push_back(toy_packed(s));
  TrainOptions o;
  o.objective = Objective::DraftHead;
  o.steps = 40;
  o.accum = 2;
  o.lr = 1e-2f;
  o.adam.weight_decay = 0.1f;
  std::vector<double> consistency;
  Trainer t(m, data, o, GgufMetadata{});
  t.run([&](const StepReport& r) { consistency.push_back(r.loss.consistency); });
  EXPECT_LT(consistency.back(), 0.5 * consistency.front()) << consistency.front() << " -> " << consistency.back();
  int moved = 0;
  for (const auto& prm : m.params()) {
    const bool same = std::memcmp(prm.data, start.data() + (prm.data - m.param_data()), sizeof(float) * prm.size) == 0;
    if (prm.name.starts_with("draft_")) moved += same ? 0 : 1;
    else ASSERT_TRUE(same) << prm.name << " moved";
  }
  EXPECT_EQ(moved, 12);
}

// A shifted draft for a noisy row comes from the row at the position before it.
TEST(DraftLayerTraining, ShiftedDraftsComeFromThePositionBefore) {
  const PackedSequence p = toy_packed(0);  // context 0-2, noisy0 3-5, clean0 6-8, noisy1 9-11, clean1 12-14
  EXPECT_EQ(draft_source_row(p, 4), 3);
  EXPECT_EQ(draft_source_row(p, 11), 10);
  EXPECT_EQ(draft_source_row(p, 3), 2);  // block 0's first row: the context's last
  EXPECT_EQ(draft_source_row(p, 9), 8);  // block 1's first row: block 0's last clean row
  PackedSequence bare = p;
  bare.context_len = 0;
  EXPECT_EQ(draft_source_row(bare, 0), -1);
  EXPECT_THROW(draft_source_row(p, 7), std::logic_error);  // a clean row
}

}  // namespace
}  // namespace jf
