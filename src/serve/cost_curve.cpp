#include "serve/cost_curve.h"

#include <algorithm>

#include "base/timer.h"
#include "model/kv_cache.h"

namespace jf {

CostCurve::CostCurve(std::vector<std::pair<int, double>> points) : points_(std::move(points)) {
  std::sort(points_.begin(), points_.end());
  for (size_t i = 1; i < points_.size(); i++) points_[i].second = std::max(points_[i].second, points_[i - 1].second);
}

CostCurve CostCurve::measure(ForwardPass& fwd, int max_rows) {
  const int vocab = fwd.config().vocab_size;
  KvCache cache(fwd.config(), std::max(max_rows, 16));
  SequenceInput in;
  std::vector<std::vector<int32_t>> tokens;
  for (int m = 1; m <= max_rows; m *= 2) {
    tokens.emplace_back(static_cast<size_t>(m));
    for (int i = 0; i < m; i++) tokens.back()[i] = static_cast<int32_t>((i * 7 + 1) % vocab);
  }
  // Rounds of one forward of each row count in turn (at least 3, more while they are quick), so that other
  // work on the machine hits every row count alike; the fastest run of each: other work only ever adds time.
  std::vector<double> fastest(tokens.size(), 1e30);
  const double t_end = now_seconds() + 0.05 * static_cast<double>(tokens.size());
  for (int round = 0; round < 3 || (now_seconds() < t_end && round < 15); round++)
    for (size_t i = 0; i < tokens.size(); i++) {
      cache.truncate(0);
      in.set_causal(&cache, tokens[i], SequenceInput::Logits::Last);
      const double t0 = now_seconds();
      fwd.forward(in);
      fastest[i] = std::min(fastest[i], now_seconds() - t0);
    }
  std::vector<std::pair<int, double>> points;
  for (size_t i = 0; i < tokens.size(); i++) points.emplace_back(static_cast<int>(tokens[i].size()), fastest[i]);
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
