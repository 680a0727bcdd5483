// Transformer::row_tree (ForwardResult::expand_tree): the draft layer's chain branched. After a forward, nodes of
// a draft tree go through the draft layer as virtual rows after the forward's rows, a tree level a pass: each
// reads its parent's layer output plus its token's embedding and attends to the cache and its ancestors, whose
// keys and values sit in cache slots past the sequence's own until end_row_tree().
#include <algorithm>

#include "base/error.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "model/transformer.h"

namespace jf {

namespace {
constexpr int64_t kTreeRows = 16;  // virtual rows a pass (a wider level takes several)
}

int Transformer::row_tree(int logit_row, std::span<const DraftNode> nodes, int k, DraftGuess* out) {
  if (!w_.draft_output_norm) return 0;
  const int first = tree_.cache ? static_cast<int>(tree_.pos.size()) : 0;
  for (const DraftNode& n : nodes) {
    JF_CHECK(n.parent >= -1 && n.parent < first, "a draft tree node's parent must be expanded in an earlier call");
    JF_CHECK(n.token >= 0 && n.token < cfg_.vocab_size, "a draft tree node's token is outside the vocabulary");
  }
  if (!tree_.cache) {
    JF_CHECK(!draft_spans_.empty(), "a draft tree after a forward that did not run the draft layer (no draft_logits asked for)");
    tree_.source = plan_.chain_source(logit_row, nodes[0].token, cfg_.vocab_size);
    JF_CHECK(layer_ran_on(tree_.source), "a draft tree from a sequence that did not draft in the last forward");
    tree_.cache = plan_.rows[static_cast<size_t>(tree_.source)].cache;
    tree_.past = tree_.cache->size();
    tree_.logit_row = logit_row;
    tree_.pos.clear(), tree_.parent.clear();
  }
  JF_CHECK(tree_.logit_row == logit_row, "a draft tree from another row before end_tree()");
  const int count = std::min<int>(static_cast<int>(nodes.size()), tree_.cache->capacity() - tree_.cache->size());
  for (int i = 0; i < count; i += static_cast<int>(kTreeRows)) {
    const int m = std::min<int>(count - i, static_cast<int>(kTreeRows));
    expand_tree_rows(nodes.subspan(static_cast<size_t>(i), static_cast<size_t>(m)), k, out + static_cast<int64_t>(i) * k);
  }
  return count;
}

// One pass of up to kTreeRows nodes whose parents are all expanded.
void Transformer::expand_tree_rows(std::span<const DraftNode> nodes, int k, DraftGuess* out) {
  const int64_t V = cfg_.vocab_size, r0 = static_cast<int64_t>(plan_.rows.size());
  const int64_t m = static_cast<int64_t>(nodes.size());
  const int dim = cfg_.dim;
  ensure_capacity(r0 + m, std::max<int64_t>(static_cast<int64_t>(plan_.logit_src.size()), 1));
  KvCache& cache = *tree_.cache;
  const int first = static_cast<int>(tree_.pos.size());
  const int32_t source_pos = plan_.rows[static_cast<size_t>(tree_.source)].pos;
  if (static_cast<int64_t>(tree_x_.size()) < (first + m) * dim) tree_x_.resize(static_cast<size_t>((first + m) * dim * 2));
  const size_t list_base = plan_.slot_list.size();
  cache.append(static_cast<int>(m));
  for (int64_t j = 0; j < m; j++) {
    const DraftNode& n = nodes[static_cast<size_t>(j)];
    const int node = first + static_cast<int>(j), slot = tree_.past + node;
    const int32_t pos = (n.parent < 0 ? source_pos : tree_.pos[static_cast<size_t>(n.parent)]) + 1;
    tree_.pos.push_back(pos), tree_.parent.push_back(n.parent);
    cache.set_position(slot, pos);
    // Its visible slots: the sequence's, its ancestors' (root-most first), its own.
    const int32_t begin = static_cast<int32_t>(plan_.slot_list.size());
    for (int s = 0; s < tree_.past; s++) plan_.slot_list.push_back(s);
    const size_t own = plan_.slot_list.size();
    for (int a = n.parent; a >= 0; a = tree_.parent[static_cast<size_t>(a)]) plan_.slot_list.push_back(tree_.past + a);
    std::reverse(plan_.slot_list.begin() + static_cast<std::ptrdiff_t>(own), plan_.slot_list.end());
    plan_.slot_list.push_back(slot);
    const int32_t end = static_cast<int32_t>(plan_.slot_list.size());
    plan_.rows.push_back(PlannedRow{&cache, n.token, pos, slot, begin, end, begin, end});
    std::copy_n(n.parent < 0 ? &x_[tree_.source * dim] : &tree_x_[static_cast<size_t>(n.parent) * dim], dim, &x_[(r0 + j) * dim]);
  }
  if (static_cast<int64_t>(tree_logits_.size()) < m * V) tree_logits_.resize(static_cast<size_t>(m * V));
  virtual_draft_rows(r0, m, tree_logits_.data(), num_threads() > 1);
  std::copy_n(&x_[r0 * dim], m * dim, &tree_x_[static_cast<size_t>(first) * dim]);  // (the children's input)
  std::vector<int32_t> ids(static_cast<size_t>(k));
  std::vector<float> probs(static_cast<size_t>(k));
  for (int64_t j = 0; j < m; j++) {
    softmax_top_k(&tree_logits_[j * V], V, k, ids.data(), probs.data());
    for (int g = 0; g < k; g++) out[j * k + g] = {ids[static_cast<size_t>(g)], probs[static_cast<size_t>(g)]};
  }
  plan_.rows.resize(static_cast<size_t>(r0));
  plan_.slot_list.resize(list_base);
}

void Transformer::end_row_tree() {
  if (tree_.cache) tree_.cache->truncate(tree_.past);
  tree_.cache = nullptr;
}

}  // namespace jf
