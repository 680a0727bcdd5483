#include "model/perplexity.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"
#include "model/batch.h"

namespace jf {

std::vector<ScoredContext> jf_windows(std::span<const int32_t> text, int window, int32_t bos) {
  if (window < 2) throw Error("the window must hold at least 2 tokens, got " + std::to_string(window));
  const size_t per_window = static_cast<size_t>(window - 1);
  std::vector<ScoredContext> out;
  for (size_t start = 0; start < text.size(); start += per_window) {
    const size_t end = std::min(text.size(), start + per_window);
    ScoredContext c;
    c.tokens.push_back(bos >= 0 ? bos : text[start]);
    c.tokens.insert(c.tokens.end(), text.begin() + static_cast<ptrdiff_t>(start), text.begin() + static_cast<ptrdiff_t>(end));
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<ScoredContext> llama_cpp_chunks(std::span<const int32_t> tokens, int ctx, int32_t bos) {
  if (ctx < 4) throw Error("the context must hold at least 4 tokens, got " + std::to_string(ctx));
  if (tokens.size() < 2 * static_cast<size_t>(ctx))
    throw Error("the text is " + std::to_string(tokens.size()) + " tokens; a context of " + std::to_string(ctx) +
                " needs at least " + std::to_string(2 * ctx) + " (as llama-perplexity)");
  std::vector<ScoredContext> out;
  for (size_t start = 0; start + static_cast<size_t>(ctx) <= tokens.size(); start += static_cast<size_t>(ctx)) {
    ScoredContext c;
    c.tokens.assign(tokens.begin() + static_cast<ptrdiff_t>(start), tokens.begin() + static_cast<ptrdiff_t>(start) + ctx);
    if (bos >= 0) c.tokens[0] = bos;
    c.first_scored = ctx / 2;
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

// -log softmax(row)[target], in double over the vocabulary.
double token_nll(const float* row, int vocab, int32_t target) {
  float mx = row[0];
  for (int v = 1; v < vocab; v++) mx = std::max(mx, row[v]);
  double sum = 0;
  for (int v = 0; v < vocab; v++) sum += std::exp(static_cast<double>(row[v] - mx));
  return (std::log(sum) + mx) - row[target];
}

}  // namespace

void score_context(ForwardPass& model, KvCache& cache, const ScoredContext& c, NllSum& sum, int piece) {
  const int n = static_cast<int>(c.tokens.size());
  const int vocab = model.vocab_size();
  std::span<const int32_t> all(c.tokens);
  SequenceInput in;
  cache.truncate(0);
  // Rows n - 1 and on predict nothing; a piece's logits are kept only for its scored rows.
  for (int p0 = 0; p0 < n - 1; p0 += piece) {
    const int len = std::min(piece, n - 1 - p0);
    std::vector<int32_t> rows;
    for (int i = std::max(0, c.first_scored - p0); i < len; i++) rows.push_back(i);
    in.set_causal(&cache, all.subspan(static_cast<size_t>(p0), static_cast<size_t>(len)), rows);
    const ForwardResult out = model.forward(in);
    for (size_t r = 0; r < rows.size(); r++) {
      const int p = p0 + rows[r];
      sum.nll += token_nll(out.logits(static_cast<int>(r)), vocab, c.tokens[static_cast<size_t>(p) + 1]);
      sum.count++;
    }
  }
}

}  // namespace jf
