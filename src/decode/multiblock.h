// Jacobi Forcing multi-block decoding with rejection recycling (greedy). Up to K blocks of n tokens are in
// flight. The real-active block sits on the committed prefix: only its verified tokens are committed. The
// pseudo-active blocks follow it in the same forward, conditioned on its unverified draft, and iterate under
// Jacobi; their cache entries are dropped. A block spawns when the newest block has min(ceil(r*n), n-1)
// accepted tokens (a copy of the real-active block's draft tail, padded to n); when the real-active block
// completes, the next block is promoted and all its tokens are verified again as a draft. Rejected tails
// and earlier drafts go into a small pool that persists across blocks; entries containing the pending token
// propose alternative drafts, verified in the same forward as a tree.
#pragma once
#include <deque>
#include <functional>

#include "decode/decoder.h"
#include "decode/draft_layer_switch.h"
#include "decode/draft_init.h"
#include "decode/draft_tree.h"
#include "decode/tree_draft.h"

namespace jf {

struct MultiblockOptions {
  int block = 8;             // n
  int max_blocks = 2;        // K
  float spawn_ratio = 0.85f; // r
  int pool = 4;              // recycled sequences kept (0 = no rejection recycling)
  DraftInit init = DraftInit::Context;
  uint64_t seed = 1234;
  // true: a spawned block starts as the real-active block's draft tail padded to n (the paper's init);
  // false: as the prediction for the position after the newest block, then guesses.
  bool spawn_copy = true;
  // Price every part of a forward (decode/row_cost.h): the real-active draft is cut to the prefix that pays
  // (the rest kept for the next forward), pseudo-active blocks are forwarded (and spawned) only while what
  // they have saved at promotion pays for their rows, recycled candidates only while their wins pay for
  // theirs. false: every forward carries what the parameters say.
  bool adaptive = true;
  bool draft_head = true;  // next drafts from the model's draft head when it has one (decode/jacobi.h)
  int draft_chain = -1;    // a draft layer's chain (JacobiOptions::draft_chain)
  // Draft trees (decode/tree_draft.h; tree.nodes > 0): the draft layer's tree joins the real-active draft (its
  // first branch the chain's) as more branches verified in the same forward.
  TreeShape tree;
};

// A pseudo-active block (exposed for tests).
struct PseudoBlock {
  std::vector<int32_t> acc;    // pseudo-accepted tokens (conditioned on unverified text before them)
  std::vector<int32_t> draft;  // |acc| + |draft| == n
  int32_t after = -1;          // once converged: the prediction for the position after the block
  // Whether draft[0] came from the row before the block (a prediction) rather than a copy or a guess: only
  // then may a step take it as given; otherwise the step first replaces it by that row's prediction.
  bool first_predicted = false;
  std::vector<int32_t> tokens() const {
    std::vector<int32_t> t = acc;
    t.insert(t.end(), draft.begin(), draft.end());
    return t;
  }
};

// One Jacobi step of a pseudo-active block from the argmax of its draft rows (g[j] predicts draft[j + 1]);
// `before` is the prediction of the row before the block for its first token (-1: none was computed).
// `shifted` (a draft layer's, ForwardPass::draft_shift; empty: none): shifted[j] is row j's draft for the token
// after g[j], so the last pseudo-accepted row's takes the place of the row-predicted token after the new first
// one, as lead_with_shifted does for the real-active block. Returns whether it did.
bool advance_pseudo(PseudoBlock& b, const std::vector<int32_t>& g, int32_t before,
                    const std::vector<int32_t>& shifted = {});
// The same, asking for row j's shifted draft only where it is used (shifted_of(j) < 0: none): a draft's argmax
// over the vocabulary is computed for one row a step, not for every pseudo-active row.
bool advance_pseudo(PseudoBlock& b, const std::vector<int32_t>& g, int32_t before,
                    const std::function<int32_t(int)>& shifted_of);

// Kept across generations: the acceptance statistics of its drafts and what its extra rows have been worth.
class MultiblockDecoder : public Decoder {
 public:
  explicit MultiblockDecoder(const MultiblockOptions& o) : opt_(o), policy_(kKinds, std::max(1, o.block - 1)), tree_(o.tree) {}
  std::string name() const override { return "multiblock"; }
  bool drafts_from_model() const override { return opt_.draft_head; }

  DecodeLoop decode(DecodeContext& ctx) override;

 private:
  // What the real-active draft is: a fresh block's guesses, a promoted block's tokens, or predictions.
  enum Kind { kFresh = 1, kPromoted, kPredicted, kDrafted, kKinds = kDrafted };  // kDrafted: the draft layer's or head's
  MultiblockOptions opt_;
  DraftLengthPolicy policy_;
  DraftLayerSwitch layer_;  // whether a forward runs the draft layer (decode/draft_layer_switch.h)
  RowYield pseudo_;    // tokens a promoted block committed beyond a fresh block's expectation, per pseudo row sent
  RowYield recycled_;  // tokens recycled candidates committed beyond the draft, per candidate row sent
  TreeDrafter tree_;
};

}  // namespace jf
