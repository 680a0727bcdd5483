// What a forward of m rows costs relative to a forward of one row, learned from the forwards a session
// has timed. Drafting strategies use it to decide how many speculative rows are worth their price: on a
// tiny model each extra row costs about a third of a forward, on a memory-bound one a few percent.
#pragma once

#include <cstdint>

namespace jf {

class RowCostModel {
 public:
  // Adds one timed forward of `rows` rows.
  void record(int rows, double seconds);
  // Estimated time(rows) / time(1) = 1 + per_row() * (rows - 1).
  double relative(int rows) const { return 1.0 + per_row() * (rows < 1 ? 0 : rows - 1); }
  // Cost of one extra row as a fraction of a one-row forward: the running mean over forwards of 2..32 rows
  // (larger ones, like a prefill, say little about a decoder's few rows), kDefaultRowCost before any.
  double per_row() const { return per_row_.n ? per_row_.mean : kDefaultRowCost; }

  static constexpr double kDefaultRowCost = 0.25;

 private:
  // A plain mean over the first samples, then an exponential moving average; after the first few, one
  // sample (a preempted forward can take 10x as long) moves it by at most a factor 1 +- the weight.
  struct Mean {
    double mean = 0;
    int64_t n = 0;
    void add(double x);
  };
  Mean one_row_seconds_, per_row_;
};

}  // namespace jf
