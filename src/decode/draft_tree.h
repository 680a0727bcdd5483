// Draft tokens as a tree rooted at the pending token, laid out as rows of one forward pass, and the
// verification every strategy shares: greedy (follow the argmax) or sampled (draw, then follow the child
// that matches the draw — "sample then match", lossless for any sampler).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "decode/decoder.h"
#include "model/batch.h"
#include "sample/sampler.h"

namespace jf {

class DraftTree {
 public:
  // Node 0 is the root: the pending token (committed, without a cache entry yet).
  void reset(int32_t root_token);
  // Child of `parent` with `token`; an existing identical child is reused, so shared prefixes of
  // several candidates cost one row.
  int add(int parent, int32_t token);
  // Appends tokens as a chain under `parent`; returns the node of every token.
  std::vector<int> add_chain(int parent, std::span<const int32_t> tokens);

  int size() const { return static_cast<int>(token_.size()); }
  int32_t token(int node) const { return token_[node]; }
  int parent(int node) const { return parent_[node]; }
  int depth(int node) const { return depth_[node]; }
  int child(int node, int32_t token) const;  // -1 if none

  // Writes the nodes as rows 0..size()-1 of `in` (tokens, positions base_pos + depth, each node seeing its
  // ancestors); `in` must have been prepared with reset_rows for at least size() rows. Requests logits for
  // every node, and says the tree for a chain asked for up front (SequenceInput::verify_parent).
  void emit(SequenceInput& in, int base_pos) const;

 private:
  std::vector<int32_t> token_;
  std::vector<int> parent_, depth_;
  std::vector<std::vector<int>> children_;
};

struct Acceptance {
  std::vector<int> path;        // accepted nodes below the root, in order (their rows hold valid KV)
  std::vector<int32_t> tokens;  // tokens to commit: the path's tokens, then the next token
};

// Greedy: from the root, follow the child equal to the greedy token of the current node's row; the last one
// is the bonus token. Node i's results are logit row i of `rows` (the tree's rows come first, emit()). Under
// logit rules (`walk`: DecodeContext::rule_walk) a row's token is taken after them, the walk advancing along.
void accept_greedy(const DraftTree& t, const ForwardResult& rows, Acceptance& out, RuleState* walk = nullptr);
// Sampling: draw the next token from the current node's distribution, follow the child equal to the draw.
// Every committed token is an exact sample of the model's distribution given the committed prefix.
void accept_sampled(const DraftTree& t, const ForwardResult& rows, Sampler& sampler, Acceptance& out,
                    RuleState* walk = nullptr);
// The one a decoder uses: greedy (`greedy`), else sampled with `sampler`; then the accepted path's cache entries
// kept after the committed prefix of length `first_slot` (keep_path).
void accept_and_keep(const DraftTree& t, const ForwardResult& rows, bool greedy, Sampler& sampler, KvCache& cache,
                     int first_slot, Acceptance& out, RuleState* walk = nullptr);

// Lays out the pending token followed by `draft` as one causal chain (rows 0..draft.size(), all with logits)
// in `in`, ready for `co_await ctx.forward(in)`; `tree` and `in` are scratch reused across calls.
void prepare_chain(DecodeContext& ctx, std::span<const int32_t> draft, DraftTree& tree, SequenceInput& in);

// Moves the cache entries of the root and the accepted path (rows first_slot + node) into place after
// the committed prefix of length `first_slot`, dropping all other rows of this forward.
void keep_path(KvCache& cache, int first_slot, const Acceptance& acc);

}  // namespace jf
