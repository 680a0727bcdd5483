// Template bodies of draft_tree.h (verification walks).
#pragma once
#include "kernels/ops.h"

namespace jf {

template <class RowLogits>
void accept_greedy(const DraftTree& t, RowLogits row_logits, const Greedy& greedy, Acceptance& out) {
  out.path.clear();
  out.tokens.clear();
  int node = 0;
  for (;;) {
    const int32_t next = greedy(row_logits(node));
    out.tokens.push_back(next);
    const int c = t.child(node, next);
    if (c < 0) return;
    out.path.push_back(c);
    node = c;
  }
}

template <class RowLogits>
void accept_sampled(const DraftTree& t, RowLogits row_logits, Sampler& sampler, Acceptance& out) {
  out.path.clear();
  out.tokens.clear();
  int node = 0;
  for (;;) {
    const int32_t next = sampler.sample(row_logits(node));
    out.tokens.push_back(next);
    const int c = t.child(node, next);
    if (c < 0) return;
    out.path.push_back(c);
    node = c;
  }
}

}  // namespace jf
