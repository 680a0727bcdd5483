// Speculative Jacobi Decoding (Teng et al. 2024) for sampling: each draft token was sampled from the
// distribution its position had in the previous iteration (q); it is accepted with probability
// min(1, p(x)/q(x)) under the current distribution p, and the first rejection is replaced by a draw from
// normalize(max(0, p - q)). Guesses that were never sampled count as q = one-hot. Lossless in distribution.
#pragma once
#include "decode/decoder.h"
#include "decode/draft_init.h"
#include "decode/row_cost.h"

namespace jf {

struct SjdOptions {
  int block = 4;  // rows per forward: the pending token and block-1 draft tokens
  DraftInit init = DraftInit::Context;
  uint64_t seed = 1234;
  bool accept_all_for_testing = false;  // a deliberately broken verifier, for the statistical test only
  bool wrong_q_row_for_testing = false;  // another: verifies a draft token against its neighbour's q
  bool run_guess_as_draw_for_testing = false;  // another: the run's guesses verified as if drawn from q
  // SJD-PAC's adaptive continuation (Kang et al. 2026): after the first rejection, the later draft tokens
  // are still verified, against this forward's distributions (computed behind the rejected token), and what
  // survives (or its residual redraw) becomes the next draft instead of fresh draws. Only the next draft
  // changes; commits are verified as in plain SJD.
  bool pac_continue = false;
  // SJD-PAC's proactive drafting: after a rejection the next draft is a tree: besides the draft's first token,
  // width - 1 more candidates drawn without replacement from the same distribution, each continued to `depth`
  // tokens; the candidates are verified by recursive rejection sampling (Jeon et al. 2024), lossless.
  int pac_tree_depth = 0;  // D (0: off)
  int pac_tree_width = 1;  // K
  // Send only the prefix of the draft that pays (decode/row_cost.h); the unsent rest, with the distributions
  // it was drawn from, stays the draft. false: every forward carries the whole draft.
  bool adaptive = true;
  // jf's addition to proactive drafting: the tree's first candidate is the rejected position's replacement
  // token repeated (a point-mass guess, tried first; the sampled candidates are then drawn without it). Where a
  // token tends to repeat its neighbour (a pixel its left neighbour's colour) this is the continuation the
  // stale distribution, conditioned on the rejected token, misses. Needs pac_tree_depth > 0. N >= 2: the guess
  // continued as a run of N (a colour's run along a row of pixels), each a point mass, and beside the run's
  // token at every position a candidate sampled from that position's draft distribution without the guess.
  int pac_repeat_guess = 0;
};

// One speculative-sampling decision for draft token x: p and q are normalised dense distributions
// (q == nullptr: x was a guess, q is one-hot at x). Returns x if accepted, else a draw from the residual.
int32_t speculative_verify(const std::vector<float>& p, const float* q, int32_t x, Rng& rng, bool* accepted);

// Recursive rejection sampling over candidates xs drawn without replacement from q (dense, normalised):
// each in turn is accepted with min(1, p'(x)/q'(x)), where after every rejection p' is the normalised
// residual max(0, p' - q') and q' loses the rejected token. Sets *which to the accepted index, or -1 when the
// returned token is a draw from the final residual. `first_is_guess`: xs[0] was not drawn but chosen (a point
// mass: accepted with p(x), its rejection leaves p without x), and the others were drawn from q without it.
int32_t verify_candidates(const std::vector<float>& p, const std::vector<float>& q, std::span<const int32_t> xs, Rng& rng,
                          int* which, bool first_is_guess = false);

// Rows SJD-PAC's tree adds beside the first k draft tokens, out[k - 1] for k = 1..m: the proactive branches
// cut to k, and (a draft led by the repeat guess, run_limit >= 2) the run's path and its leaves. The row
// pricing weighs them with the draft's own rows (RowPricer::best_chain's `beside`).
void pac_rows_beside(const std::vector<std::vector<int32_t>>& branches, int run_limit, bool guess_led, int m, std::vector<int>& out);

// Kept across generations: the acceptance statistics of its drafts, by kind (guesses, sampled tokens).
class SjdDecoder : public Decoder {
 public:
  explicit SjdDecoder(const SjdOptions& o) : opt_(o), policy_(2, std::max(1, o.block - 1)) {}
  std::string name() const override { return "sjd"; }

  DecodeLoop decode(DecodeContext& ctx) override;

 private:
  SjdOptions opt_;
  DraftLengthPolicy policy_;
};

}  // namespace jf
