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
  std::vector<int32_t> tokens;
  std::vector<std::pair<int, double>> points;
  for (int m = 1; m <= max_rows; m *= 2) {
    tokens.assign(static_cast<size_t>(m), 0);
    for (int i = 0; i < m; i++) tokens[i] = static_cast<int32_t>((i * 7 + 1) % vocab);
    std::vector<double> times;
    const double t_end = now_seconds() + 0.05;  // at least 3 runs, more while they are quick
    do {
      cache.truncate(0);
      in.set_causal(&cache, tokens, SequenceInput::Logits::Last);
      const double t0 = now_seconds();
      fwd.forward(in);
      times.push_back(now_seconds() - t0);
    } while (times.size() < 3 || (now_seconds() < t_end && times.size() < 15));
    // The fastest run: other work on the machine only ever adds time.
    points.emplace_back(m, *std::min_element(times.begin(), times.end()));
  }
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
