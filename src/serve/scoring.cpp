#include "serve/scoring.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"

namespace jf {

TokenLogprob token_logprob(std::span<const float> logits, int32_t token, int top_k) {
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x - max));
  const float log_z = max + static_cast<float>(std::log(sum));
  TokenLogprob t;
  t.token = token;
  t.logprob = logits[static_cast<size_t>(token)] - log_z;
  const size_t k = std::min(static_cast<size_t>(std::max(top_k, 0)), logits.size());
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] || (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
  });
  for (size_t i = 0; i < k; i++) t.top.emplace_back(ids[i], logits[static_cast<size_t>(ids[i])] - log_z);
  return t;
}

Scorer::Scorer(std::vector<int32_t> text, int from, int held, int top_k, int chunk)
    : text_(std::move(text)),
      from_(static_cast<size_t>(from)),
      next_(std::min(from_ - 1, static_cast<size_t>(std::max(held, 0)))),
      top_k_(top_k),
      chunk_(std::max(1, chunk)) {
  JF_CHECK(from >= 1, "scoring starts after the first token");
  if (from_ >= text_.size()) next_ = text_.size();  // nothing to score
}

SequenceInput* Scorer::next_input(KvCache& cache) {
  if (!started_) {
    started_ = true;
    cache.truncate(static_cast<int>(next_));
  }
  JF_CHECK(cache.size() == static_cast<int>(next_), "the scored cache does not end before the next token");
  const size_t n = std::min(static_cast<size_t>(chunk_), text_.size() - next_);
  input_.set_causal(&cache, std::span<const int32_t>(text_).subspan(next_, n), SequenceInput::Logits::All);
  return &input_;
}

void Scorer::consume(const ForwardResult& rows) {
  const size_t vocab = static_cast<size_t>(rows.vocab_size());
  const size_t n = input_.tokens.size();
  // Row i is the distribution of the token after text[next_ + i].
  for (size_t i = 0; i < n && next_ + i + 1 < text_.size(); i++)
    if (next_ + i + 1 >= from_)
      scored_.push_back(token_logprob(std::span<const float>(rows.logits(static_cast<int>(i)), vocab),
                                    text_[next_ + i + 1], top_k_));
  next_ += n;
  if (next_ + 1 >= text_.size()) next_ = text_.size();  // the last token's own row predicts nothing scored
}

}  // namespace jf
