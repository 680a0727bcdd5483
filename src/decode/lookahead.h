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
};

class LookaheadDecoder : public Decoder {
 public:
  explicit LookaheadDecoder(const LookaheadOptions& o) : opt_(o) {}
  std::string name() const override { return "lookahead"; }

  DecodeLoop decode(DecodeContext& ctx) override;

 private:
  LookaheadOptions opt_;
};

}  // namespace jf
