// Draft trees from a draft layer (decode/tree_draft.h, ForwardResult::expand_tree): a tree's path is the
// layer's chain, a node gets the same bits in any pass and beside any siblings, the cache is left as it was;
// on the shipped code model with its draft file, Jacobi with trees gives `ar`'s greedy text and, sampling,
// `ar`'s very tokens for the same seed, while the branches beside the draft's first guess are accepted and
// raise the tokens per forward over the chain's; the row pricing sizes the tree by what rows cost.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "decode/options.h"
#include "decode/tree_draft.h"
#include "draft_layer_support.h"
#include "model/draft_file.h"
#include "model/loader.h"
#include "model/transformer.h"
#include "test_support.h"

namespace jf {
namespace {

constexpr int V = 32;
const std::vector<int32_t> kTokens = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8};

TEST(SoftmaxTopK, LargestFirstLowerIndexOnTiesAndProbabilitiesOfTheWholeRow) {
  const float x[6] = {1.0f, 3.0f, 2.0f, 3.0f, NAN, 0.0f};
  int32_t ids[3];
  float p[3];
  softmax_top_k(x, 6, 3, ids, p);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 3);
  EXPECT_EQ(ids[2], 2);
  const double sum = std::exp(1.0) + 2 * std::exp(3.0) + std::exp(2.0) + 1.0;  // (NaN counts as nothing)
  EXPECT_NEAR(p[0], std::exp(3.0) / sum, 1e-6);
  EXPECT_NEAR(p[2], std::exp(2.0) / sum, 1e-6);
}

// A forward of kTokens[0 .. last] that ran the draft layer, its last row the tree's source.
ForwardResult drafted_forward(Transformer& tf, KvCache& cache, int last = 11) {
  SequenceInput in;
  in.set_causal(&cache, std::vector<int32_t>(kTokens.begin(), kTokens.begin() + last + 1), SequenceInput::Logits::Last);
  in.draft_logits = true;
  return tf.forward(in);
}

TEST(TreeRows, APathOfTheTreeIsTheLayersChain) {
  DraftLayerModel d = draft_layer_model(true);
  Transformer tf(d.model->config(), d.model->weights());
  for (int last : {3, 7, 11}) {
    KvCache a(d.model->config(), 64), b(d.model->config(), 64);
    int32_t chain[3];
    ASSERT_EQ(drafted_forward(tf, a, last).chain(0, 7, 3, chain), 3);
    const ForwardResult res = drafted_forward(tf, b, last);
    int32_t token = 7;
    for (int step = 0; step < 3; step++) {
      const DraftNode node{step - 1, token};
      DraftGuess top[2];
      ASSERT_EQ(res.expand_tree(0, std::span<const DraftNode>(&node, 1), 2, top), 1);
      EXPECT_EQ(top[0].token, chain[step]) << "step " << step << " after row " << last;
      EXPECT_GE(top[0].prob, top[1].prob);
      token = top[0].token;
    }
    EXPECT_EQ(b.size(), last + 4);  // the tree's three virtual rows
    res.end_tree();
    EXPECT_EQ(b.size(), last + 1);
  }
}

// Every node's guesses, bit for bit: its siblings in the same pass (20: more than one pass of rows) change
// nothing, and a child reads its own parent, whichever pass that parent had.
TEST(TreeRows, ANodesGuessesDoNotDependOnItsSiblingsOrItsPass) {
  DraftLayerModel d = draft_layer_model(true);
  Transformer tf(d.model->config(), d.model->weights());
  constexpr int K = 4, kSiblings = 20;
  std::vector<DraftNode> level;
  for (int t = 0; t < kSiblings; t++) level.push_back({-1, t});
  KvCache cache(d.model->config(), 64);
  const ForwardResult res = drafted_forward(tf, cache);
  std::vector<DraftGuess> together(kSiblings * K), child_together(K);
  ASSERT_EQ(res.expand_tree(0, level, K, together.data()), kSiblings);
  const DraftNode child{13, 5};  // under sibling 13
  ASSERT_EQ(res.expand_tree(0, std::span<const DraftNode>(&child, 1), K, child_together.data()), 1);
  res.end_tree();
  for (int t : {0, 13, 19}) {
    KvCache c(d.model->config(), 64);
    const ForwardResult alone = drafted_forward(tf, c);
    std::vector<DraftGuess> g(K), cg(K);
    ASSERT_EQ(alone.expand_tree(0, std::span<const DraftNode>(&level[t], 1), K, g.data()), 1);
    EXPECT_EQ(std::memcmp(g.data(), &together[t * K], sizeof(DraftGuess) * K), 0) << "sibling " << t;
    const DraftNode own_child{0, 5};
    if (t == 13) {
      ASSERT_EQ(alone.expand_tree(0, std::span<const DraftNode>(&own_child, 1), K, cg.data()), 1);
      EXPECT_EQ(std::memcmp(cg.data(), child_together.data(), sizeof(DraftGuess) * K), 0);
    }
    alone.end_tree();
  }
}

TEST(TreeRows, LeaveTheNextForwardAsWithoutThem) {
  DraftLayerModel d = draft_layer_model(true);
  Transformer tf(d.model->config(), d.model->weights());
  auto next_logits = [&](bool tree) {
    KvCache cache(d.model->config(), 64);
    const ForwardResult res = drafted_forward(tf, cache);
    if (tree) {
      const DraftNode nodes[2] = {{-1, 4}, {-1, 9}};
      std::vector<DraftGuess> g(4);
      EXPECT_EQ(res.expand_tree(0, nodes, 2, g.data()), 2);
      SequenceInput early;
      early.set_causal(&cache, std::vector<int32_t>{7}, SequenceInput::Logits::Last);
      EXPECT_THROW(tf.forward(early), std::logic_error);  // not before end_tree()
      res.end_tree();
    }
    SequenceInput in;
    in.set_causal(&cache, std::vector<int32_t>{7}, SequenceInput::Logits::Last);
    in.draft_logits = true;
    const float* z = tf.forward(in).logits(0);
    EXPECT_EQ(cache.size(), static_cast<int>(kTokens.size()) + 1);
    return std::vector<float>(z, z + V);
  };
  const std::vector<float> plain = next_logits(false);
  EXPECT_EQ(std::memcmp(next_logits(true).data(), plain.data(), sizeof(float) * V), 0);
}

TEST(TreeRows, MisuseIsAnError) {
  DraftLayerModel d = draft_layer_model(true);
  Transformer tf(d.model->config(), d.model->weights());
  KvCache cache(d.model->config(), 64);
  DraftGuess g[4];
  const DraftNode root{-1, 3};
  {
    SequenceInput in;
    in.set_causal(&cache, kTokens, SequenceInput::Logits::Last);
    EXPECT_THROW(tf.forward(in).expand_tree(0, std::span<const DraftNode>(&root, 1), 1, g), std::logic_error);  // no layer ran
  }
  cache.truncate(0);
  const ForwardResult res = drafted_forward(tf, cache);
  const DraftNode same_call[2] = {{-1, 3}, {0, 4}};  // a parent in the same call
  EXPECT_THROW(res.expand_tree(0, same_call, 1, g), std::logic_error);
  const DraftNode outside{-1, V};
  EXPECT_THROW(res.expand_tree(0, std::span<const DraftNode>(&outside, 1), 1, g), std::logic_error);
  EXPECT_THROW(res.expand_tree(0, std::span<const DraftNode>(&root, 1), 0, g), std::logic_error);
  EXPECT_THROW(res.expand_tree(0, std::span<const DraftNode>(&root, 1), V + 1, g), std::logic_error);
  EXPECT_EQ(res.expand_tree(0, {}, 1, g), 0);
  KvCache full(d.model->config(), static_cast<int>(kTokens.size()));
  EXPECT_EQ(drafted_forward(tf, full).expand_tree(0, std::span<const DraftNode>(&root, 1), 1, g), 0);  // no free slot
}

TEST(AcceptanceCalibration, StartsAtTheDraftsProbabilityAndLearnsTheRate) {
  AcceptanceCalibration c;
  EXPECT_NEAR(c.estimate(1, 0.9f), 0.9, 1e-7);
  EXPECT_DOUBLE_EQ(c.estimate(3, -1.0f), 0.5);  // unknown probability
  for (int i = 0; i < 98; i++) c.record(1, 0.95f, i % 2 == 0);  // an overconfident draft: half accepted
  EXPECT_NEAR(c.estimate(1, 0.91f), (49 + 2 * 0.91) / 100.0, 1e-7);
  EXPECT_NEAR(c.estimate(2, 0.91f), 0.91, 1e-7);  // other depths keep their own
  EXPECT_DOUBLE_EQ(c.estimate(1, 0.5f), 0.5);     // and other buckets
  EXPECT_EQ(c.tried(1, AcceptanceCalibration::bucket(0.95f)), 98);
}

// The calibration as a grown tree's tables (TreeGrowth: a + prob * b in float) gives the estimate in double to
// float's precision, prior and learned counts alike.
TEST(AcceptanceCalibration, TablesForAGrownTreeGiveTheEstimate) {
  AcceptanceCalibration c;
  for (int i = 0; i < 40; i++) c.record(1 + i % 3, 0.05f * static_cast<float>(i % 20), i % 3 != 0);
  TreeGrowth g;
  c.tables(g);
  for (int depth : {1, 2, 3, 8, 12})
    for (float p : {0.0f, 0.04f, 0.31f, 0.5f, 0.77f, 0.99f, 1.0f})
      EXPECT_NEAR(g.estimate(depth, p), c.estimate(depth, p), 1e-6) << "depth " << depth << ", prob " << p;
}

// The growth rule's parts: the floor is the max_nodes-th best score (0 while fewer); a level keeps its best
// `beam` at or above it, the earlier of equal scores first.
TEST(TreeGrowth, TheFloorAndTheChoiceOfALevel) {
  const std::vector<float> all = {0.9f, 0.5f, 0.7f, 0.5f, 0.2f, 0.5f};
  EXPECT_EQ(growth_floor(all, 7), 0.0f);
  EXPECT_EQ(growth_floor(all, 1), 0.9f);
  EXPECT_EQ(growth_floor(all, 3), 0.5f);
  EXPECT_EQ(growth_floor(all, 6), 0.2f);
  EXPECT_EQ(growth_choice(all, 0.0f, 3), (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(growth_choice(all, 0.0f, 4), (std::vector<int>{0, 2, 1, 3}));
  EXPECT_EQ(growth_choice(all, 0.6f, 4), (std::vector<int>{0, 2}));
  EXPECT_TRUE(growth_choice(all, 0.95f, 4).empty());
}

struct CodeModel {
  CodeModel() : lm(load_model(JF_SOURCE_DIR "/models/pycode-ar-q8_0.gguf")) {
    attach_draft_file(*lm.model, JF_SOURCE_DIR "/models/pycode-ar-q8_0.draft.gguf");
  }
  std::vector<int32_t> prompt(const char* text) const { return lm.tokenizer->encode(text, true, false); }
  LoadedModel lm;
};

const char* const kOpenings[] = {"def quicksort(items):\n", "class Stack:\n    def __init__(self):\n",
                                 "import os\n\n\ndef read_lines(path):\n", "def parse_args(argv):\n    parser = "};

GenerationResult run(Session& s, const std::string& spec, const std::vector<int32_t>& prompt, int n, const SamplingParams& sp = {}) {
  DecoderOptions o = parse_decoder_spec(spec, DecoderOptions{});
  o.validate(sp.greedy());
  GenerationConfig cfg;
  cfg.max_new_tokens = n;
  cfg.sampling = sp;
  return make_decoder(o)->generate(s, prompt, cfg);
}

TEST(JacobiTree, GreedyIsArsTextAndTheBranchesBeatTheChain) {
  CodeModel m;
  Session s(*m.lm.model, 512);
  int64_t ar_forwards = 0, chain_forwards = 0, tree_forwards = 0, branch_accepted = 0, tokens = 0;
  for (const char* opening : kOpenings) {
    const std::vector<int32_t> prompt = m.prompt(opening);
    const GenerationResult ar = run(s, "ar", prompt, 96);
    const GenerationResult chain = run(s, "jacobi:block=16:draft-policy=fixed", prompt, 96);
    const GenerationResult tree = run(s, "jacobi:block=16:draft-policy=fixed:tree=16", prompt, 96);
    EXPECT_EQ(chain.tokens, ar.tokens) << opening;
    EXPECT_EQ(tree.tokens, ar.tokens) << opening;
    EXPECT_EQ(run(s, "jacobi:draft-policy=fixed:tree=64:tree-width=6:tree-beam=8", prompt, 96).tokens, ar.tokens) << opening;
    EXPECT_GT(tree.stats.counter("tree_nodes"), 12 * (tree.stats.n_forwards - 1)) << "the trees were not sent whole";
    ar_forwards += ar.stats.n_forwards, chain_forwards += chain.stats.n_forwards, tree_forwards += tree.stats.n_forwards;
    branch_accepted += tree.stats.counter("tree_branch_accepted");
    tokens += static_cast<int64_t>(ar.tokens.size());
  }
  std::printf("tokens a forward: ar %.2f, chain %.2f, tree of 16 %.2f; %lld tokens accepted off the first guess\n",
              double(tokens) / ar_forwards, double(tokens) / chain_forwards, double(tokens) / tree_forwards,
              static_cast<long long>(branch_accepted));
  EXPECT_GT(branch_accepted, tokens / 20);
  EXPECT_LT(tree_forwards * 1.15, chain_forwards) << "the tree did not beat the chain by 15%";
}

// Multiblock takes the layer's tree beside its real-active draft: `ar`'s text, paths won along the tree's
// branches, and more tokens a forward than without it, also with its rows capped at 16 (a block of 4 and a
// tree of 12).
TEST(MultiblockTree, GreedyIsArsTextAndTheTreesBranchesWin) {
  CodeModel m;
  Session s(*m.lm.model, 512);
  int64_t plain_forwards = 0, tree_forwards = 0, small_forwards = 0, wins = 0, tokens = 0;
  for (const char* opening : kOpenings) {
    const std::vector<int32_t> prompt = m.prompt(opening);
    const GenerationResult ar = run(s, "ar", prompt, 96);
    const GenerationResult plain = run(s, "multiblock:block=16:draft-policy=fixed", prompt, 96);
    const GenerationResult tree = run(s, "multiblock:block=16:draft-policy=fixed:tree=32", prompt, 96);
    const GenerationResult small = run(s, "multiblock:block=4:K=1:pool=0:draft-policy=fixed:tree=12", prompt, 96);
    EXPECT_EQ(tree.tokens, ar.tokens) << opening;
    EXPECT_EQ(small.tokens, ar.tokens) << opening;
    EXPECT_EQ(run(s, "multiblock:block=8:tree=16", prompt, 96).tokens, ar.tokens) << opening;  // priced
    plain_forwards += plain.stats.n_forwards, tree_forwards += tree.stats.n_forwards, small_forwards += small.stats.n_forwards;
    wins += tree.stats.counter("tree_wins") + small.stats.counter("tree_wins");
    tokens += static_cast<int64_t>(ar.tokens.size());
  }
  std::printf("multiblock tokens a forward: %.2f, with a tree of 32 %.2f, block 4 with a tree of 12 %.2f; %lld paths won on a branch\n",
              double(tokens) / plain_forwards, double(tokens) / tree_forwards, double(tokens) / small_forwards,
              static_cast<long long>(wins));
  EXPECT_GT(wins, 0);
  EXPECT_LT(tree_forwards * 1.15, plain_forwards);
  EXPECT_LT(small_forwards * 1.15, plain_forwards);
}

// The stories260K draft file shipped in models/ (scripts/train_stories_draft.sh): trees of 16 on it commit
// well over twice the tokens a forward of the base's own Jacobi, with its greedy text.
TEST(JacobiTree, TheStoriesDraftFileGivesStoriesText) {
  JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
  LoadedModel lm = load_model(path);
  attach_draft_file(*lm.model, JF_SOURCE_DIR "/models/stories260K.draft.gguf");
  Session s(*lm.model, 512);
  int64_t ar_forwards = 0, tree_forwards = 0;
  for (const char* opening : {"Once upon a time, there was a little girl named Lily.", "Tom and his dog went to the park."}) {
    const std::vector<int32_t> prompt = lm.tokenizer->encode(opening, true, false);
    const GenerationResult ar = run(s, "ar", prompt, 128);
    const GenerationResult tree = run(s, "jacobi:draft-policy=fixed:tree=16", prompt, 128);
    EXPECT_EQ(tree.tokens, ar.tokens) << opening;
    ar_forwards += ar.stats.n_forwards, tree_forwards += tree.stats.n_forwards;
  }
  EXPECT_GT(double(ar_forwards) / tree_forwards, 2.5);
}

// Sample then match draws one coin per committed token as `ar` does: the same seed gives `ar`'s tokens, for
// any tree (a broken acceptance, one that keeps a draft the draw did not name, diverges at once).
TEST(JacobiTree, SamplingGivesArsTokensForTheSameSeed) {
  CodeModel m;
  Session s(*m.lm.model, 512);
  SamplingParams sp;
  sp.temperature = 0.7f, sp.top_k = 40, sp.top_p = 0.95f;
  int64_t accepted = 0, tokens = 0;
  for (int seed = 1; seed <= 8; seed++) {
    sp.seed = static_cast<uint64_t>(seed);
    const std::vector<int32_t> prompt = m.prompt(kOpenings[seed % 4]);
    const GenerationResult ar = run(s, "ar", prompt, 64, sp);
    const GenerationResult tree = run(s, "jacobi:draft-policy=fixed:tree=16", prompt, 64, sp);
    ASSERT_EQ(tree.tokens, ar.tokens) << "seed " << seed;
    if (seed == 1) {  // without the layer (no drafts): still ar's draws, never a greedy text
      EXPECT_EQ(run(s, "jacobi:tree=16:draft-head=0", prompt, 64, sp).tokens, ar.tokens);
    }
    accepted += tree.stats.counter("accepted_draft_tokens"), tokens += static_cast<int64_t>(ar.tokens.size());
  }
  EXPECT_GT(accepted, tokens / 3) << "too few drafts accepted for the equality to say anything";
  EXPECT_THROW(run(s, "jacobi", m.prompt("x"), 4, sp), Error);  // a chain does not sample
}

// Priced, the tree is as large as the rows' cost allows: all 32 rows where rows are free, a few where each
// costs a quarter of the first, none where each costs as much as the first (no node is accepted surely enough
// to double the tokens a forward).
TEST(JacobiTree, ThePricingSizesTheTreeByWhatRowsCost) {
  CodeModel m;
  const std::vector<int32_t> prompt = m.prompt(kOpenings[0]);
  auto rows_a_forward = [&](double per_row) {
    Session s(*m.lm.model, 512);
    s.row_cost().set_curve({{1, 1.0}, {64, 1.0 + 63 * per_row}});
    s.row_cost().set_draft_overhead(0.0);
    const GenerationResult ar = run(s, "ar", prompt, 96);
    const GenerationResult r = run(s, "jacobi:tree=32", prompt, 96);
    EXPECT_EQ(r.tokens, ar.tokens);
    return double(r.stats.counter("tree_nodes")) / std::max<int64_t>(1, r.stats.counter("tree_forwards"));
  };
  const double free_rows = rows_a_forward(0.0), quarter = rows_a_forward(0.25), dear_rows = rows_a_forward(1.0);
  std::printf("tree rows a forward: %.1f with free rows, %.1f at a quarter of a forward each, %.1f at a whole\n", free_rows,
              quarter, dear_rows);
  EXPECT_GT(free_rows, 24.0);
  EXPECT_GT(quarter, 0.9);
  EXPECT_LT(quarter, 6.0);
  EXPECT_EQ(dear_rows, 0.0);
}

}  // namespace
}  // namespace jf
