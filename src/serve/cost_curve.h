// What one forward costs as a function of its rows (all sequences together), measured on this machine for
// this model, and the draft-row budget the scheduler derives from it: on a CPU extra rows are nearly free
// only up to a point (memory-bound: a few dozen rows; a tiny compute-bound model: barely one), so with many
// sequences in the batch their drafts must shrink or the batch gets slower than plain batched AR.
#pragma once
#include <vector>

#include "model/transformer.h"

namespace jf {

class CostCurve {
 public:
  CostCurve() = default;
  // Points (rows, seconds) with increasing rows; seconds are made non-decreasing.
  explicit CostCurve(std::vector<std::pair<int, double>> points);
  // Times forwards of 1, 2, 4, ... max_rows rows (the fastest of a few each) on a scratch cache.
  static CostCurve measure(ForwardPass& fwd, int max_rows = 64);

  bool empty() const { return points_.empty(); }
  // Seconds for a forward of `rows` rows (linear between measured points, extrapolated past the last).
  double seconds(int rows) const;
  // Most rows each of `sequences` decoding sequences may carry: the largest m such that the batch's forward
  // grows by at most `tolerance` times what m rows cost one sequence alone, t(S m) / t(S) <= tolerance *
  // t(m) / t(1). One sequence is not capped (its decoder runs as in `jf generate`).
  int rows_per_sequence(int sequences, double tolerance, int max_rows) const;
  const std::vector<std::pair<int, double>>& points() const { return points_; }

 private:
  std::vector<std::pair<int, double>> points_;
};

}  // namespace jf
