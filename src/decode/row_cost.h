// What a forward of m rows costs relative to a forward of one row, learned from the forwards a session
// has timed. Drafting strategies use it to decide how many speculative rows are worth their price: on a
// tiny model each extra row costs about a third of a forward, on a memory-bound one a few percent.
#pragma once

#include <array>
#include <cstdint>

namespace jf {

class RowCostModel {
 public:
  // Adds one timed forward of `rows` rows.
  void record(int rows, double seconds);
  // Estimated time(rows) / time(1) = 1 + per_row() * (rows - 1).
  double relative(int rows) const { return 1.0 + per_row() * (rows < 1 ? 0 : rows - 1); }
  // Cost of one extra row as a fraction of a one-row forward: the median of the last kSamples forwards of
  // 2..32 rows (larger ones, like a prefill, say little about a decoder's few rows; a median ignores the
  // odd slow one: a preempted forward, or a thread schedule being tried out, model/schedule.h).
  // Optimistic, at most kDefaultRowCost, while fewer than kExplore such forwards were seen or none for
  // kStale one-row forwards: a decoder that stopped drafting on an early estimate would never measure again.
  double per_row() const;

  static constexpr double kDefaultRowCost = 0.25;
  static constexpr int kSamples = 15, kExplore = 4, kStale = 32;

 private:
  // A plain mean over the first samples, then an exponential moving average; after the first few, one
  // sample moves it by at most a factor 1 +- the weight.
  struct Mean {
    double mean = 0;
    int64_t n = 0;
    void add(double x);
  };
  Mean one_row_seconds_;
  std::array<double, kSamples> samples_{};  // extra-row costs, a ring buffer
  int64_t n_samples_ = 0;
  int64_t one_rows_since_sample_ = 0;
};

}  // namespace jf
