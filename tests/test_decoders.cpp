// Every greedy strategy returns exactly the tokens and stop reason of AR — on stories260K, on random
// models, and on a fake model that also checks every forward's positions and visibility — across a grid of
// parameters and edge cases; bad parameters are errors.
#include <cstdio>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/rng.h"
#include "decode/options.h"
#include "decode/pld.h"
#include "decode/row_cost.h"
#include "fake_model.h"
#include "model/loader.h"
#include "model/quant_mix.h"
#include "model/random_model.h"
#include "test_support.h"

namespace jf {
namespace {

struct Case {
  std::string label;
  DecoderOptions opt;
};

DecoderOptions dec(const std::string& name) {
  DecoderOptions o;
  o.name = name;
  return o;
}

// The parameter grid every greedy strategy is checked over.
std::vector<Case> greedy_grid() {
  std::vector<Case> g;
  for (int n : {2, 3, 4, 8, 16, 64}) {
    DecoderOptions o = dec("jacobi");
    o.block = n;
    g.push_back({"jacobi n=" + std::to_string(n), o});
    o.running_window = true;
    g.push_back({"jacobi running n=" + std::to_string(n), o});
  }
  for (DraftInit init : {DraftInit::Random, DraftInit::Repeat}) {
    DecoderOptions o = dec("jacobi");
    o.init = init;
    g.push_back({"jacobi init=" + draft_init_name(init), o});
  }
  for (auto [W, N, G] : {std::tuple{1, 2, 1}, {4, 3, 4}, {5, 4, 2}, {8, 5, 8}, {3, 6, 0}, {15, 5, 15}}) {
    DecoderOptions o = dec("lookahead");
    o.window = W, o.ngram = N, o.guesses = G;
    g.push_back({"lookahead W=" + std::to_string(W) + " N=" + std::to_string(N) + " G=" + std::to_string(G), o});
  }
  DecoderOptions nopool = dec("lookahead");
  nopool.pool_from_prompt = false;
  g.push_back({"lookahead no prompt pool", nopool});
  for (auto [dm, nm] : {std::pair{1, 1}, {4, 2}, {8, 4}, {32, 4}}) {
    DecoderOptions o = dec("pld");
    o.draft_max = dm, o.ngram_max = nm;
    g.push_back({"pld draft=" + std::to_string(dm) + " ngram=" + std::to_string(nm), o});
    o.draft_adaptive = false;
    g.push_back({"pld fixed draft=" + std::to_string(dm) + " ngram=" + std::to_string(nm), o});
  }
  for (auto [n, K, r, pool] : {std::tuple{4, 2, 0.85f, 4}, {8, 2, 0.5f, 4}, {8, 3, 0.25f, 8}, {16, 4, 0.85f, 0},
                               {2, 2, 1.0f, 2}, {64, 2, 0.85f, 4}}) {
    DecoderOptions o = dec("multiblock");
    o.block = n, o.max_blocks = K, o.spawn_ratio = r, o.pool = pool;
    g.push_back({"multiblock n=" + std::to_string(n) + " K=" + std::to_string(K) + " r=" + std::to_string(r) +
                     " pool=" + std::to_string(pool), o});
  }
  DecoderOptions predict = dec("multiblock");  // the old spawn init, kept as an option
  predict.spawn_copy = false, predict.max_blocks = 3, predict.spawn_ratio = 0.5f;
  g.push_back({"multiblock spawn-init=predict K=3", predict});
  return g;
}

GenerationResult run(Session& s, const DecoderOptions& o, const std::vector<int32_t>& prompt, const GenerationConfig& cfg) {
  o.validate(cfg.sampling.greedy());
  return make_decoder(o)->generate(s, prompt, cfg);
}

void expect_same_as_ar(Session& s, const std::vector<int32_t>& prompt, const GenerationConfig& cfg, const std::string& what) {
  const GenerationResult ar = run(s, dec("ar"), prompt, cfg);
  for (const Case& c : greedy_grid()) {
    GenerationResult r;
    try {
      r = run(s, c.opt, prompt, cfg);
    } catch (const std::exception& e) {
      FAIL() << c.label << " on " << what << " threw: " << e.what();
    }
    ASSERT_EQ(r.tokens, ar.tokens) << c.label << " on " << what;
    ASSERT_EQ(r.stop, ar.stop) << c.label << " on " << what;
    ASSERT_LE(r.stats.n_forwards, ar.stats.n_forwards) << c.label << " on " << what;
  }
}

// ---------------------------------------------------------------- stories260K

class Stories260K : public ::testing::Test {
 protected:
  void SetUp() override {
    JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
    lm = load_model(path);
    cfg.eos_ids = {lm.tokenizer->eos()};
  }
  LoadedModel lm;
  GenerationConfig cfg;
};

TEST_F(Stories260K, GreedyStrategiesEqualArOverPromptsAndLengths) {
  Session s(*lm.model, 512);
  const char* prompts[] = {"", "Once upon a time", "Lily and Ben went to the park. They saw a big dog.",
                           "The cat", "Tom had a red ball. He liked to play with it every day. One day"};
  int i = 0;
  for (const char* p : prompts) {
    cfg.max_new_tokens = 40 + 37 * (i++ % 3);
    expect_same_as_ar(s, lm.tokenizer->encode(p, true, false), cfg, std::string("prompt '") + p + "'");
  }
}

// pld remembers earlier generations: one decoder over several prompts (and a prompt seen before) still
// returns AR's tokens, and the memory is what makes the repeated prompt fast. A small memory budget (texts
// longer than it, old texts dropped) changes nothing in the outputs either.
TEST_F(Stories260K, PldMemoryOfEarlierGenerationsIsLossless) {
  Session s(*lm.model, 512);
  const char* prompts[] = {"Once upon a time", "The cat", "Lily and Ben went to the park.", "Once upon a time"};
  cfg.max_new_tokens = 120;
  for (int budget : {1 << 16, 100}) {
    DecoderOptions o = dec("pld");
    o.draft_adaptive = false, o.draft_max = 8, o.ngram_memory = budget;
    o.validate(true);
    auto pld = make_decoder(o);
    for (int i = 0; i < 4; i++) {
      const auto prompt = lm.tokenizer->encode(prompts[i], true, false);
      const GenerationResult ar = run(s, dec("ar"), prompt, cfg);
      const GenerationResult r = pld->generate(s, prompt, cfg);
      ASSERT_EQ(r.tokens, ar.tokens) << "budget " << budget << " prompt " << i;
      ASSERT_EQ(r.stop, ar.stop);
      if (i == 3 && budget > 1000) {  // the whole earlier output is in memory
        EXPECT_GT(r.stats.counters.at("memory_hits"), 0);
        EXPECT_GT(r.stats.tpf(), 3.0);
      }
    }
  }
  // A reference corpus that holds the AR output itself: drafts come from it, the output stays AR's.
  const auto prompt = lm.tokenizer->encode("Once upon a time", true, false);
  const GenerationResult ar = run(s, dec("ar"), prompt, cfg);
  DecoderOptions o = dec("pld");
  o.draft_adaptive = false, o.ngram_memory = 0;
  o.corpus_tokens = lm.tokenizer->encode("Tom and Sue liked to play. ", false, false);
  o.corpus_tokens.insert(o.corpus_tokens.end(), ar.tokens.begin(), ar.tokens.end());
  const GenerationResult r = make_decoder(o)->generate(s, prompt, cfg);
  ASSERT_EQ(r.tokens, ar.tokens);
  EXPECT_GT(r.stats.counters.at("corpus_hits"), 0);
  EXPECT_GT(r.stats.tpf(), 3.0);
}

// With one block in flight and no recycling, multiblock is per-block Jacobi: the same drafts, so exactly
// the same forwards and accepted tokens (a draft misaligned by one position would still give AR's tokens,
// only more slowly; this catches it).
// What a server keeps of a finished request's cache for the next prompt (Generation::reusable_cache_prefix):
// after every forward of every strategy (greedy grid, sampling, a length limit or an end of text inside a
// draft), the first reusable slots hold exactly what a fresh prefill of those history tokens stores; and a
// generation started on that kept prefix returns what it returns from scratch.
TEST_F(Stories260K, ReusableCachePrefixHoldsTheHistorysKeysAndValues) {
  const ModelConfig& mc = lm.model->config();
  const int kv_dim = mc.n_kv_heads * mc.head_dim;
  Session fresh(*lm.model, 512);
  SequenceInput in;
  auto check = [&](Generation& gen, Session& s, const std::string& what) {
    const int L = gen.reusable_cache_prefix();
    const std::vector<int32_t>& h = gen.context().history();
    ASSERT_GE(L, 0);
    ASSERT_LE(L, static_cast<int>(h.size()) - 1);
    if (L == 0) return;
    fresh.cache().truncate(0);
    in.set_causal(&fresh.cache(), std::span<const int32_t>(h).first(static_cast<size_t>(L)), SequenceInput::Logits::None);
    fresh.forward(in);
    for (int layer = 0; layer < mc.n_layers; layer++)
      for (int slot = 0; slot < L; slot++) {
        ASSERT_EQ(s.cache().position(slot), slot) << what;
        for (int i = 0; i < kv_dim; i++) {
          ASSERT_EQ(s.cache().key(layer, slot, i), fresh.cache().key(layer, slot, i)) << what << " slot " << slot;
          ASSERT_EQ(s.cache().value(layer, slot, i), fresh.cache().value(layer, slot, i)) << what << " slot " << slot;
        }
      }
  };
  std::vector<Case> cases = greedy_grid();
  cases.push_back({"ar", dec("ar")});
  DecoderOptions sjd = dec("sjd");
  sjd.block = 4;
  sjd.draft_adaptive = false;  // a sampled output is reproducible only where the rows do not follow timings
  cases.push_back({"sjd sampled", sjd});
  const std::vector<int32_t> prompt = lm.tokenizer->encode("Lily and Ben went to the park. They saw a big dog.", true, false);
  for (const Case& c : cases) {
    for (int max_new : {5, 60}) {
      GenerationConfig g = cfg;
      g.max_new_tokens = max_new;
      if (c.opt.name == "sjd") g.sampling.temperature = 0.8f, g.sampling.seed = 3;
      Session s(*lm.model, 512);
      auto d = make_decoder(c.opt);
      Generation gen(*d, s, prompt, g, {}, 7);  // prefill in pieces: the prefix is checked during it too
      while (SequenceInput* next = gen.next_input()) {
        gen.consume(s.forward(*next), 0.0);
        check(gen, s, c.label + " max " + std::to_string(max_new));
        if (HasFatalFailure()) return;
      }
      // The kept prefix starts the same prompt again: the same result as from an empty cache.
      const int keep = gen.reusable_cache_prefix();
      const std::vector<int32_t> again = gen.context().history();
      s.cache().truncate(keep);
      auto d2 = make_decoder(c.opt), d3 = make_decoder(c.opt);
      const int reuse = std::min(keep, static_cast<int>(again.size()) - 1);
      Generation reused(*d2, s, again, g, {}, kPrefillChunk, reuse);
      while (SequenceInput* next = reused.next_input()) reused.consume(s.forward(*next), 0.0);
      Session s2(*lm.model, 512);
      EXPECT_EQ(reused.result().tokens, d3->generate(s2, again, g).tokens) << c.label;
      EXPECT_EQ(reused.result().stats.counters.count("prompt_tokens_reused"), reuse > 0 ? 1u : 0u) << c.label;
    }
  }
}

TEST_F(Stories260K, MultiblockWithOneBlockIsPerBlockJacobi) {
  Session s(*lm.model, 512);
  cfg.max_new_tokens = 96;
  for (int n : {3, 4, 8, 16}) {
    for (const char* p : {"Once upon a time", "Lily and Ben went to the park."}) {
      const std::vector<int32_t> prompt = lm.tokenizer->encode(p, true, false);
      DecoderOptions j = dec("jacobi"), m = dec("multiblock");
      j.block = m.block = n;
      j.draft_adaptive = m.draft_adaptive = false;  // the same rows each forward, whatever the timings
      m.max_blocks = 1, m.pool = 0;
      const GenerationResult rj = run(s, j, prompt, cfg), rm = run(s, m, prompt, cfg);
      EXPECT_EQ(rm.tokens, rj.tokens) << "n=" << n << " '" << p << "'";
      EXPECT_EQ(rm.stats.n_forwards, rj.stats.n_forwards) << "n=" << n << " '" << p << "'";
      EXPECT_EQ(rm.stats.n_forward_rows, rj.stats.n_forward_rows) << "n=" << n << " '" << p << "'";
    }
  }
}

TEST_F(Stories260K, EndOfGenerationInsideADraft) {
  // Ask for a long generation whose end-of-text token (BOS ends a story in this model, and '.' is frequent)
  // falls inside drafts: every strategy must stop at the same token.
  Session s(*lm.model, 512);
  cfg.max_new_tokens = 300;
  for (int32_t eos : {lm.tokenizer->bos(), lm.tokenizer->encode(".", false, false).back()}) {
    cfg.eos_ids = {eos};
    expect_same_as_ar(s, lm.tokenizer->encode("Once upon a time", true, false), cfg, "eos " + std::to_string(eos));
  }
}

TEST_F(Stories260K, LengthLimitsThatCutDraftsAndNearlyFullContext) {
  std::vector<int32_t> prompt = lm.tokenizer->encode("One day, a little girl named Lily", true, false);
  for (int n : {1, 2, 3, 5, 17}) {
    Session s(*lm.model, 512);
    cfg.max_new_tokens = n;
    expect_same_as_ar(s, prompt, cfg, "n=" + std::to_string(n));
  }
  for (int ctx : {static_cast<int>(prompt.size()), static_cast<int>(prompt.size()) + 1, static_cast<int>(prompt.size()) + 13}) {
    Session s(*lm.model, ctx);
    cfg.max_new_tokens = 100;
    expect_same_as_ar(s, prompt, cfg, "context " + std::to_string(ctx));
  }
}

TEST_F(Stories260K, OneTokenPrompt) {
  Session s(*lm.model, 512);
  cfg.max_new_tokens = 60;
  expect_same_as_ar(s, {lm.tokenizer->bos()}, cfg, "BOS only");
  expect_same_as_ar(s, {lm.tokenizer->encode("Once", false, false).back()}, cfg, "one word");
}

// ---------------------------------------------------------------- random models

// ffn_dim 576 (> kPackMaxCols): F16 weights in fp32 and F16 panels in one model.
TEST(RandomModels, GreedyStrategiesEqualAr) {
  for (auto [ffn_dim, type] : {std::pair{0, DType::F16}, {576, DType::F16}, {0, DType::Q8_0}, {0, DType::Q4_0}}) {
    ModelConfig c = preset_config("tiny");
    if (ffn_dim) c.ffn_dim = ffn_dim;
    auto m = random_model(c, type, 11);
    Session s(*m, 256);
    GenerationConfig cfg;
    cfg.max_new_tokens = 50;
    expect_same_as_ar(s, {1, 5, 9, 5, 9}, cfg, "random tiny, ffn " + std::to_string(c.ffn_dim) + " " + dtype_name(type));
  }
}

// Every architecture's own operations (q/k norms, fused matrices, partial rotary, LongRoPE, soft-caps) keep
// each decoder lossless; gemma's sliding window (8 positions, 50 new tokens) too, however a decoder places its
// speculative rows in the cache.
TEST(RandomModels, GreedyStrategiesEqualArOnEveryArchitecture) {
  for (const char* preset : {"qwen3-tiny", "phi3-tiny", "gemma2-tiny", "gemma3-tiny"}) {
    auto m = random_model(preset_config(preset), DType::F16, 13);
    Session s(*m, 256);
    GenerationConfig cfg;
    cfg.max_new_tokens = 50;
    expect_same_as_ar(s, {1, 5, 9, 5, 9}, cfg, preset);
  }
}

// With an F16 KV cache the strategies still return AR's tokens (AR with the same cache type): rounding the
// cache changes no batch invariance.
// Every decoder stays lossless on K-quant models: GGML's q4_k_m mix (Q4_K + Q6_K), q5_k_m (Q5_K + Q6_K) and
// iq4_xs (IQ4_XS + Q5_K + Q6_K).
TEST(RandomModels, GreedyStrategiesEqualArOnKQuantModels) {
  ModelConfig c = preset_config("tiny");
  c.dim = 256, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64, c.rope_dim = 64, c.ffn_dim = 512;
  for (const char* name : {"q4_k_m", "q5_k_m", "iq4_xs"}) {
    WeightScheme scheme;
    ASSERT_TRUE(weight_scheme_from_name(name, &scheme));
    Model m(c, random_tensors(c, scheme, 11), "memory");
    Session s(m, 256);
    GenerationConfig cfg;
    cfg.max_new_tokens = 50;
    expect_same_as_ar(s, {1, 5, 9, 5, 9}, cfg, std::string("random 256-wide ") + name);
  }
}

TEST(RandomModels, GreedyStrategiesEqualArWithAnF16Cache) {
  auto m = random_model(preset_config("tiny"), DType::F16, 12);
  Session s(*m, 256, DType::F16);
  ASSERT_EQ(s.cache().type(), DType::F16);
  GenerationConfig cfg;
  cfg.max_new_tokens = 50;
  expect_same_as_ar(s, {1, 5, 9, 5, 9}, cfg, "random tiny, f16 cache");
}

// A prompt longer than a prefill chunk goes through the model in pieces; the generation is the one a single
// forward over the whole prompt leads to, token for token.
TEST(RandomModels, ChunkedPrefillEqualsOneForward) {
  auto m = random_model(preset_config("tiny"), DType::F16, 5);
  const int V = m->config().vocab_size;
  std::vector<int32_t> prompt;
  for (int i = 0; i < 2 * kPrefillChunk + 77; i++) prompt.push_back(static_cast<int32_t>((i * 37 + i / 5) % V));
  GenerationConfig cfg;
  cfg.max_new_tokens = 24;
  Session s(*m, 2 * kPrefillChunk + 200);
  const GenerationResult chunked = run(s, dec("ar"), prompt, cfg);

  Transformer tf(m->config(), m->weights());
  KvCache cache(m->config(), 2 * kPrefillChunk + 200);
  SequenceInput in;
  in.set_causal(&cache, std::span<const int32_t>(prompt).first(prompt.size() - 1), SequenceInput::Logits::None);
  tf.forward(in);
  std::vector<int32_t> tokens;
  int32_t next = prompt.back();
  for (int i = 0; i < cfg.max_new_tokens; i++) {
    const int32_t one[1] = {next};
    in.set_causal(&cache, one, SequenceInput::Logits::Last);
    next = static_cast<int32_t>(argmax(tf.forward(in).logits(0), V));
    tokens.push_back(next);
  }
  EXPECT_EQ(chunked.tokens, tokens);
  EXPECT_EQ(chunked.stats.n_prompt, static_cast<int>(prompt.size()));
}

// ---------------------------------------------------------------- fake model: exact scenarios

std::vector<int32_t> repeating_text(int n, int vocab) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; i++) t.push_back(static_cast<int32_t>((i % 7 == 0 ? 3 : (i * 5) % vocab) % vocab));
  return t;
}

TEST(FakeModel, GreedyStrategiesEqualArAndRespectGeometry) {
  const int V = 50;
  std::vector<int32_t> text = repeating_text(400, V);
  test::FakeModel fake(V, test::oracle_rule(text, V));
  Session s(fake, 300);
  GenerationConfig cfg;
  cfg.max_new_tokens = 120;
  std::vector<int32_t> prompt(text.begin(), text.begin() + 10);
  expect_same_as_ar(s, prompt, cfg, "fake oracle");
  // The oracle text is predictable: drafting strategies must beat one token per forward on it.
  // (pld's fixed draft policy: the adaptive one weighs acceptance against the fake's meaningless timings.)
  for (const char* name : {"pld", "lookahead"}) {
    DecoderOptions o = dec(name);
    o.draft_adaptive = false;
    GenerationResult r = run(s, o, prompt, cfg);
    EXPECT_GT(r.stats.tpf(), 1.5) << name;
  }
  cfg.eos_ids = {text[40]};  // an end token early in the text, inside drafts
  expect_same_as_ar(s, prompt, cfg, "fake oracle with eos");
}

TEST(FakeModel, ContextFullStopsWhereArStops) {
  const int V = 30;
  std::vector<int32_t> text = repeating_text(200, V);
  test::FakeModel fake(V, test::oracle_rule(text, V));
  GenerationConfig cfg;
  cfg.max_new_tokens = 1000;
  for (int ctx : {5, 6, 9, 40}) {
    Session s(fake, ctx);
    expect_same_as_ar(s, std::vector<int32_t>(text.begin(), text.begin() + 5), cfg, "context " + std::to_string(ctx));
  }
}

// ---------------------------------------------------------------- pld's draft length policy

// The n-gram index finds the longest suffix (min_n..ngram_max tokens) that occurred earlier with a token after
// it, at its most recent occurrence: checked against a brute-force search over a long text from a small
// vocabulary (many repeats, so the tables grow and probe), indexed in uneven steps.
TEST(NgramIndex, FindsTheMostRecentLongestMatch) {
  Rng rng(3);
  std::vector<int32_t> text;
  NgramIndex index(4);
  for (int step = 0; step < 400; step++) {
    const int add = 1 + static_cast<int>(rng.below(40));
    for (int i = 0; i < add; i++) text.push_back(static_cast<int32_t>(rng.below(step % 3 == 0 ? 3 : 12)));
    index.extend(text, text.size() - 1);
    const std::span<const int32_t> t(text);
    for (int min_n : {1, 3}) {
      size_t next = 0;
      const int n = index.longest_match(t, t, min_n, &next);
      int want_n = 0;
      size_t want_next = 0;
      for (int m = std::min<int>(4, static_cast<int>(text.size())); m >= min_n && want_n == 0; m--)
        for (size_t e = text.size() - 1; e >= static_cast<size_t>(m); e--)  // occurrences ending before the suffix
          if (std::equal(text.end() - m, text.end(), text.begin() + static_cast<std::ptrdiff_t>(e - m))) {
            want_n = m, want_next = e;
            break;
          }
      ASSERT_EQ(n, want_n) << "step " << step << " min_n " << min_n;
      if (n > 0) {
        ASSERT_EQ(next, want_next) << "step " << step;
      }
    }
  }
}

TEST(RowCostModel, LearnsTheCostOfAnExtraRow) {
  RowCostModel m;
  EXPECT_DOUBLE_EQ(m.relative(3), 1.0 + 2 * RowCostModel::kDefaultRowCost);  // no data yet
  for (int i = 0; i < 50; i++) {
    m.record(1, 1.0e-3);
    m.record(3, 1.6e-3);  // 0.3 per extra row
    m.record(200, 1.0);   // a prefill: ignored
  }
  m.record(3, 50e-3);  // one preempted forward moves the estimate only a little
  EXPECT_NEAR(m.per_row(), 0.3, 0.05);
  EXPECT_NEAR(m.relative(5), 2.2, 0.2);
}

// A forward's cost is not linear in its rows (memory-bound, then compute-bound): each row count seen is
// remembered on its own, interpolated between, and extrapolated past the largest along the extra-row cost.
TEST(RowCostModel, LearnsTheShapeOfTheCurve) {
  RowCostModel m;
  for (int i = 0; i < 20; i++) m.record(1, 1.0e-3), m.record(4, 1.2e-3), m.record(8, 2.4e-3);
  EXPECT_NEAR(m.relative(4), 1.2, 1e-9);
  EXPECT_NEAR(m.relative(8), 2.4, 1e-9);
  EXPECT_NEAR(m.relative(6), 1.8, 1e-9);
  EXPECT_NEAR(m.relative(2), 1.0 + 0.2 / 3, 1e-9);
  EXPECT_GT(m.relative(12), 2.4);
  // A curve measured beforehand (or a synthetic one) replaces the timings.
  m.set_curve({{1, 0.02}, {4, 0.03}, {8, 0.06}});
  EXPECT_TRUE(m.fixed());
  m.record(4, 1.0);
  EXPECT_NEAR(m.relative(4), 1.5, 1e-9);
  EXPECT_NEAR(m.relative(6), 2.25, 1e-9);
  EXPECT_NEAR(m.relative(16), 6.0, 1e-9);
  m.set_curve({});
  EXPECT_NEAR(m.relative(8), 2.4, 1e-9);  // back to what was learned
}

// The rule: the chain prefix with the most expected tokens per unit of cost; a group of rows only if its
// gain outweighs the forward's growth; another sequence's rows in the same forward price ours at the margin.
TEST(RowPricer, SendsWhatPays) {
  RowCostModel cost;
  cost.set_curve({{1, 1.0}, {64, 1.0 + 0.1 * 63}});
  const RowPricer price(cost);
  const std::vector<double> p = {0.9, 0.9, 0.1};
  EXPECT_EQ(price.best_chain(p), 2);  // 1.9 / 1.1 < 2.71 / 1.2 > 2.791 / 1.3
  EXPECT_EQ(price.best_chain(std::vector<double>{0.05, 0.9}), 0);
  EXPECT_TRUE(price.pays(1.0, 1, 0.2, 1));    // 1.2 / 1.1 > 1
  EXPECT_FALSE(price.pays(2.0, 3, 0.1, 1));   // 2.1 / 1.3 < 2 / 1.2
  RowCostModel knee;  // free up to 8 rows, then each row a full forward's share
  knee.set_curve({{1, 1.0}, {8, 1.0}, {16, 2.0}});
  EXPECT_EQ(RowPricer(knee).best_chain(std::vector<double>{0.1, 0.1, 0.1}), 3);
  EXPECT_NEAR(RowPricer(knee, 8).relative(2), 1.25 / 1.125, 1e-9);  // rows 9 and 10 of a batch of 8 others
  EXPECT_EQ(RowPricer(knee, 8).best_chain(std::vector<double>{0.1, 0.1, 0.1}), 0);
  // Rows sent beside the first k tokens (a tree around the chain) are priced with them: 8 more beside the
  // second token make 2.71 / 2.0 < 1.9 / 1.1, so one token; 20 beside any, nothing pays (2.71 / 3.2 < 1);
  // within the knee they are free.
  EXPECT_EQ(price.best_chain(p, 1.0, 1, {}, nullptr, std::vector<int>{0, 8, 8}), 1);
  EXPECT_EQ(price.best_chain(p, 1.0, 1, {}, nullptr, std::vector<int>{20, 20, 20}), 0);
  EXPECT_EQ(RowPricer(knee).best_chain(std::vector<double>{0.1, 0.1, 0.1}, 1.0, 1, {}, nullptr, std::vector<int>{1, 2, 3}), 3);
}

// Slow early multi-row forwards (a thread schedule being tried out) neither decide the estimate nor stop
// drafting for good: the median ignores a minority of them, and an estimate that stopped all drafting is
// retried after kStale one-row forwards.
TEST(RowCostModel, RecoversFromSlowEarlyForwards) {
  RowCostModel m;
  m.record(1, 1.0e-3);
  m.record(3, 9.0e-3);  // 4 per extra row: a bad schedule's trial
  EXPECT_LE(m.per_row(), RowCostModel::kDefaultRowCost);  // still exploring
  for (int i = 0; i < 4; i++) m.record(3, 1.4e-3);  // 0.2 per extra row
  m.record(2, 5.0e-3);
  EXPECT_NEAR(m.per_row(), 0.2, 1e-9);
  RowCostModel stuck;
  stuck.record(1, 1.0e-3);
  for (int i = 0; i < 8; i++) stuck.record(2, 4.0e-3);  // 3 per extra row: the decoder stops drafting
  EXPECT_NEAR(stuck.per_row(), 3.0, 1e-9);
  for (int i = 0; i < RowCostModel::kStale; i++) stuck.record(1, 1.0e-3);
  EXPECT_LE(stuck.per_row(), RowCostModel::kDefaultRowCost);  // so it tries again
  stuck.record(2, 1.1e-3);
  EXPECT_NEAR(stuck.per_row(), 3.0, 1e-9);  // one cheap sample is a minority of the window
}

// The length chosen is the one with the most expected tokens per unit of time, and it follows what has
// been observed: reliable long matches get long drafts, unreliable ones none, and cheap rows more.
TEST(DraftLengthPolicy, ChoosesTheLengthThatPays) {
  RowCostModel costly, cheap;
  for (int i = 0; i < 30; i++) {
    costly.record(1, 1.0), costly.record(2, 1.4);  // 0.4 per row
    cheap.record(1, 1.0), cheap.record(2, 1.02);   // 0.02 per row
  }
  DraftLengthPolicy p(/*ngram_max=*/2, /*draft_max=*/8);
  // Before any evidence every case is worth trying where rows are cheap.
  EXPECT_GE(p.choose(1, 8, cheap), 2);
  for (int i = 0; i < 200; i++) {
    p.record(1, 1, 0);                   // 1-token matches: the first draft token always fails
    p.record(2, 8, i % 10 == 0 ? 3 : 8);  // 2-token matches: almost always all accepted
  }
  EXPECT_LT(p.p_accept(1, 0), 0.02);
  EXPECT_GT(p.p_accept(2, 0), 0.98);
  EXPECT_EQ(p.choose(1, 8, costly), 0);
  EXPECT_EQ(p.choose(1, 8, cheap), 0);
  EXPECT_EQ(p.choose(2, 8, cheap), 8);
  EXPECT_EQ(p.choose(2, 5, costly), 5);  // never more than proposed
  // A mediocre case: 30% per token pays where rows cost 2% but not where they cost 40%.
  DraftLengthPolicy q(1, 4);
  for (int i = 0; i < 500; i++) q.record(1, 4, i % 10 < 3 ? 1 : 0);
  EXPECT_NEAR(q.p_accept(1, 0), 0.3, 0.05);
  EXPECT_EQ(q.choose(1, 4, costly), 0);
  EXPECT_GE(q.choose(1, 4, cheap), 1);
}

// A case stopped after unlucky first tries is tried again now and then, or its estimate would never change:
// the Jacobi decoder on the code model once saw 1 of its first 8 predictions accepted (true rate ~0.5) and
// sent nothing for the rest of the run. A retry sends the first token where it pays at 1/2, and the decision
// after it too (the prediction a retried guess makes); where a row costs a whole forward it never pays.
TEST(DraftLengthPolicy, RetriesACaseItStoppedSending) {
  constexpr int kGuess = 1, kPredicted = 2;
  RowCostModel cost, steep;
  cost.set_curve({{1, 1.0}, {2, 1.26}, {64, 1.0 + 0.26 * 63}});
  steep.set_curve({{1, 1.0}, {64, 64.0}});
  for (const RowCostModel* c : {&cost, &steep}) {
    DraftLengthPolicy p(2, 7);
    const std::vector<int> guess = {kGuess}, predicted = {kPredicted};
    for (int i = 0; i < 8; i++) {
      p.record(guess, 1, 0);
      p.record(predicted, 1, i == 0 ? 1 : 0);
    }
    ASSERT_NEAR(p.p_accept(kPredicted, 0), 0.2, 1e-9);
    const std::vector<int> guesses(7, kGuess), after_guess = {kPredicted, kGuess, kGuess, kGuess, kGuess, kGuess};
    for (int round = 0; round < 3; round++) {
      for (int i = 0; i + 1 < DraftLengthPolicy::kRetry; i++)
        ASSERT_EQ(p.choose(guesses, *c, 1.0, 1, kGuess, kPredicted), 0) << round << " " << i;
      const bool pays = c == &cost;
      EXPECT_EQ(p.choose(guesses, *c, 1.0, 1, kGuess, kPredicted), pays ? 1 : 0) << round;
      EXPECT_EQ(p.choose(after_guess, *c, 1.0, 1, kGuess, kPredicted), pays ? 1 : 0) << round;
    }  // (nothing was recorded, so the next round's decisions are priced as before)
  }
}

// A draft is sent only when it beats sending nothing by RowPricer::kMargin: a gain within a measured cost
// curve's error (one run measured the default model's time(2)/time(1) at 1.02, most at 1.05-1.14, and its
// decoders then sent rows that lost 8%) is not worth the risk.
TEST(RowPricer, SendsOnlyWhatBeatsNothingByTheMargin) {
  RowCostModel cost;
  cost.set_curve({{1, 1.0}, {2, 1.05}, {64, 1.0 + 0.05 * 63}});
  const RowPricer price(cost);
  // One draft token: (1 + p) / 1.05 against 1 pays from p = 0.05 without the margin, from 0.0815 with it.
  const std::vector<double> below{0.07}, above{0.09};
  EXPECT_EQ(price.best_chain(below), 0);
  EXPECT_EQ(price.best_chain(above), 1);
  EXPECT_FALSE(price.pays(1.0, 1, 0.07, 1));
  EXPECT_TRUE(price.pays(1.0, 1, 0.09, 1));
}

// A retry that is rejected doubles the wait for the next one (up to kMaxRetry decisions; two in a row each
// time, as above): where drafting does not pay, fixed retries cost ~2% of the forwards. An accepted one
// brings them back to every kRetry-th decision.
TEST(DraftLengthPolicy, RetriesBackOffWhileRejected) {
  RowCostModel cost;
  cost.set_curve({{1, 1.0}, {2, 1.26}, {64, 1.0 + 0.26 * 63}});
  DraftLengthPolicy p(1, 4);
  const std::vector<int> kinds(4, 1);
  for (int i = 0; i < 64; i++) p.record(kinds, 1, 0);  // never accepted: the priced choice sends nothing
  auto gaps_until_sent = [&](int sends, int accepted) {  // decisions from one send to the next
    std::vector<int64_t> gaps;
    for (int64_t since = 1; static_cast<int>(gaps.size()) < sends; since++)
      if (p.choose(kinds, cost) > 0) gaps.push_back(since), since = 0, p.record(kinds, 1, accepted);
    return gaps;
  };
  constexpr int64_t R = DraftLengthPolicy::kRetry, M = DraftLengthPolicy::kMaxRetry;
  EXPECT_EQ(gaps_until_sent(7, 0), (std::vector<int64_t>{R, 1, 4 * R, 1, M, 1, M}));
  EXPECT_EQ(gaps_until_sent(1, 1), std::vector<int64_t>{1});  // the pair's second, accepted
  EXPECT_EQ(gaps_until_sent(2, 0), (std::vector<int64_t>{R, 1}));
}

// ---------------------------------------------------------------- parameters

TEST(DecoderOptions, BadValuesAreErrors) {
  auto bad = [](std::function<void(DecoderOptions&)> f, bool greedy = true) {
    DecoderOptions o;
    f(o);
    EXPECT_THROW(o.validate(greedy), Error);
  };
  bad([](auto& o) { o.name = "nope"; });
  bad([](auto& o) { o.name = "jacobi", o.block = 0; });
  bad([](auto& o) { o.name = "lookahead", o.ngram = 1; });
  bad([](auto& o) { o.name = "lookahead", o.guesses = -1; });
  bad([](auto& o) { o.name = "lookahead", o.window = 0; });
  bad([](auto& o) { o.name = "multiblock", o.max_blocks = 0; });
  bad([](auto& o) { o.name = "multiblock", o.spawn_ratio = 0.0f; });
  bad([](auto& o) { o.name = "multiblock", o.spawn_ratio = 1.5f; });
  bad([](auto& o) { o.name = "sjd"; });                          // sjd with --temp 0
  bad([](auto& o) { o.name = "jacobi"; }, /*greedy=*/false);    // jacobi with sampling
  bad([](auto& o) { o.name = "multiblock"; }, /*greedy=*/false);
  DecoderOptions ok;
  ok.name = "lookahead";
  EXPECT_NO_THROW(ok.validate(false));
}

}  // namespace
}  // namespace jf
