#include "decode/row_cost.h"

#include <algorithm>

namespace jf {

namespace {
constexpr int64_t kWindow = 20;  // the moving average's weight is 1/kWindow

double median_of(const double* x, size_t n) {
  std::array<double, 64> s{};
  std::copy(x, x + n, s.begin());
  std::nth_element(s.begin(), s.begin() + n / 2, s.begin() + n);
  return s[n / 2];
}
}  // namespace

void RowCostModel::Mean::add(double x) {
  n++;
  if (n > 4 && mean > 0) x = std::clamp(x, 0.5 * mean, 2.0 * mean);
  mean += (x - mean) / static_cast<double>(std::min(n, kWindow));
}

void RowCostModel::record(int rows, double seconds, bool drafted) {
  if (!(seconds > 0)) return;
  if (drafted) {
    const double one = fixed() ? curve_one_seconds_ : one_row_seconds_.mean;
    if (!(one > 0) || rows < 1) return;  // no plain forward measured yet to compare with
    const double overhead = seconds / (one * relative(rows)) - 1.0;
    overhead_[static_cast<size_t>(n_overhead_ % kSamples)] = std::clamp(overhead, -0.5, 4.0);
    n_overhead_++;
    return;
  }
  if (fixed()) return;
  if (rows == 1) {
    one_rows_since_sample_++;
    return one_row_seconds_.add(seconds);
  }
  if (rows < 2 || rows > kMaxRows || one_row_seconds_.n == 0) return;
  const double rel = seconds / one_row_seconds_.mean;
  samples_[static_cast<size_t>(n_samples_ % kSamples)] = std::clamp((rel - 1.0) / (rows - 1), 0.001, 4.0);
  n_samples_++;
  one_rows_since_sample_ = 0;
  const size_t c = static_cast<size_t>(rows - 2);
  by_rows_[c][static_cast<size_t>(n_by_rows_[c] % kPerCount)] = std::clamp(rel, 1.0, 1.0 + 4.0 * (rows - 1));
  n_by_rows_[c]++;
}

void RowCostModel::set_curve(std::vector<std::pair<int, double>> points) {
  std::sort(points.begin(), points.end());
  curve_.clear();
  if (points.empty() || !(points.front().second > 0)) return;
  const double one = points.front().second * (points.front().first == 1 ? 1.0 : 1.0 / points.front().first);
  curve_one_seconds_ = one;
  double last = 0;
  for (const auto& [rows, seconds] : points) {
    last = std::max(last, seconds / one);
    curve_.emplace_back(rows, last);
  }
}

double RowCostModel::per_row() const {
  if (n_samples_ == 0) return kDefaultRowCost;
  const size_t n = static_cast<size_t>(std::min<int64_t>(n_samples_, kSamples));
  const double median = median_of(samples_.data(), n);
  return exploring() ? std::min(median, kDefaultRowCost) : median;
}

double DraftLengthPolicy::best_rate(std::span<const int> kinds, const RowPricer& price) const {
  if (kinds.empty() || kinds[0] < 1) return price.rate(1.0, 1);
  price_tokens(kinds, 0, 0);
  double best = 0;
  price.best_chain(p_, 1.0, 1, {}, &best);
  return best;
}

double RowCostModel::draft_overhead() const {
  if (fixed_overhead_ >= 0) return fixed_overhead_;
  if (n_overhead_ == 0) return 0.0;
  return std::max(0.0, median_of(overhead_.data(), static_cast<size_t>(std::min<int64_t>(n_overhead_, kSamples))));
}

double RowCostModel::relative(int rows) const {
  if (rows <= 1) return 1.0;
  if (fixed()) {
    const auto& c = curve_;
    if (c.size() == 1) return std::max(1.0, c[0].second * rows / c[0].first);
    size_t i = 1;
    while (i + 1 < c.size() && c[i].first < rows) i++;
    const auto [r0, t0] = c[i - 1];
    const auto [r1, t1] = c[i];
    return std::max(1.0, t0 + (t1 - t0) * (rows - r0) / (r1 - r0));
  }
  // Learned: the nearest row counts seen at or below and above `rows`, each its recent median.
  const double slope = per_row();
  auto point = [&](int m) {
    const size_t c = static_cast<size_t>(m - 2);
    const double med = median_of(by_rows_[c].data(), static_cast<size_t>(std::min<int64_t>(n_by_rows_[c], kPerCount)));
    return exploring() ? std::min(med, 1.0 + kDefaultRowCost * (m - 1)) : med;
  };
  int lo = 1;  // the largest row count seen up to `rows`, at the highest cost seen up to there (monotone)
  double t_lo = 1.0;
  for (int m = 2; m <= std::min(rows, kMaxRows); m++)
    if (n_by_rows_[static_cast<size_t>(m - 2)] > 0) lo = m, t_lo = std::max(t_lo, point(m));
  if (lo == rows) return t_lo;
  for (int m = rows + 1; m <= kMaxRows; m++)
    if (n_by_rows_[static_cast<size_t>(m - 2)] > 0) {
      const double t_hi = std::max(t_lo, point(m));
      return t_lo + (t_hi - t_lo) * (rows - lo) / (m - lo);
    }
  return t_lo + slope * (rows - lo);
}

double RowPricer::relative(int rows) const {
  if (shared_ <= 0) return cost_->relative(rows);
  return cost_->relative(shared_ + rows) / cost_->relative(shared_ + 1);
}

int RowPricer::best_chain(std::span<const double> p, double tokens, int rows, std::span<const double> bonus,
                          double* best_rate, std::span<const int> beside) const {
  thread_local std::vector<double> gains;  // token k's: P(tokens 0..k all accepted) and its bonus
  gains.clear();
  double all_accepted = 1.0;
  for (size_t k = 0; k < p.size(); k++) gains.push_back((all_accepted *= p[k]) + (bonus.empty() ? 0.0 : bonus[k]));
  return best_count(gains, tokens, rows, kMargin, best_rate, beside);
}

int RowPricer::best_count(std::span<const double> gains, double tokens, int rows, double margin, double* best_rate,
                          std::span<const int> beside) const {
  int best_k = 0;
  const double none = rate(tokens, rows);
  double best = none, expect = tokens;
  for (int k = 1; k <= static_cast<int>(gains.size()); k++) {
    expect += gains[static_cast<size_t>(k - 1)];
    const double r = rate(expect, rows + k + (static_cast<int>(beside.size()) >= k ? beside[static_cast<size_t>(k - 1)] : 0));
    if (r > best * (1 + 1e-9)) best = r, best_k = k;
  }
  if (best_k > 0 && best <= none * (1 + margin)) best_k = 0, best = none;
  if (best_rate) *best_rate = best;
  return best_k;
}

bool RowPricer::pays(double tokens, int rows, double gain, int extra) const {
  if (extra <= 0) return true;
  return rate(tokens + gain, rows + extra) > rate(tokens, rows) * (1 + kMargin);
}

DraftLengthPolicy::DraftLengthPolicy(int kinds, int draft_max) : positions_(std::clamp(draft_max, 1, 64)) {
  const size_t cells = static_cast<size_t>(std::max(kinds, 1)) * positions_;
  tried_.assign(cells, 0);
  hit_.assign(cells, 0);
}

double DraftLengthPolicy::p_accept(int kind, int i) const {
  // Two pseudo-observations at the estimate of the position before (1/2 at the first): a position that has
  // rarely been reached is taken to be like the one before it, not like a coin.
  double prior = 0.5, p = 0.5;
  for (int j = 0; j <= std::min(i, positions_ - 1); j++) {
    const size_t c = cell(kind, j);
    p = (hit_[c] + 2.0 * prior) / (tried_[c] + 2.0);
    prior = p;
  }
  const size_t c = cell(kind, i);
  // Optimistic until a case has been tried a few times: an early failure (or an early slow forward) must
  // not stop a case from ever being drafted, and so from ever being measured again.
  return tried_[c] < kExplore ? std::max(p, 0.5) : p;
}

void DraftLengthPolicy::price_tokens(std::span<const int> kinds, int from, int to) const {
  const size_t n = kinds.size();
  p_.resize(n);
  bonus_.assign(from > 0 ? n : 0, 0.0);
  double now = 1.0, then = 1.0;
  for (size_t i = 0; i < n; i++) {
    p_[i] = p_accept(kinds[i], static_cast<int>(i));
    if (from > 0)
      bonus_[i] = std::max(0.0, (then *= kinds[i] == from ? p_accept(to, static_cast<int>(i)) : p_[i]) - (now *= p_[i]));
  }
}

int DraftLengthPolicy::choose(std::span<const int> kinds, const RowPricer& price, double tokens, int rows, int from,
                              int to, std::span<const int> beside) {
  if (kinds.empty() || kinds[0] < 1) return 0;
  price_tokens(kinds, from, to);
  const int k = price.best_chain(p_, tokens, rows, bonus_, nullptr, beside);
  if (k > 0) {
    unsent_ = 0;
    retries_left_ = 0;
    retried_ = false;
    return k;
  }
  if (retries_left_ == 0 && ++unsent_ < retry_every_) return 0;
  retries_left_ = retries_left_ > 0 ? retries_left_ - 1 : 1;
  unsent_ = 0;
  // The first token alone, worth what price_tokens found (a guess: also the prediction its row makes), but
  // at least an untried case's 1/2.
  const double worth = p_[0] + (bonus_.empty() ? 0.0 : bonus_[0]);
  retried_ = price.pays(tokens, rows, std::max(worth, 0.5), 1 + (beside.empty() ? 0 : beside[0]));
  return retried_ ? 1 : 0;
}

int DraftLengthPolicy::choose(int kind, int available, const RowPricer& price, double tokens, int rows) {
  kinds_.assign(static_cast<size_t>(std::max(available, 0)), kind);
  return choose(kinds_, price, tokens, rows);
}

double DraftLengthPolicy::expected(std::span<const int> kinds, int length, int from, int to) const {
  if (length <= 0 || kinds.empty() || kinds[0] < 1) return 0;
  price_tokens(kinds.first(static_cast<size_t>(length)), from, to);
  double e = 0, all = 1.0;
  for (int i = 0; i < length; i++) e += (all *= p_[i]) + (bonus_.empty() ? 0.0 : bonus_[i]);
  return e;
}

double DraftLengthPolicy::expected(int kind, int length) const {
  kinds_.assign(static_cast<size_t>(std::max(length, 0)), kind);
  return expected(kinds_, length);
}

void DraftLengthPolicy::record(std::span<const int> kinds, int drafted, int accepted) {
  if (retried_ && drafted > 0) retry_every_ = accepted > 0 ? kRetry : std::min(2 * retry_every_, kMaxRetry);
  retried_ = false;
  for (int i = 0; i < drafted && i <= accepted; i++) {
    if (kinds[i] < 1) return;
    const size_t c = cell(kinds[i], i);
    tried_[c]++;
    if (i < accepted) hit_[c]++;
  }
}

void DraftLengthPolicy::record(int kind, int drafted, int accepted) {
  kinds_.assign(static_cast<size_t>(std::max(drafted, 0)), kind);
  record(kinds_, drafted, accepted);
}

}  // namespace jf
