// How a small model's forward uses the threads: not at all (Serial), each thread takes its share of the
// rows through whole layers (SplitRows), or every large enough matrix and the attention are split between
// the threads (SplitMatrices). All three compute every row with the same arithmetic, so the choice changes
// speed, never results. Which is fastest depends on the machine: a hand-off between cores costs from
// ~0.3 us to over 1 us (a 400 ns cache-line round trip between the two vCPUs of one machine class), and a
// small model's whole forward is ~20 us, so splitting can lose to one thread. Splitting rows needs two
// hand-offs per layer and moves activations and cache lines between cores; it measured 1.3x faster on one
// 2-vCPU machine class and 1.6x slower on another (docs/BENCHMARKS.md). Auto times each candidate on the
// first forwards of each batch-size class and keeps the fastest.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace jf {

enum class MultiRowSchedule { Auto, Serial, SplitRows, SplitMatrices };

// Process-wide override (tests, benchmarks); Auto by default.
void set_multirow_schedule(MultiRowSchedule s);
MultiRowSchedule multirow_schedule();

// The per-Transformer state of Auto: takes the candidate schedules in turn for the first kTrials forwards
// each of a class of row counts, then keeps the one with the lowest median time per row. One row has two
// candidates (Serial, SplitMatrices: splitting one row is Serial), more rows all three.
class ScheduleChooser {
 public:
  static constexpr int kTrials = 6;
  // The schedule for a forward over n rows: the override, or Auto's current choice (never Auto).
  MultiRowSchedule choose(int64_t n) const;
  // Records how long a forward over n rows took with the schedule choose(n) returned.
  void record(int64_t n, MultiRowSchedule used, double seconds);

 private:
  static constexpr MultiRowSchedule kCandidates[3] = {MultiRowSchedule::SplitMatrices, MultiRowSchedule::Serial,
                                                      MultiRowSchedule::SplitRows};
  struct Class {
    std::vector<double> per_row[3];  // seconds per row of the trial forwards, by candidate
    int decided = -1;                // -1 while measuring, else the chosen candidate
  };
  static int class_of(int64_t n) { return n <= 1 ? 0 : n <= 2 ? 1 : n <= 4 ? 2 : n <= 8 ? 3 : n <= 16 ? 4 : 5; }
  static int candidates(int64_t n) { return n <= 1 ? 2 : 3; }
  std::array<Class, 6> classes_;
};

}  // namespace jf
