#include "decode/draft_tree.h"

#include "base/error.h"
#include "model/kv_cache.h"

namespace jf {

void DraftTree::reset(int32_t root_token) {
  token_.assign(1, root_token);
  parent_.assign(1, -1);
  depth_.assign(1, 0);
  for (auto& c : children_) c.clear();
  if (children_.empty()) children_.emplace_back();
}

int DraftTree::child(int node, int32_t token) const {
  for (int c : children_[node])
    if (token_[c] == token) return c;
  return -1;
}

int DraftTree::add(int parent, int32_t token) {
  JF_CHECK(parent >= 0 && parent < size(), "bad parent");
  if (int c = child(parent, token); c >= 0) return c;
  const int n = size();
  token_.push_back(token);
  parent_.push_back(parent);
  depth_.push_back(depth_[parent] + 1);
  if (static_cast<int>(children_.size()) <= n) children_.emplace_back();
  children_[n].clear();
  children_[parent].push_back(n);
  return n;
}

std::vector<int> DraftTree::add_chain(int parent, std::span<const int32_t> tokens) {
  std::vector<int> nodes;
  nodes.reserve(tokens.size());
  for (int32_t tok : tokens) nodes.push_back(parent = add(parent, tok));
  return nodes;
}

void DraftTree::emit(SequenceInput& in, int base_pos) const {
  JF_CHECK(in.mask.size() >= size() && static_cast<int>(in.tokens.size()) >= size(), "input rows not prepared (reset_rows)");
  for (int i = 0; i < size(); i++) {
    in.tokens[i] = token_[i];
    in.positions[i] = base_pos + depth_[i];
    for (int a = i; a >= 0; a = parent_[a]) in.mask.set(i, a);
    in.logit_rows.push_back(i);
    in.verify_parent.push_back(i == 0 ? -1 : parent_[i]);  // (logit row i is node i: the tree comes first)
  }
}

void prepare_chain(DecodeContext& ctx, std::span<const int32_t> draft, DraftTree& tree, SequenceInput& in) {
  KvCache& cache = ctx.session().cache();
  const int S = cache.size();
  tree.reset(ctx.pending());
  tree.add_chain(0, draft);
  in.reset_rows(&cache, tree.size());
  tree.emit(in, S);
}

void keep_path(KvCache& cache, int first_slot, const Acceptance& acc) {
  std::vector<int32_t> slots;
  slots.reserve(acc.path.size() + 1);
  slots.push_back(first_slot);
  for (int node : acc.path) slots.push_back(first_slot + node);
  cache.keep(first_slot, slots);
}

void accept_greedy(const DraftTree& t, const ForwardResult& rows, Acceptance& out, RuleState* walk) {
  out.path.clear();
  out.tokens.clear();
  int node = 0;
  thread_local std::vector<float> ruled;
  for (;;) {
    const int32_t next = walk ? walk->greedy(rows.logits(node), rows.vocab_size(), ruled) : rows.greedy(node);
    if (walk) walk->advance(next);
    out.tokens.push_back(next);
    const int c = t.child(node, next);
    if (c < 0) return;
    out.path.push_back(c);
    node = c;
  }
}

void accept_sampled(const DraftTree& t, const ForwardResult& rows, Sampler& sampler, Acceptance& out, RuleState* walk) {
  out.path.clear();
  out.tokens.clear();
  int node = 0;
  for (;;) {
    const int32_t next = pick_token(rows, node, false, sampler, walk);
    out.tokens.push_back(next);
    const int c = t.child(node, next);
    if (c < 0) return;
    out.path.push_back(c);
    node = c;
  }
}

void accept_and_keep(const DraftTree& t, const ForwardResult& rows, bool greedy, Sampler& sampler, KvCache& cache,
                     int first_slot, Acceptance& out, RuleState* walk) {
  if (greedy)
    accept_greedy(t, rows, out, walk);
  else
    accept_sampled(t, rows, sampler, out, walk);
  keep_path(cache, first_slot, out);
}

}  // namespace jf
