// Jacobi decoding (greedy): the pending token plus a draft of guesses go through one forward; the prefix of
// the draft that matches the model's own predictions is committed with one more token, and the predictions
// at the rejected positions become the next draft. Per-block mode: a block of n tokens, the draft shrinks
// as the block fills. Running-window mode: the draft is topped up to n-1 guesses after every step.
// With a draft head (JacobiOptions::draft_head) the next draft is the draft head's predictions instead.
#pragma once
#include "decode/decoder.h"
#include "decode/draft_layer_switch.h"
#include "decode/draft_init.h"
#include "decode/draft_tree.h"
#include "decode/tree_draft.h"

namespace jf {

// Sees every state of every block (per-block mode), for recording Jacobi trajectories.
class JacobiObserver {
 public:
  virtual ~JacobiObserver() = default;
  // Before each forward: the block's n tokens as currently known — accepted so far, then the draft.
  // `start` is the index of the block's first token in prompt + generated text.
  virtual void on_state(int64_t start, std::span<const int32_t> state) = 0;
  // After the block's last forward: its fixed point (the greedy output at those n positions); shorter than
  // n, ending in the EOS token, when the model emits EOS inside the block.
  virtual void on_fixed_point(int64_t start, std::span<const int32_t> tokens) = 0;
};

struct JacobiOptions {
  int block = 4;
  bool running = false;
  DraftInit init = DraftInit::Context;
  uint64_t seed = 1234;
  JacobiObserver* observer = nullptr;  // per-block mode only; complete blocks only
  // Send only the prefix of the draft whose rows pay for themselves (decode/row_cost.h); the rest of the
  // draft is kept for the next forward. false (and with an observer: trajectories are whole Jacobi
  // iterations): every forward carries the whole draft.
  bool adaptive = true;
  // A model with a draft head (ModelWeights::draft_output, trained by `jf train --objective draft-head`):
  // the next draft comes from it, while acceptance still compares the draft with the model's own output
  // head, so the output is the model's greedy output whatever the draft head predicts. false: drafts from
  // the output head, as for any model.
  bool draft_head = true;
  // A draft layer's chain (ForwardResult::chain): drafts after the shifted one from the layer run again;
  // -1: as far as the model's file says it was trained (ModelConfig::draft_chain), 0: none.
  int draft_chain = -1;
  // Draft trees from the draft layer (decode/tree_draft.h; tree.nodes > 0): each forward sends the pending token
  // and a tree of the layer's guesses instead of a chain; the decoder also samples (--temp > 0) that way.
  TreeShape tree;
};

// Kept across generations: the acceptance statistics of its drafts, by kind (guesses, predictions).
class JacobiDecoder : public Decoder {
 public:
  explicit JacobiDecoder(const JacobiOptions& o) : opt_(o), policy_(kKinds, std::max(1, o.block - 1)), tree_(o.tree) {}
  std::string name() const override { return "jacobi"; }
  bool drafts_from_model() const override { return opt_.draft_head; }

  DecodeLoop decode(DecodeContext& ctx) override;

 private:
  // What a draft token is: a guess (a block's first forward), a prediction of an earlier forward's rows, or a
  // draft of the model's draft layer or head (and its chain).
  enum Kind { kGuess = 1, kPredicted, kDrafted, kKinds = kDrafted };
  JacobiOptions opt_;
  DraftLengthPolicy policy_;
  DraftLayerSwitch layer_;
  // Trees (decode/jacobi_tree.cpp): the drafter, and the committed tokens and rows of the recent forwards
  // that sent one (moving averages), which price the layer against forwards of one row.
  TreeDrafter tree_;
  double tree_tokens_ = 2.0, tree_rows_ = 2.0;
  DecodeLoop decode_chain(DecodeContext& ctx);
  DecodeLoop decode_tree(DecodeContext& ctx);
};

// Longest draft a forward can carry: room for the pending row, no further than the generation may go.
int max_draft(const DecodeContext& ctx, int wanted);
// Most tokens a grammar's forced text adds to one forward as drafts (jump-forward).
inline constexpr int kMaxForcedDraft = 32;

// The next draft after a chain's forward with `accepted` draft tokens taken: rows accepted + 1 .. rows - 1
// each predict the token one further on (next_of(r): the greedy token of row r's logits, or of its draft
// head's); up to `keep` of them, in order, replace `next`.
void redraft_from_rows(const std::function<int32_t(int)>& next_of, int accepted, int rows, int keep, std::vector<int32_t>& next);

// A shifted draft `first` (ForwardPass::draft_shift) from the last verified row, for the position right after
// the bonus token: it replaces next[0], or, when the rows predicted nothing, becomes it. Returns the draft
// positions it adds beyond what the rows covered (0 or 1), for append_unsent.
int lead_with_shifted(int32_t first, std::vector<int32_t>& next);

// The chain depth a forward asks for up front (SequenceInput::chain_depth): as far as a PendingChain may fill
// the next draft of a block of `block` (its pending token, the shifted draft, then the chain's), 0 without a
// draft layer. option_chain as for JacobiOptions::draft_chain.
int up_front_chain(const ForwardPass& model, int option_chain, int block);

// Tokens a forward that runs the draft layer drafts: its shifted one and the chain's (option_chain < 0: as far as
// the model was trained); a draft head drafts from every row (`block`).
int draft_layer_tokens(const ForwardPass& model, int option_chain, int block);

// A draft layer's chain after lead_with_shifted (ForwardResult::chain), taken once the next forward's size is
// known and only for the drafts it sends: a CPU computes it then (the priced decoders there often send the
// shifted draft alone, and the chain costs a layer and a head per token); a GPU has it from the forward's own
// submission (asked for up front, up_front_chain).
struct PendingChain {
  int row = -1;  // the last verified row: a logit row of the last forward (its result is the context's)
  // Before the forward that sends draft[0 .. sent - 1], with the session's cache still ending with that row:
  // draft[1 .. min(depth, sent - 1)] from the chain (depth < 0: the model's, ModelConfig::draft_chain), counted
  // as "draft_chain_tokens". Then forgets the row.
  // Returns how many it wrote.
  int fill(DecodeContext& ctx, int depth, int sent, std::vector<int32_t>& draft);
};

// After a forward that sent only draft[0 .. sent-1]: appends the unsent draft tokens that still lie ahead of
// the new pending token's successors (draft[sent + 1 ..]; draft[sent] stood where the last sent row's
// prediction goes), up to `keep` tokens in `next`.
void append_unsent(std::span<const int32_t> draft, int sent, int keep, std::vector<int32_t>& next);

}  // namespace jf
