// Draft trees on the device (VulkanForward::row_tree, ForwardResult::expand_tree): a tree's path is the
// device's draft chain (and the CPU's drafts), a node's guesses are the same bits beside any siblings and in any
// pass, the cache and the next forward are as without the tree, and misuse is an error, as on the CPU
// (test_tree_draft.cpp).
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "kernels/ops.h"
#include "vulkan/vulkan_forward.h"
#include "vulkan_forward_support.h"
#include "vulkan_support.h"

namespace jf {
namespace {

using test::DraftModel;

// A forward of `toks` that ran the draft layer, its last row the tree's source.
ForwardResult drafted_forward(ForwardPass& f, KvCache& cache, const std::vector<int32_t>& toks) {
  SequenceInput in;
  in.set_causal(&cache, toks, SequenceInput::Logits::Last);
  in.draft_logits = true;
  return f.forward(in);
}

TEST(VulkanTree, APathOfTheTreeIsTheDevicesChainAndTheCpus) {
  JF_VULKAN_DEVICE(device);
  DraftModel m(device, 3);  // (the seed whose chain varies: DraftChainMatchesTheCpuAndLeavesTheCacheAsItWas)
  const std::vector<int32_t> toks = test::random_tokens(10, m.cfg.vocab_size, 4);
  // The greedy path from first draft 3: the top guess of each node, a node a call.
  auto path = [&](ForwardPass& f) {
    KvCache cache = f.make_cache(64);
    const ForwardResult res = drafted_forward(f, cache, toks);
    std::vector<int32_t> out;
    int32_t token = 3;
    for (int step = 0; step < 4; step++) {
      const DraftNode node{step - 1, token};
      DraftGuess top[3];
      EXPECT_EQ(res.expand_tree(0, std::span<const DraftNode>(&node, 1), 3, top), 1);
      EXPECT_GE(top[0].prob, top[1].prob);
      EXPECT_GE(top[1].prob, top[2].prob);
      out.push_back(token = top[0].token);
    }
    EXPECT_EQ(cache.size(), 14);  // the tree's four virtual rows
    res.end_tree();
    EXPECT_EQ(cache.size(), 10);
    return out;
  };
  KvCache c = m.fwd.make_cache(64);
  std::vector<int32_t> chain(4, -1);
  ASSERT_EQ(drafted_forward(m.fwd, c, toks).chain(0, 3, 4, chain.data()), 4);
  const std::vector<int32_t> device_path = path(m.fwd);
  EXPECT_EQ(device_path, chain);
  EXPECT_EQ(device_path, path(m.cpu));
}

// Up to 16 guesses a node are taken on the device (shaders/top_k.comp), more from its logits on the host: the
// same guesses in the same order.
TEST(VulkanTree, GuessesOnTheDeviceAreTheHostsOnTheSameLogits) {
  JF_VULKAN_DEVICE(device);
  DraftModel m(device, 9);
  const std::vector<int32_t> toks = test::random_tokens(7, m.cfg.vocab_size, 10);
  auto guesses = [&](int k) {
    KvCache cache = m.fwd.make_cache(64);
    const ForwardResult res = drafted_forward(m.fwd, cache, toks);
    const DraftNode nodes[3] = {{-1, 1}, {-1, 2}, {-1, 3}};
    std::vector<DraftGuess> g(3 * static_cast<size_t>(k));
    EXPECT_EQ(res.expand_tree(0, nodes, k, g.data()), 3);
    res.end_tree();
    return g;
  };
  const std::vector<DraftGuess> on_device = guesses(16), host = guesses(20);
  for (int node = 0; node < 3; node++)
    for (int j = 0; j < 16; j++) {
      EXPECT_EQ(on_device[node * 16 + j].token, host[node * 20 + j].token) << "node " << node << " guess " << j;
      EXPECT_NEAR(on_device[node * 16 + j].prob, host[node * 20 + j].prob, 1e-6f + 1e-5f * host[node * 20 + j].prob);
    }
}

// Every node's guesses, bit for bit: its siblings (70: two passes of rows) change nothing, and a child reads its
// own parent, whichever pass that parent had.
TEST(VulkanTree, ANodesGuessesDoNotDependOnItsSiblingsOrItsPass) {
  JF_VULKAN_DEVICE(device);
  DraftModel m(device, 5);
  const int V = m.cfg.vocab_size;
  constexpr int K = 4, kSiblings = 70;
  const std::vector<int32_t> toks = test::random_tokens(9, V, 6);
  std::vector<DraftNode> level;
  for (int t = 0; t < kSiblings; t++) level.push_back({-1, t % V});
  KvCache cache = m.fwd.make_cache(128);
  const ForwardResult res = drafted_forward(m.fwd, cache, toks);
  std::vector<DraftGuess> together(kSiblings * K), child_together(K);
  ASSERT_EQ(res.expand_tree(0, level, K, together.data()), kSiblings);
  const DraftNode child{67, 5};  // under a sibling of the second pass
  ASSERT_EQ(res.expand_tree(0, std::span<const DraftNode>(&child, 1), K, child_together.data()), 1);
  // A pass past the first is its input, the layer (on the nodes' own rows of the tree's hidden states: no
  // copy, and no barrier for one), the head and the top guesses.
  ASSERT_GT(m.fwd.tree_level_counts().dispatches, 0u);
  EXPECT_EQ(m.fwd.tree_level_counts().dispatches, m.fwd.layer_counts().dispatches + 3);
  EXPECT_LE(m.fwd.tree_level_counts().barriers, m.fwd.layer_counts().barriers + 3);
  res.end_tree();
  for (int t : {0, 13, 67}) {
    KvCache c = m.fwd.make_cache(128);
    const ForwardResult alone = drafted_forward(m.fwd, c, toks);
    std::vector<DraftGuess> g(K), cg(K);
    ASSERT_EQ(alone.expand_tree(0, std::span<const DraftNode>(&level[t], 1), K, g.data()), 1);
    EXPECT_EQ(std::memcmp(g.data(), &together[t * K], sizeof(DraftGuess) * K), 0) << "sibling " << t;
    if (t == 67) {
      const DraftNode own_child{0, 5};
      ASSERT_EQ(alone.expand_tree(0, std::span<const DraftNode>(&own_child, 1), K, cg.data()), 1);
      EXPECT_EQ(std::memcmp(cg.data(), child_together.data(), sizeof(DraftGuess) * K), 0);
    }
    alone.end_tree();
  }
}

TEST(VulkanTree, LeavesTheNextForwardAsWithoutItAndMisuseIsAnError) {
  JF_VULKAN_DEVICE(device);
  DraftModel m(device, 7);
  const int V = m.cfg.vocab_size;
  const std::vector<int32_t> toks = test::random_tokens(8, V, 8);
  auto next_logits = [&](bool tree) {
    KvCache cache = m.fwd.make_cache(64);
    const ForwardResult res = drafted_forward(m.fwd, cache, toks);
    if (tree) {
      const DraftNode nodes[2] = {{-1, 4}, {-1, 9}};
      std::vector<DraftGuess> g(4);
      EXPECT_EQ(res.expand_tree(0, nodes, 2, g.data()), 2);
      SequenceInput early;
      early.set_causal(&cache, std::vector<int32_t>{7}, SequenceInput::Logits::Last);
      EXPECT_THROW(m.fwd.forward(early), std::logic_error);  // not before end_tree()
      res.end_tree();
    }
    SequenceInput in;
    in.set_causal(&cache, std::vector<int32_t>{7}, SequenceInput::Logits::Last);
    return test::row_of(m.fwd.forward(in), 0);
  };
  test::expect_bits(next_logits(true), next_logits(false), "the forward after a tree");

  KvCache cache = m.fwd.make_cache(64);
  DraftGuess g[4];
  const DraftNode root{-1, 3};
  {
    SequenceInput in;
    in.set_causal(&cache, toks, SequenceInput::Logits::Last);
    EXPECT_THROW(m.fwd.forward(in).expand_tree(0, std::span<const DraftNode>(&root, 1), 1, g), std::logic_error);  // no layer ran
  }
  cache.truncate(0);
  const ForwardResult res = drafted_forward(m.fwd, cache, toks);
  const DraftNode same_call[2] = {{-1, 3}, {0, 4}};  // a parent in the same call
  EXPECT_THROW(res.expand_tree(0, same_call, 1, g), std::logic_error);
  const DraftNode outside{-1, V};
  EXPECT_THROW(res.expand_tree(0, std::span<const DraftNode>(&outside, 1), 1, g), std::logic_error);
  EXPECT_EQ(res.expand_tree(0, {}, 1, g), 0);
  res.end_tree();
  KvCache full = m.fwd.make_cache(static_cast<int>(toks.size()));
  EXPECT_EQ(drafted_forward(m.fwd, full, toks).expand_tree(0, std::span<const DraftNode>(&root, 1), 1, g), 0);  // no free slot
}

// A tree asked for up front (SequenceInput::grow_tree) grows inside the forward's submission by the rule of
// model/tree_growth.h: from the row greedy verification ends at; every score is the rule's float arithmetic;
// each level expands the candidates the floor and the beam choose; and every expanded node's guesses are, bit for
// bit, what expand_tree gives for the same node after the path is kept (a level a submission). Also with
// attention in chunks of 64 slots and a context whose rows' slot lists cross a chunk's end.
void expect_grown_tree_follows_the_rule(int device, int prompt_len, uint32_t chunk) {
  DraftModel m(device, 11);
  m.fwd.set_attention_chunk(chunk);
  const int V = m.cfg.vocab_size;
  const std::vector<int32_t> prompt = test::random_tokens(prompt_len, V, 12);
  KvCache cache = m.fwd.make_cache(96);
  SequenceInput in;
  in.set_causal(&cache, prompt, SequenceInput::Logits::None);
  in.draft_context = true;
  m.fwd.forward(in);
  // The verified tree: pending token 5, its greedy child (verified), a wrong sibling, and a child under the
  // greedy one that is wrong too: the path ends at row 1.
  const int S = cache.size();
  int32_t greedy_next;
  {
    KvCache probe = m.fwd.make_cache(96);
    SequenceInput p;
    p.set_causal(&probe, prompt, SequenceInput::Logits::None);
    m.fwd.forward(p);
    p.set_causal(&probe, std::vector<int32_t>{5}, SequenceInput::Logits::Last);
    greedy_next = m.fwd.forward(p).greedy(0);
  }
  const std::vector<int32_t> toks = {5, greedy_next, (greedy_next + 1) % V, (greedy_next + 2) % V};
  const std::vector<int32_t> parent = {-1, 0, 0, 1};
  in.reset_rows(&cache, 4);
  for (int i = 0; i < 4; i++) {
    in.tokens[i] = toks[i];
    in.positions[i] = S + (i == 0 ? 0 : i == 3 ? 2 : 1);
    for (int a = i; a >= 0; a = parent[static_cast<size_t>(a)]) in.mask.set(i, a, true);
    in.logit_rows.push_back(i);
  }
  in.verify_parent = parent;
  in.draft_logits = true;
  TreeGrowth& g = in.grow_tree;
  // The estimate: about even at depth 1, then by the draft's probability, so a level's best children come from
  // different parents (their ancestors' slots are tested); the floor of 10 nodes cuts the third level.
  g.levels = 3, g.width = 3, g.beam = 2, g.max_nodes = 10, g.depths = 2, g.buckets = 4;
  g.a = {0.5f, 0.5f, 0.5f, 0.5f, 0.0f, 0.0f, 0.0f, 0.0f};
  g.b = {0.01f, 0.01f, 0.01f, 0.01f, 4.0f, 4.0f, 4.0f, 4.0f};
  const uint64_t grown_before = m.fwd.trees_in_forward(), syncs_before = m.fwd.device_syncs().submissions;
  const ForwardResult res = m.fwd.forward(in);
  EXPECT_EQ(m.fwd.device_syncs().submissions - syncs_before, 1u);
  EXPECT_EQ(m.fwd.trees_in_forward() - grown_before, 1u);
  // A level's launches: its plan step, the draft layer's input (the parents' hidden states plus the tokens'
  // scaled embeddings: one dispatch), the layer, the head's product (its norm folded in), the top guesses; no
  // copy of the level's hidden states (the layer updates them in place, in the rows the next levels read).
  if (m.fwd.tree_level_counts().dispatches > 0) {  // (0: the forward was replayed, nothing recorded)
    EXPECT_LE(m.fwd.tree_level_counts().dispatches, m.fwd.layer_counts().dispatches + 4);
    EXPECT_GE(m.fwd.tree_level_counts().dispatches, m.fwd.layer_counts().dispatches + 3);  // (counted at all)
    // (a barrier after each; the layer writes its residual stream where the next levels gather it: no copy)
    EXPECT_LE(m.fwd.tree_level_counts().barriers, m.fwd.layer_counts().barriers + 4);
  }
  const int end = toks[3] == res.greedy(1) ? 3 : 1;  // (row 3 is wrong unless the model agrees by chance)
  ASSERT_EQ(res.grown_tree(end == 3 ? 1 : 3), nullptr);
  const GrownTree* grown = res.grown_tree(end);
  ASSERT_NE(grown, nullptr);
  const std::vector<GrownCandidate>& c = grown->candidates;
  ASSERT_GE(c.size(), 3u);

  // The rule, replayed: the first level is the verified row's draft guesses; each level's scores and choice.
  std::vector<int32_t> ids(3);
  std::vector<float> probs(3);
  softmax_top_k(res.draft_logits(end), V, 3, ids.data(), probs.data());
  std::vector<float> scores;
  for (size_t i = 0; i < c.size(); i++) {
    const float from = c[i].parent < 0 ? 1.0f : c[static_cast<size_t>(c[i].parent)].score;
    EXPECT_EQ(c[i].score, growth_score(g, from, c[i].depth, c[i].prob)) << "candidate " << i;
    if (i < 3) {
      EXPECT_EQ(c[i].token, ids[i]);
      EXPECT_NEAR(c[i].prob, probs[i], 1e-6f + 1e-5f * probs[i]);
    }
    scores.push_back(c[i].score);
  }
  size_t first = 0, next = 3;
  bool cut = false;  // (by the floor: the table above makes the third level's scores fall below it)
  for (int level = 1; level <= g.levels; level++) {
    const float floor = growth_floor(std::span<const float>(scores).first(next), g.max_nodes);
    const std::vector<int> chosen = growth_choice(std::span<const float>(scores).subspan(first, next - first), floor, g.beam);
    for (size_t i = first; i < next; i++) {
      const bool want = std::find(chosen.begin(), chosen.end(), static_cast<int>(i - first)) != chosen.end();
      EXPECT_EQ(c[i].expanded, want) << "level " << level << " candidate " << i;
    }
    cut |= static_cast<int>(chosen.size()) < std::min<int>(g.beam, static_cast<int>(next - first));
    first = next;
    next += 3 * chosen.size();
  }
  EXPECT_EQ(next, c.size()) << "each expanded candidate's three guesses, and nothing more";
  if (prompt_len == 9) {
    EXPECT_TRUE(cut) << "the floor never cut a level: the test does not test it";
  }

  // Every expanded node's guesses again, a level a call through expand_tree, after the path is kept.
  cache.keep(S, end == 3 ? std::vector<int32_t>{S, S + 1, S + 3} : std::vector<int32_t>{S, S + 1});
  std::map<size_t, int> node_of;  // candidate -> expand_tree's node
  for (int depth = 1; depth <= g.levels; depth++) {
    std::vector<DraftNode> nodes;
    std::vector<size_t> which;
    for (size_t i = 0; i < c.size(); i++)
      if (c[i].depth == depth && c[i].expanded) {
        nodes.push_back({c[i].parent < 0 ? -1 : node_of.at(static_cast<size_t>(c[i].parent)), c[i].token});
        which.push_back(i);
      }
    std::vector<DraftGuess> guesses(nodes.size() * 3);
    const int base = static_cast<int>(node_of.size());
    ASSERT_EQ(res.expand_tree(end, nodes, 3, guesses.data()), static_cast<int>(nodes.size()));
    for (size_t j = 0; j < which.size(); j++) {
      node_of[which[j]] = base + static_cast<int>(j);
      size_t rank = 0;
      for (size_t i = 0; i < c.size(); i++) {
        if (c[i].parent != static_cast<int32_t>(which[j])) continue;
        EXPECT_EQ(c[i].token, guesses[j * 3 + rank].token) << "child " << rank << " of candidate " << which[j];
        EXPECT_EQ(std::memcmp(&c[i].prob, &guesses[j * 3 + rank].prob, 4), 0) << "child " << rank << " of candidate " << which[j];
        EXPECT_EQ(c[i].rank, static_cast<int32_t>(rank));
        rank++;
      }
      EXPECT_EQ(rank, 3u);
    }
  }
  res.end_tree();
}

TEST(VulkanTree, ATreeGrownInTheForwardFollowsTheRuleAndMatchesExpandTree) {
  JF_VULKAN_DEVICE(device);
  expect_grown_tree_follows_the_rule(device, 9, 0);
  expect_grown_tree_follows_the_rule(device, 60, 64);
}

// A server's forward: each sequence's tree grows beside the others' (their rows one pass a level) as it grows
// alone, bit for bit; a sequence asking for another shape gets none (its decoder grows it level by level).
TEST(VulkanTree, SequencesGrowTheirTreesInOneForwardAsAlone) {
  JF_VULKAN_DEVICE(device);
  DraftModel m(device, 13);
  const int V = m.cfg.vocab_size;
  TreeGrowth g;
  g.levels = 2, g.width = 4, g.beam = 3, g.max_nodes = 12, g.depths = 1, g.buckets = 2;
  g.a = {0.2f, 0.4f}, g.b = {0.7f, 0.5f};
  struct Seq {
    KvCache cache;
    SequenceInput in;
  };
  // Sequences with prompts of 5 + 3i tokens, then one row each asking for a tree (`shape` for the last).
  auto forward = [&](std::vector<int> which, const TreeGrowth& last_shape) {
    std::vector<std::unique_ptr<Seq>> seqs;
    std::vector<SequenceInput*> ins;
    for (int i : which) {
      auto s = std::make_unique<Seq>(Seq{m.fwd.make_cache(64), {}});
      s->in.set_causal(&s->cache, test::random_tokens(5 + 3 * i, V, 20 + i), SequenceInput::Logits::None);
      s->in.draft_context = true;
      m.fwd.forward(s->in);
      s->in.set_causal(&s->cache, std::vector<int32_t>{7 + i}, SequenceInput::Logits::Last);
      s->in.verify_parent = {-1};
      s->in.draft_logits = true;
      ins.push_back(&s->in);
      seqs.push_back(std::move(s));
    }
    for (size_t k = 0; k < ins.size(); k++) ins[k]->grow_tree = k + 1 == ins.size() ? last_shape : g;
    const ForwardResult res = m.fwd.forward(std::span<SequenceInput* const>(ins));
    std::vector<std::vector<GrownCandidate>> out;
    for (size_t k = 0; k < ins.size(); k++) {
      const GrownTree* t = res.grown_tree(static_cast<int>(k));
      out.push_back(t ? t->candidates : std::vector<GrownCandidate>{});
    }
    return out;
  };
  auto same = [](const std::vector<GrownCandidate>& x, const std::vector<GrownCandidate>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); i++)
      if (x[i].token != y[i].token || x[i].parent != y[i].parent || x[i].expanded != y[i].expanded ||
          std::memcmp(&x[i].prob, &y[i].prob, 4) != 0 || std::memcmp(&x[i].score, &y[i].score, 4) != 0)
        return false;
    return true;
  };
  const auto together = forward({0, 1, 2}, g);
  ASSERT_EQ(together.size(), 3u);
  for (int i = 0; i < 3; i++) {
    const auto alone = forward({i}, g);
    EXPECT_EQ(alone[0].size(), static_cast<size_t>(4 + 2 * 3 * 4)) << "sequence " << i;
    EXPECT_TRUE(same(together[static_cast<size_t>(i)], alone[0])) << "sequence " << i << "'s tree beside the others";
  }
  EXPECT_FALSE(same(together[0], together[1]));  // (different prompts: different trees, or the check is empty)
  TreeGrowth other = g;
  other.beam = 2;
  const auto mixed = forward({0, 1}, other);
  EXPECT_TRUE(same(mixed[0], together[0]));
  EXPECT_TRUE(mixed[1].empty()) << "a tree of another shape grew beside the first";
}

}  // namespace
}  // namespace jf
