// Tests that see speed: on fake models whose acceptance is known, each strategy's drafting mechanism must
// fire (its counters) and buy tokens per forward (TPF floors derived from the oracle), while the output stays
// AR's. A strategy that fell back to one token per forward fails every floor here.
#include <cstdio>

#include "base/rng.h"
#include "decode/multiblock.h"
#include "decode/options.h"
#include "fake_model.h"
#include "test_support.h"

namespace jf {
namespace {

DecoderOptions dec(const std::string& name) {
  DecoderOptions o;
  o.name = name;
  return o;
}

GenerationResult run(Session& s, const DecoderOptions& o, const std::vector<int32_t>& prompt, const GenerationConfig& cfg) {
  o.validate(cfg.sampling.greedy());
  return make_decoder(o)->generate(s, prompt, cfg);
}

// A cycle of `period` distinct tokens: a token determines its successors, so n-gram pools and recycled
// sequences keyed by a token propose the right continuation.
std::vector<int32_t> cycle_text(int n, int period, int offset) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; i++) t.push_back(static_cast<int32_t>(offset + (i * 7) % period));
  return t;
}

// Random text over a vocabulary large enough that its own n-grams hardly repeat.
std::vector<int32_t> random_text(int n, int vocab, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> t;
  for (int i = 0; i < n; i++) t.push_back(static_cast<int32_t>(rng.below(static_cast<uint32_t>(vocab))));
  return t;
}

struct Oracle {
  int V;
  std::vector<int32_t> text;
  test::FakeModel fake;
  Session s;
  std::vector<int32_t> prompt;
  GenerationConfig cfg;
  GenerationResult ar;
  Oracle(int vocab, std::vector<int32_t> t, bool by_position, int prompt_len, int n_new)
      : V(vocab), text(std::move(t)),
        fake(V, by_position ? test::position_rule(text, V) : test::oracle_rule(text, V)),
        s(fake, prompt_len + n_new + 64), prompt(text.begin(), text.begin() + prompt_len) {
    // Rows priced as free (the fake's own timings mean nothing): every row that adds tokens is sent, so the
    // floors below measure the drafting mechanisms; the RowPricing tests price them otherwise.
    s.row_cost().set_curve({{1, 1.0}, {1024, 1.0}});
    cfg.max_new_tokens = n_new;
    ar = run(s, dec("ar"), prompt, cfg);
  }
  GenerationResult check(const DecoderOptions& o, const std::string& what) {
    GenerationResult r = run(s, o, prompt, cfg);
    EXPECT_EQ(r.tokens, ar.tokens) << what;
    std::printf("%-40s TPF %.2f\n", what.c_str(), r.stats.tpf());
    return r;
  }
};

// ---------------------------------------------------------------- multiblock

// With the default r = 0.85, ceil(r*n) = n for n <= 6: a block with n accepted has nothing left to spawn
// in, so before the cap at n - 1 no block size up to 6 ever spawned. On the text-following oracle with
// random guesses a block accepts one token per step, so it passes n - 1 accepted with budget left.
TEST(MultiblockSpeed, SpawnsAndPromotesAtEveryBlockSize) {
  Oracle o(64, random_text(400, 64, 5), /*by_position=*/false, 8, 150);
  for (int n : {2, 3, 4, 6, 8, 16}) {
    DecoderOptions m = dec("multiblock");
    m.block = n, m.init = DraftInit::Random;
    const GenerationResult r = o.check(m, "multiblock n=" + std::to_string(n));
    EXPECT_GT(r.stats.counter("blocks_spawned"), 0) << "n=" << n;
    EXPECT_GT(r.stats.counter("blocks_promoted"), 0) << "n=" << n;
  }
}

// On the position oracle a block converges after one Jacobi step. With K = 1 a block of 8 takes two forwards
// (TPF 4); with K = 2 a block spawned after the first step converges while the real-active block is
// verified, and the promoted block then commits all n tokens in one forward: 16 tokens per 3 forwards.
TEST(MultiblockSpeed, SecondBlockBeatsOneBlockWhereTheOracleRewardsIt) {
  Oracle o(40, cycle_text(1000, 37, 2), /*by_position=*/true, 8, 200);
  DecoderOptions m = dec("multiblock");
  m.block = 8, m.spawn_ratio = 0.1f, m.pool = 0, m.init = DraftInit::Random;
  m.max_blocks = 1;
  const GenerationResult one = o.check(m, "multiblock K=1");
  m.max_blocks = 2;
  const GenerationResult two = o.check(m, "multiblock K=2");
  EXPECT_NEAR(one.stats.tpf(), 4.0, 0.2);
  EXPECT_GT(two.stats.tpf(), 5.0);
  EXPECT_GT(two.stats.counter("blocks_spawned"), 10);
  EXPECT_GT(two.stats.counter("blocks_promoted"), 10);
  // The paper's spawn (a copy of the real-active tail) and the predicted-first-token variant both converge.
  m.spawn_copy = false;
  EXPECT_GT(o.check(m, "multiblock K=2 spawn-init=predict").stats.tpf(), 5.0);
}

// A fresh block's random draft loses to a recycled sequence that contains the pending token. The previous
// step accepted everything and pushed nothing, so the newest pool entry is an old tail, not the current
// draft: with pool = 1 it is the only entry, and skipping it (as before) recycled nothing at all. (On this
// oracle a block takes two forwards either way: a recycled tail is one token short of a block.)
TEST(MultiblockSpeed, RecyclingUsesTheNewestEntryAfterAFullAccept) {
  Oracle o(40, cycle_text(1000, 5, 3), /*by_position=*/true, 8, 200);
  DecoderOptions m = dec("multiblock");
  m.block = 8, m.max_blocks = 1, m.init = DraftInit::Random, m.pool = 1;
  const GenerationResult one = o.check(m, "multiblock pool=1");
  EXPECT_GT(one.stats.counter("recycle_wins"), 10);
  // K = 2 with the default pool: spawning, promotion and recycling all at work, AR's tokens, and faster.
  m.max_blocks = 2, m.pool = 4, m.spawn_ratio = 0.1f;
  const GenerationResult two = o.check(m, "multiblock K=2 pool=4");
  EXPECT_GT(two.stats.counter("blocks_spawned"), 10);
  EXPECT_GT(two.stats.counter("blocks_promoted"), 10);
  EXPECT_GT(two.stats.counter("recycle_wins"), 5);
  EXPECT_GT(two.stats.tpf(), one.stats.tpf() + 1.0);
}

// A pseudo-active block's first token is pseudo-accepted only when the row before the block predicted it.
// A copied or guessed first token that disagrees with that prediction is replaced by it, nothing is
// accepted, and the rest shifts as a Jacobi step; one that agrees is accepted as usual.
TEST(MultiblockPseudo, AGuessedFirstTokenIsNotPseudoAccepted) {
  PseudoBlock b;
  b.draft = {7, 1, 2, 3};  // 7: copied from the real-active block, not predicted
  advance_pseudo(b, {1, 2, 3, 9}, /*before=*/5);
  EXPECT_TRUE(b.acc.empty());
  EXPECT_EQ(b.draft, (std::vector<int32_t>{5, 1, 2, 3}));
  EXPECT_TRUE(b.first_predicted);
  // Now predicted: the next step accepts it and the draft tokens its rows confirm.
  advance_pseudo(b, {1, 2, 3, 8}, /*before=*/6);
  EXPECT_EQ(b.acc, (std::vector<int32_t>{5, 1, 2, 3}));
  EXPECT_TRUE(b.draft.empty());
  EXPECT_EQ(b.after, 8);
  // A guess the row before happens to predict is accepted at once.
  PseudoBlock c;
  c.draft = {5, 1, 4};
  advance_pseudo(c, {1, 2, 0}, /*before=*/5);
  EXPECT_EQ(c.acc, (std::vector<int32_t>{5, 1}));
  EXPECT_EQ(c.draft, (std::vector<int32_t>{2}));
}

// With a draft layer's shifted drafts, the last pseudo-accepted row's draft takes the place after the new
// first token (the row-predicted one there was conditioned on a rejected token); without, the step is Jacobi's.
TEST(MultiblockPseudo, TheLastAcceptedRowsShiftedDraftLeads) {
  PseudoBlock b;
  b.draft = {5, 1, 4, 6, 7};
  b.first_predicted = true;
  PseudoBlock plain = b;
  EXPECT_TRUE(advance_pseudo(b, {1, 2, 3, 8, 9}, 5, {20, 21, 22, 23, 24}));
  EXPECT_FALSE(advance_pseudo(plain, {1, 2, 3, 8, 9}, 5));
  EXPECT_EQ(b.acc, (std::vector<int32_t>{5, 1}));
  EXPECT_EQ(plain.draft, (std::vector<int32_t>{2, 3, 8}));  // 2 from row 1 (accepted), 3 and 8 from rejected rows
  EXPECT_EQ(b.draft, (std::vector<int32_t>{2, 21, 8}));    // row 1's shifted draft for the token after its 2
  // no room after the first token: nothing to lead
  PseudoBlock c;
  c.draft = {5, 1, 4};
  c.first_predicted = true;
  EXPECT_FALSE(advance_pseudo(c, {1, 2, 0}, 5, {20, 21, 22}));
  EXPECT_EQ(c.draft, (std::vector<int32_t>{2}));
}

// ---------------------------------------------------------------- lookahead, pld, jacobi

// Without the prompt's n-grams the pool only has what the 2-D window generated: hits prove the window works.
TEST(LookaheadSpeed, WindowAloneProducesHits) {
  Oracle o(40, cycle_text(1000, 11, 3), /*by_position=*/true, 8, 200);
  for (auto [W, N, G] : {std::tuple{2, 2, 2}, {4, 3, 4}, {5, 4, 2}}) {
    DecoderOptions l = dec("lookahead");
    l.window = W, l.ngram = N, l.guesses = G, l.pool_from_prompt = false;
    const std::string what = "lookahead W=" + std::to_string(W) + " N=" + std::to_string(N) + " G=" + std::to_string(G);
    const GenerationResult r = o.check(l, what);
    EXPECT_GT(r.stats.counter("pool_hits"), 20) << what;
    EXPECT_GT(r.stats.tpf(), 1.5) << what;
  }
}

// The text-following oracle on random text: the text itself has no repeats, so every draft comes from the
// corpus or from the memory of an earlier generation, and the whole output is in there.
TEST(PldSpeed, CorpusAndMemoryHits) {
  Oracle o(500, random_text(400, 500, 9), /*by_position=*/false, 10, 150);
  DecoderOptions p = dec("pld");
  p.draft_adaptive = false, p.draft_max = 8, p.ngram_memory = 0;
  const GenerationResult alone = o.check(p, "pld, no corpus or memory");
  EXPECT_LT(alone.stats.tpf(), 1.3);  // the control: no repeats to draft from
  p.corpus_tokens = std::vector<int32_t>(o.text.begin() + 5, o.text.end());
  const GenerationResult corpus = o.check(p, "pld corpus");
  EXPECT_GT(corpus.stats.counter("corpus_hits"), 10);
  EXPECT_GT(corpus.stats.tpf(), 5.0);
  p.corpus_tokens.clear();
  p.ngram_memory = 1 << 16;
  p.validate(true);
  auto pld = make_decoder(p);
  const GenerationResult first = pld->generate(o.s, o.prompt, o.cfg);
  const GenerationResult second = pld->generate(o.s, o.prompt, o.cfg);
  EXPECT_EQ(second.tokens, o.ar.tokens);
  EXPECT_EQ(first.stats.counter("memory_hits"), 0);
  EXPECT_GT(second.stats.counter("memory_hits"), 10);
  EXPECT_GT(second.stats.tpf(), 5.0);
}

// TPF floors where the position oracle makes the gain predictable (computed in each comment).
TEST(TpfFloors, EveryGreedyStrategyOnThePositionOracle) {
  Oracle o(40, cycle_text(1000, 37, 2), /*by_position=*/true, 8, 240);
  DecoderOptions j = dec("jacobi");
  j.block = 8, j.init = DraftInit::Random;
  EXPECT_NEAR(o.check(j, "jacobi n=8").stats.tpf(), 4.0, 0.2);  // a block: one guessing step, one verifying
  j.running_window = true;
  // running: every row is right, so a step accepts what the last one predicted; the k + 1 fresh guesses
  // appended after accepting k are accepted next time: k and 6 - k alternate, TPF >= 4
  EXPECT_GT(o.check(j, "jacobi running n=8").stats.tpf(), 3.9);
  DecoderOptions m = dec("multiblock");  // defaults (n = 4, K = 2): at least per-block Jacobi's 2
  m.init = DraftInit::Random;
  EXPECT_GT(o.check(m, "multiblock defaults").stats.tpf(), 1.9);
  DecoderOptions l = dec("lookahead");
  l.pool_from_prompt = false, l.window = 4, l.ngram = 4, l.guesses = 4;
  EXPECT_GT(o.check(l, "lookahead W=4 N=4 G=4").stats.tpf(), 2.5);
  DecoderOptions p = dec("pld");  // the cycle repeats every 37 tokens: after one period all drafts hit
  p.draft_adaptive = false;
  EXPECT_GT(o.check(p, "pld draft-max=8").stats.tpf(), 3.5);
}

// ---------------------------------------------------------------- row pricing

// The decoders of the issue with their default parameters, and sjd.
std::vector<DecoderOptions> priced_decoders() {
  std::vector<DecoderOptions> ds;
  for (const char* name : {"jacobi", "lookahead", "multiblock", "pld"}) ds.push_back(dec(name));
  DecoderOptions j8 = dec("jacobi");
  j8.block = 8;
  ds.push_back(j8);
  DecoderOptions m8 = dec("multiblock");
  m8.block = 8, m8.spawn_ratio = 0.1f;
  ds.push_back(m8);
  DecoderOptions la = dec("lookahead");
  la.window = 4, la.ngram = 4, la.guesses = 4;
  ds.push_back(la);
  return ds;
}

std::string label(const DecoderOptions& o) { return o.name + " block=" + std::to_string(o.block) + " W=" + std::to_string(o.window); }

double rows_per_forward(const GenerationResult& r) { return double(r.stats.n_forward_rows) / std::max<int64_t>(1, r.stats.n_forwards); }

// Where every extra row costs as much as a whole forward no draft can pay (a draft token adds at most one
// token): every decoder falls back to one row per forward, and still returns ar's tokens. Without the
// pricing each would send its drafts, windows and blocks.
TEST(RowPricing, RowsAreCutWhereTheyCannotPay) {
  Oracle o(40, cycle_text(1000, 37, 2), /*by_position=*/true, 8, 120);
  o.s.row_cost().set_curve({{1, 1.0}, {2, 2.0}, {64, 64.0}});
  for (const DecoderOptions& d : priced_decoders()) {
    const GenerationResult r = o.check(d, label(d) + ", steep cost");
    EXPECT_EQ(r.stats.n_forward_rows, r.stats.n_forwards) << label(d);
    EXPECT_NEAR(r.stats.tpf(), 1.0, 1e-9) << label(d);
  }
  // The same with the pricing switched off: the rows are sent (the control).
  for (DecoderOptions d : priced_decoders()) {
    d.draft_adaptive = false;
    EXPECT_GT(rows_per_forward(o.check(d, label(d) + ", fixed")), 1.5) << label(d);
  }
}

// Where rows are free every row that adds tokens is kept: on the position oracle every Jacobi prediction is
// right, so drafts run long and the TPF matches the fixed policy's.
TEST(RowPricing, RowsAreKeptWhereTheyPay) {
  Oracle o(40, cycle_text(1000, 37, 2), /*by_position=*/true, 8, 200);
  for (DecoderOptions d : priced_decoders()) {
    const GenerationResult priced = o.check(d, label(d) + ", flat cost");
    d.draft_adaptive = false;
    const GenerationResult fixed = o.check(d, label(d) + ", fixed");
    EXPECT_GT(rows_per_forward(priced), 1.5) << label(d);
    EXPECT_GT(priced.stats.tpf(), 0.9 * fixed.stats.tpf()) << label(d);
    EXPECT_GT(priced.stats.tpf(), 1.5) << label(d);
  }
}

// A moderate cost (each extra row 15% of a forward): what decides is each decoder's own acceptance. Random
// guesses on a text-following oracle over random text are never right, so after its first tries Jacobi stops
// sending them; predictions on the position oracle always are, so it keeps its whole block.
TEST(RowPricing, AcceptanceDecidesUnderAModerateCost) {
  const std::vector<std::pair<int, double>> moderate = {{1, 1.0}, {64, 1.0 + 0.15 * 63}};
  DecoderOptions j = dec("jacobi");
  j.block = 8, j.init = DraftInit::Random;
  Oracle hopeless(500, random_text(600, 500, 4), /*by_position=*/false, 8, 300);
  hopeless.s.row_cost().set_curve(moderate);
  const GenerationResult cut = hopeless.check(j, "jacobi n=8 on random text");
  EXPECT_LT(rows_per_forward(cut), 1.3);
  EXPECT_GT(cut.stats.counter("draft_tokens_cut"), 900);  // (a retry every DraftLengthPolicy::kRetry forwards sends one)
  Oracle easy(40, cycle_text(1000, 37, 2), /*by_position=*/true, 8, 200);
  easy.s.row_cost().set_curve(moderate);
  const GenerationResult kept = easy.check(j, "jacobi n=8 on the position oracle");
  EXPECT_GT(kept.stats.tpf(), 3.5);
  EXPECT_GT(rows_per_forward(kept), 4.0);
}

// SJD prices its draft too: on a steep curve it samples one token per forward, on a flat one it drafts.
TEST(RowPricing, SjdCutsItsDraft) {
  const int V = 16;
  test::FakeModel fake(V, test::sampling_rule(V, 6.0f));
  Session s(fake, 400);
  GenerationConfig cfg;
  cfg.max_new_tokens = 100;
  cfg.sampling.temperature = 1.0f;
  DecoderOptions o = dec("sjd");
  o.block = 4;
  o.validate(false);
  const std::vector<int32_t> prompt = {1, 2, 3};
  s.row_cost().set_curve({{1, 1.0}, {2, 2.0}, {64, 64.0}});
  const GenerationResult steep = make_decoder(o)->generate(s, prompt, cfg);
  EXPECT_EQ(steep.stats.n_forward_rows, steep.stats.n_forwards);
  s.row_cost().set_curve({{1, 1.0}, {64, 1.0}});
  const GenerationResult flat = make_decoder(o)->generate(s, prompt, cfg);
  EXPECT_GT(rows_per_forward(flat), 2.0);
}

}  // namespace
}  // namespace jf

namespace jf {
namespace {

// ---------------------------------------------------------------- fastcot (approximate by design)

// The output is the exact rationale (ar's first tokens), the window's approximate tokens, the trigger, then
// ar's answer given all of that as context; the rationale takes exactly `iterations` forwards and the answer
// one forward per token. On the position oracle the approximate tokens are the true continuation (a correct
// glimpse of the future).
TEST(FastCot, RationaleGlimpseTriggerAnswer) {
  for (bool by_position : {true, false}) {
    Oracle o(64, by_position ? cycle_text(1000, 37, 2) : random_text(400, 64, 3), by_position, 8, 40);
    for (int iters : {0, 1, 5}) {
      DecoderOptions f = dec("fastcot");
      f.block = 4, f.fastcot_iterations = iters, f.trigger_tokens = {60, 61}, f.init = DraftInit::Random;
      const GenerationResult r = run(o.s, f, o.prompt, o.cfg);
      const std::string what = std::string(by_position ? "position" : "text") + " oracle, iterations " + std::to_string(iters);
      const int E = static_cast<int>(r.stats.counter("exact_tokens")), A = static_cast<int>(r.stats.counter("approximate_tokens"));
      ASSERT_GE(static_cast<int>(r.tokens.size()), E + A + 2) << what;
      EXPECT_TRUE(std::equal(r.tokens.begin(), r.tokens.begin() + E, o.ar.tokens.begin())) << what;
      EXPECT_LE(A, 3) << what;  // what the last forward predicted past its accepted tokens (at most block - 1)
      if (iters == 0) {
        EXPECT_EQ(A, 0) << what;
      }
      if (iters == 1) {
        EXPECT_GT(A, 0) << what;  // random guesses: few accepted, the rest of the rows predicted
      }
      if (by_position) {
        EXPECT_TRUE(std::equal(r.tokens.begin() + E, r.tokens.begin() + E + A, o.ar.tokens.begin() + E)) << what;
      }
      EXPECT_EQ(r.tokens[E + A], 60) << what;
      EXPECT_EQ(r.tokens[E + A + 1], 61) << what;
      std::vector<int32_t> context = o.prompt;
      context.insert(context.end(), r.tokens.begin(), r.tokens.begin() + E + A + 2);
      GenerationConfig answer_cfg = o.cfg;
      answer_cfg.max_new_tokens = static_cast<int>(r.tokens.size()) - (E + A + 2);
      const GenerationResult answer = run(o.s, dec("ar"), context, answer_cfg);
      ASSERT_EQ(static_cast<int>(answer.tokens.size()), answer_cfg.max_new_tokens) << what;
      EXPECT_TRUE(std::equal(answer.tokens.begin(), answer.tokens.end(), r.tokens.begin() + E + A + 2)) << what;
      EXPECT_EQ(r.stats.n_forwards, iters + answer_cfg.max_new_tokens) << what;
      // A driver that caps the rows per forward (a busy server): the approximate tail goes through the model
      // in pieces, and the answer is still ar's from that context (the rationale differs: smaller windows).
      auto decoder = make_decoder(f);
      Generation g(*decoder, o.s, o.prompt, o.cfg);
      g.context().set_row_cap(2);
      while (SequenceInput* in = g.next_input()) g.consume(static_cast<ForwardPass&>(o.fake).forward(*in), 0.0);
      const GenerationResult capped = g.take_result();
      EXPECT_EQ(capped.stop, StopReason::Length) << what;
      const int cut = static_cast<int>(capped.stats.counter("exact_tokens") + capped.stats.counter("approximate_tokens")) + 2;
      ASSERT_EQ(capped.tokens[cut - 1], 61) << what;
      std::vector<int32_t> ctx2 = o.prompt;
      ctx2.insert(ctx2.end(), capped.tokens.begin(), capped.tokens.begin() + cut);
      answer_cfg.max_new_tokens = static_cast<int>(capped.tokens.size()) - cut;
      const GenerationResult answer2 = run(o.s, dec("ar"), ctx2, answer_cfg);
      EXPECT_TRUE(std::equal(answer2.tokens.begin(), answer2.tokens.end(), capped.tokens.begin() + cut)) << what;
    }
  }
}

}  // namespace
}  // namespace jf
