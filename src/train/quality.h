// Measures of how far a fine-tuned model has moved from its base: per-token comparisons of two models'
// next-token distributions (top-1 agreement, KL(base || model), each model's NLL of the actual next token),
// the repeated-4-gram rate of a generated text, the first position where two greedy outputs differ, and
// the weight merge base + alpha * (tuned - base).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace jf {

struct TokenComparison {
  int64_t rows = 0, agree = 0, scored = 0;  // scored: rows with a target token
  double kl = 0;                             // sum of KL(base || model) over rows
  double nll_base = 0, nll_model = 0;        // sums of -log p(target) over scored rows
  double agreement() const { return rows ? double(agree) / rows : 0.0; }
  double mean_kl() const { return rows ? kl / rows : 0.0; }
  double mean_nll_base() const { return scored ? nll_base / scored : 0.0; }
  double mean_nll_model() const { return scored ? nll_model / scored : 0.0; }
  void add(const TokenComparison& o);
};

// Adds one row: the base's and the model's logits for the same context; target < 0: no next token known.
void compare_row(const float* base_logits, const float* model_logits, int V, int32_t target, TokenComparison& c);

// Repeated 4-grams: of the 4-grams of `tokens`, how many occurred earlier in the same text (counts add up
// over calls through the two totals).
void count_repeated_4grams(std::span<const int32_t> tokens, int64_t* repeated, int64_t* total);

// Whether some n-gram occurs twice among the first `window` tokens: the greedy loop a reader sees at once.
bool loops_within(std::span<const int32_t> tokens, int n = 8, size_t window = 64);

// First index where a and b differ (the shorter length if one is a prefix of the other).
int first_divergence(std::span<const int32_t> a, std::span<const int32_t> b);
double median(std::vector<double> v);  // 0 for an empty vector

// out[i] = (1 - alpha) * base[i] + alpha * tuned[i]: alpha 0 gives base's bits, alpha 1 tuned's.
void merge_weights(const float* base, const float* tuned, int64_t n, float alpha, float* out);

}  // namespace jf
