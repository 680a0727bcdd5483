// How a small model's forward over several rows uses the threads: each thread takes its share of the rows
// through whole layers (SplitRows), or every matrix is split between the threads (SplitMatrices). Both
// compute every row with the same arithmetic, so the choice changes speed, never results. Which is faster
// depends on the machine: splitting rows needs two hand-offs per layer and moves activations and cache
// lines between cores, which measured 1.3x faster on one 2-vCPU machine class and 1.6x slower on another
// (docs/BENCHMARKS.md). Auto measures both on the first forwards of each batch-size class and keeps the
// faster one.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace jf {

enum class MultiRowSchedule { Auto, SplitRows, SplitMatrices };

// Process-wide override (tests, benchmarks); Auto by default.
void set_multirow_schedule(MultiRowSchedule s);
MultiRowSchedule multirow_schedule();

// The per-Transformer state of Auto: alternates between the two schedules for the first kTrials forwards
// of each class of row counts, then keeps the one with the lower median time per row.
class ScheduleChooser {
 public:
  static constexpr int kTrials = 6;
  // Whether the forward over n rows should split rows (the override, or Auto's current choice).
  bool split_rows(int64_t n) const;
  // Records how long a forward over n rows took with the schedule split_rows(n) returned.
  void record(int64_t n, bool split_rows, double seconds);

 private:
  struct Class {
    std::vector<double> per_row[2];  // [split_rows] seconds per row of the trial forwards
    int decided = -1;                // -1 while measuring, else the chosen split_rows
  };
  static int class_of(int64_t n) { return n <= 2 ? 0 : n <= 4 ? 1 : n <= 8 ? 2 : n <= 16 ? 3 : 4; }
  std::array<Class, 5> classes_;
};

}  // namespace jf
