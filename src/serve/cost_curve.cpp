#include "serve/cost_curve.h"

#include <algorithm>

#include "model/forward_timing.h"

namespace jf {

CostCurve::CostCurve(std::vector<std::pair<int, double>> points) : points_(std::move(points)) {
  std::sort(points_.begin(), points_.end());
  for (size_t i = 1; i < points_.size(); i++) points_[i].second = std::max(points_[i].second, points_[i - 1].second);
}

CostCurve CostCurve::measure(ForwardPass& fwd, int max_rows) {
  KvCache cache = fwd.make_cache(std::max(max_rows, 16));
  std::vector<int> rows;
  for (int m = 1; m <= max_rows; m *= 2) rows.push_back(m);
  // At least 3 rounds, more while they are quick (0.05 s a row count).
  const std::vector<double> seconds =
      fastest_forward_seconds(fwd, cache, 0, rows, SequenceInput::Logits::Last, 0.05 * static_cast<double>(rows.size()), 15);
  std::vector<std::pair<int, double>> points;
  for (size_t i = 0; i < rows.size(); i++) points.emplace_back(rows[i], seconds[i]);
  return CostCurve(std::move(points));
}

double CostCurve::seconds(int rows) const {
  if (points_.empty()) return rows;
  if (rows <= points_.front().first) return points_.front().second;
  for (size_t i = 1; i < points_.size(); i++) {
    const auto [r1, t1] = points_[i];
    if (rows <= r1) {
      const auto [r0, t0] = points_[i - 1];
      return t0 + (t1 - t0) * (rows - r0) / (r1 - r0);
    }
  }
  if (points_.size() == 1) return points_[0].second * rows / points_[0].first;
  const auto [r0, t0] = points_[points_.size() - 2];
  const auto [r1, t1] = points_.back();
  return t1 + (t1 - t0) * (rows - r1) / (r1 - r0);
}

int CostCurve::rows_per_sequence(int sequences, double tolerance, int max_rows) const {
  if (sequences <= 1 || points_.empty()) return max_rows;
  const double batch = seconds(sequences), alone = seconds(1);
  int best = 1;
  for (int m = 2; m <= max_rows; m++) {
    if (seconds(sequences * m) / batch > tolerance * seconds(m) / alone) break;
    best = m;
  }
  return best;
}

}  // namespace jf
