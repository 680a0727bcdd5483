// Lookahead decoding (Fu et al. 2024): each forward carries the pending token, a 2-D Jacobi window of N-1
// levels x W columns that generates n-grams, and a verification branch of up to G n-grams from the pool
// whose first token is the pending token. Greedy: the longest verified candidate plus the bonus token is
// committed. Sampling: sample then match over the candidates (lossless).
#pragma once
#include "decode/decoder.h"
#include "decode/draft_init.h"
#include "decode/draft_tree.h"
#include "decode/ngram_pool.h"

namespace jf {

struct LookaheadOptions {
  int window = 1;   // W
  int ngram = 3;    // N (>= 2)
  int guesses = 1;  // G (defaults as in decode/options.h)
  bool pool_from_prompt = true;
  DraftInit init = DraftInit::Context;
  uint64_t seed = 1234;
  // Price every part of a forward (decode/row_cost.h): the first candidate is cut to the length that pays,
  // later candidates and the window are sent only when the tokens they have added per row pay for their
  // rows. false: every forward carries up to G candidates and the whole window.
  bool adaptive = true;
};

// Kept across generations: what its candidates and its window have been worth.
class LookaheadDecoder : public Decoder {
 public:
  explicit LookaheadDecoder(const LookaheadOptions& o)
      : opt_(o), first_(1, std::max(1, o.ngram - 1)), later_(static_cast<size_t>(std::max(o.guesses, 1))) {}
  std::string name() const override { return "lookahead"; }

  DecodeLoop decode(DecodeContext& ctx) override;

 private:
  LookaheadOptions opt_;
  DraftLengthPolicy first_;     // the first (most recently used) candidate, per position
  std::vector<RowYield> later_;  // [rank]: tokens a later candidate added over the ones before it, per row
  // Tokens per window row: accepted tokens of candidates only the window proposed (not n-grams of the text).
  RowYield window_;
};

}  // namespace jf
