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
  tree_.check(nodes, cfg_.vocab_size);
  if (!tree_.open()) {
    JF_CHECK(!draft_spans_.empty(), "a draft tree after a forward that did not run the draft layer (no draft_logits asked for)");
    tree_source_ = plan_.chain_source(logit_row, nodes[0].token, cfg_.vocab_size);
    JF_CHECK(layer_ran_on(tree_source_), "a draft tree from a sequence that did not draft in the last forward");
    const PlannedRow& source = plan_.rows[static_cast<size_t>(tree_source_)];
    tree_.start(source.cache, source.pos, logit_row);
  }
  tree_.check_row(logit_row);
  const int count = tree_.room(static_cast<int>(nodes.size()), INT32_MAX);
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
  const int first = tree_.nodes();
  if (static_cast<int64_t>(tree_x_.size()) < (first + m) * dim) tree_x_.resize(static_cast<size_t>((first + m) * dim * 2));
  const size_t list_base = plan_.slot_list.size();
  tree_.add_rows(nodes, plan_);  // (the rows after the forward's, r0 on)
  for (int64_t j = 0; j < m; j++) {
    const DraftNode& n = nodes[static_cast<size_t>(j)];
    std::copy_n(n.parent < 0 ? &x_[tree_source_ * dim] : &tree_x_[static_cast<size_t>(n.parent) * dim], dim, &x_[(r0 + j) * dim]);
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

void Transformer::end_row_tree() { tree_.close(); }

}  // namespace jf
