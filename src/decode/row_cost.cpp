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
  if (rows == 1) return one_row_seconds_.add(seconds);
  if (rows < 2 || rows > kMaxRows || one_row_seconds_.n == 0) return;
  const double extra = (seconds / one_row_seconds_.mean - 1.0) / (rows - 1);
  per_row_.add(std::clamp(extra, 0.001, 4.0));
}

}  // namespace jf
