#include "train/quality.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace jf {

void TokenComparison::add(const TokenComparison& o) {
  rows += o.rows, agree += o.agree, scored += o.scored;
  kl += o.kl, nll_base += o.nll_base, nll_model += o.nll_model;
}

namespace {

// log_softmax normaliser in double: KL between near-identical models must come out as ~0, not as noise.
double log_sum_exp(const float* l, int V) {
  const float mx = *std::max_element(l, l + V);
  double s = 0;
  for (int v = 0; v < V; v++) s += std::exp(static_cast<double>(l[v] - mx));
  return mx + std::log(s);
}

}  // namespace

void compare_row(const float* b, const float* m, int V, int32_t target, TokenComparison& c) {
  const double lb = log_sum_exp(b, V), lm = log_sum_exp(m, V);
  double kl = 0;
  for (int v = 0; v < V; v++) {
    const double logp = b[v] - lb, logq = m[v] - lm;
    kl += std::exp(logp) * (logp - logq);
  }
  c.rows++;
  c.kl += std::max(0.0, kl);
  c.agree += std::max_element(b, b + V) - b == std::max_element(m, m + V) - m;
  if (target >= 0 && target < V) {
    c.scored++;
    c.nll_base += lb - b[target];
    c.nll_model += lm - m[target];
  }
}

void count_repeated_4grams(std::span<const int32_t> t, int64_t* repeated, int64_t* total) {
  std::set<std::tuple<int32_t, int32_t, int32_t, int32_t>> seen;
  for (size_t i = 3; i < t.size(); i++) {
    const auto g = std::make_tuple(t[i - 3], t[i - 2], t[i - 1], t[i]);
    (*total)++;
    if (!seen.insert(g).second) (*repeated)++;
  }
}

bool loops_within(std::span<const int32_t> tokens, int n, size_t window) {
  const std::span<const int32_t> head = tokens.first(std::min(window, tokens.size()));
  std::set<std::vector<int32_t>> seen;
  for (size_t i = 0; i + n <= head.size(); i++)
    if (!seen.insert(std::vector<int32_t>(head.begin() + i, head.begin() + i + n)).second) return true;
  return false;
}

int first_divergence(std::span<const int32_t> a, std::span<const int32_t> b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return static_cast<int>(i);
  return static_cast<int>(n);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

void merge_weights(const float* base, const float* tuned, int64_t n, float alpha, float* out) {
  // (1 - a) * b + a * t rather than b + a * (t - b): exact at both ends (a = 0 -> b, a = 1 -> t).
  for (int64_t i = 0; i < n; i++) out[i] = (1.0f - alpha) * base[i] + alpha * tuned[i];
}

}  // namespace jf
