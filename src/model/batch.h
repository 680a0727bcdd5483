// The input of one forward pass: for each sequence, new tokens with explicit positions and an explicit
// visibility relation among them (every new token always sees the sequence's whole cache before it).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/tree_growth.h"

namespace jf {

class KvCache;

// visible(i, j): new token i attends to new token j. A token must see itself. Any DAG/tree works;
// an empty mask (size 0) means causal (i sees j <= i).
class VisibilityMask {
 public:
  void reset(int n) {
    n_ = n;
    words_ = (n + 63) / 64;
    bits_.assign(static_cast<size_t>(n) * words_, 0);
  }
  void make_causal(int n) {
    reset(n);
    for (int i = 0; i < n; i++)
      for (int j = 0; j <= i; j++) set(i, j);
  }
  void clear() { reset(0); }
  int size() const { return n_; }
  void set(int i, int j, bool v = true) {
    uint64_t& w = bits_[static_cast<size_t>(i) * words_ + j / 64];
    const uint64_t bit = uint64_t(1) << (j % 64);
    w = v ? (w | bit) : (w & ~bit);
  }
  bool get(int i, int j) const { return (bits_[static_cast<size_t>(i) * words_ + j / 64] >> (j % 64)) & 1; }

 private:
  int n_ = 0, words_ = 0;
  std::vector<uint64_t> bits_;
};

struct SequenceInput {
  KvCache* cache = nullptr;
  std::vector<int32_t> tokens;      // new tokens, stored in cache slots size() .. size() + M - 1
  std::vector<int32_t> positions;   // RoPE position per token; empty: cache->size() + i
  VisibilityMask mask;              // empty: causal
  std::vector<int32_t> logit_rows;  // rows (indices into tokens) whose logits are returned, in this order
  bool draft_logits = false;        // also the draft head's logits for those rows (ForwardResult::draft_logits)
  // What the forward must give back for the logit rows: Logits, each row's logits readable on the host
  // (sampling, logprobs, scoring); Greedy, each row's greedy token only (ForwardResult::greedy), so a GPU
  // copies no logits back (a row's logits can still be read, at the cost of a submission of their own).
  // Kept by reset_rows and set_causal: a decoder says it once.
  enum class Need { Logits, Greedy };
  Need need = Need::Logits;
  // A draft chain asked for up front (ForwardResult::chain): up to `chain_depth` drafts after the shifted draft
  // of the sequence's last verified row, which a backend that runs the chain inside the forward (a GPU: one
  // submission for the forward and the chain) finds as greedy verification does. verify_parent[i] is logit
  // row i's parent in the verification tree: -1 the root (logit row 0, the pending token), -2 a row outside it;
  // a row is verified when its parent is and its token is the parent's greedy token, and the last verified
  // row is the deepest (siblings have distinct tokens, so the verified rows form one path). Asking for a
  // chain from another row, or for more drafts, costs another submission (DeviceSyncs::extra_fetches).
  // Reset by reset_rows and set_causal; needs draft_logits.
  int chain_depth = 0;
  std::vector<int32_t> verify_parent;
  // A draft tree asked for up front (ForwardResult::grown_tree, model/tree_growth.h): grown from the same last
  // verified row by the rule there, in the forward's own submission on a GPU. Reset by reset_rows and
  // set_causal; needs draft_logits and verify_parent.
  TreeGrowth grow_tree;
  // Run the model's draft layer on these rows although no draft logits are asked for: the prompt of a
  // decoder that drafts from the layer (its later drafts attend to these rows' keys and values). A forward
  // where no sequence sets this or draft_logits skips the draft layer: `ar` pays nothing for it.
  bool draft_context = false;

  // Prepares M rows with explicit positions and an empty (all-invisible) mask, for the caller to fill.
  void reset_rows(KvCache* c, int m) {
    cache = c;
    draft_logits = draft_context = false;
    chain_depth = 0;
    verify_parent.clear();
    grow_tree.width = 0;
    tokens.assign(static_cast<size_t>(m), 0);
    positions.assign(static_cast<size_t>(m), 0);
    logit_rows.clear();
    mask.reset(m);
  }

  enum class Logits { None, Last, All };
  // Resets to plain causal input of `toks` at the end of the cache (reusing the vectors' storage).
  void set_causal(KvCache* c, std::span<const int32_t> toks, Logits which) {
    cache = c;
    draft_logits = draft_context = false;
    chain_depth = 0;
    verify_parent.clear();
    grow_tree.width = 0;
    tokens.assign(toks.begin(), toks.end());
    positions.clear();
    mask.clear();
    logit_rows.clear();
    const int n = static_cast<int>(toks.size());
    if (which == Logits::Last && n > 0) logit_rows.push_back(n - 1);
    if (which == Logits::All)
      for (int i = 0; i < n; i++) logit_rows.push_back(i);
  }
  // Same, with logits for the given rows.
  void set_causal(KvCache* c, std::span<const int32_t> toks, std::vector<int32_t> rows) {
    set_causal(c, toks, Logits::None);
    logit_rows = std::move(rows);
  }
};

}  // namespace jf
