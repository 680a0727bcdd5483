// Perplexity of a text: how a token list is cut into fresh contexts, and the summed next-token NLL of one
// context. Two ways of cutting: jf's windows (BOS + window - 1 text tokens each, every token scored once),
// and llama.cpp's `llama-perplexity` chunks (the text with BOS in front cut into chunks of ctx tokens, each
// chunk's first token replaced by BOS, only the second half's predictions scored), whose numbers compare
// with that tool's.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/kv_cache.h"
#include "model/transformer.h"

namespace jf {

// One fresh context: its tokens, and the first position whose logits predict a scored token (position p
// predicts tokens[p + 1]; p runs from first_scored to tokens.size() - 2).
struct ScoredContext {
  std::vector<int32_t> tokens;
  int first_scored = 0;
};

// jf's windows over `text` (no BOS in it): BOS (or the window's first token when bos < 0) + up to
// window - 1 text tokens; every text token is predicted exactly once (window >= 2).
std::vector<ScoredContext> jf_windows(std::span<const int32_t> text, int window, int32_t bos);

// llama-perplexity's chunks over `tokens` (the text as that tool tokenizes it: BOS in front when the
// vocabulary adds one): floor(size / ctx) chunks; bos >= 0 replaces each chunk's first token; positions
// ctx / 2 .. ctx - 2 are scored. Throws jf::Error below 2 * ctx tokens, as the tool refuses them.
std::vector<ScoredContext> llama_cpp_chunks(std::span<const int32_t> tokens, int ctx, int32_t bos);

struct NllSum {
  double nll = 0;     // sum of -log p(next token)
  int64_t count = 0;  // predictions scored
};

// Runs `c` through the model from an empty cache (which must hold c.tokens.size() tokens) in pieces of
// at most `piece` rows (the logits of a whole context can be gigabytes for a large vocabulary; batch
// invariance makes the pieces give the same bits as one forward) and adds its scored predictions to `sum`.
void score_context(ForwardPass& model, KvCache& cache, const ScoredContext& c, NllSum& sum, int piece = 512);

}  // namespace jf
