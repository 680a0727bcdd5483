// Draft trees on the device (VulkanForward::row_tree, ForwardResult::expand_tree): a tree's path is the
// device's draft chain (and the CPU's drafts), a node's guesses are the same bits beside any siblings and in any
// pass, the cache and the next forward are as without the tree, and misuse is an error, as on the CPU
// (test_tree_draft.cpp).
#include <cstring>
#include <vector>

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

}  // namespace
}  // namespace jf
