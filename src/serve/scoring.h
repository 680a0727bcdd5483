// Log-probabilities of a finished text's tokens, as one-token-at-a-time decoding sees them, whichever
// decoder produced the text: the text is run through the model once more, causally and in chunks, beside
// the other sequences of the batch. Batch invariance makes every row's logits the bits a one-token forward
// computes, and the keys and values it writes the ones the cache held, so the sequence's kept cache is
// unchanged. Costs a prefill of the scored tokens; only requests that ask for logprobs pay it.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "model/batch.h"
#include "model/forward_pass.h"
#include "model/kv_cache.h"

namespace jf {

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;  // the most likely tokens at this position, best first
};

// The log-softmax of one row of logits: the entry of `token` and the `top_k` best.
TokenLogprob token_logprob(std::span<const float> logits, int32_t token, int top_k);

class Scorer {
 public:
  // Scores text[from..] (from >= 1: the first token has no context to be scored in), with `top_k`
  // alternatives per token, `chunk` rows per forward at most. The cache's first `held` entries are the
  // keys and values of text[0..held) (the rest may be a decoder's drafts).
  Scorer(std::vector<int32_t> text, int from, int held, int top_k, int chunk);
  // The next rows, appended to `cache` (cut, on the first call, to the held part before `from`).
  SequenceInput* next_input(KvCache& cache);
  // The logits of every row of the last input (vocab floats each).
  void consume(const ForwardResult& rows);
  bool done() const { return next_ >= text_.size(); }
  std::vector<TokenLogprob> take() { return std::move(scored_); }

 private:
  std::vector<int32_t> text_;
  size_t from_, next_;  // next_: the first token of the next input
  int top_k_, chunk_;
  bool started_ = false;
  SequenceInput input_;
  std::vector<TokenLogprob> scored_;
};

}  // namespace jf
