#include "decode/row_cost.h"

#include <algorithm>

namespace jf {

namespace {
constexpr int kMaxRows = 32;
constexpr int64_t kWindow = 20;  // the moving average's weight is 1/kWindow
}  // namespace

void RowCostModel::Mean::add(double x) {
  n++;
  if (n > 4 && mean > 0) x = std::clamp(x, 0.5 * mean, 2.0 * mean);
  mean += (x - mean) / static_cast<double>(std::min(n, kWindow));
}

void RowCostModel::record(int rows, double seconds) {
  if (!(seconds > 0)) return;
  if (rows == 1) {
    one_rows_since_sample_++;
    return one_row_seconds_.add(seconds);
  }
  if (rows < 2 || rows > kMaxRows || one_row_seconds_.n == 0) return;
  const double extra = (seconds / one_row_seconds_.mean - 1.0) / (rows - 1);
  samples_[static_cast<size_t>(n_samples_ % kSamples)] = std::clamp(extra, 0.001, 4.0);
  n_samples_++;
  one_rows_since_sample_ = 0;
}

double RowCostModel::per_row() const {
  if (n_samples_ == 0) return kDefaultRowCost;
  const size_t n = static_cast<size_t>(std::min<int64_t>(n_samples_, kSamples));
  std::array<double, kSamples> s = samples_;
  std::nth_element(s.begin(), s.begin() + n / 2, s.begin() + n);
  const double median = s[n / 2];
  if (n_samples_ < kExplore || one_rows_since_sample_ >= kStale) return std::min(median, kDefaultRowCost);
  return median;
}

}  // namespace jf
