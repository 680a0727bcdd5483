// `jf tune --kernels`: every member of the matrix family (matmul_family.h: the FMA kernels, and the fp16
// tiles on matrix units where the device has them and they pass the tile probe) timed on the device on a model's own
// matrix shapes, at the row counts a decoder sends (1, 4, 16, 64) and a prompt's (512), and one member chosen
// per shape. Every member of depth 1 is timed at one row (the pipelines compiled in parallel first), then the
// deeper twins of the fastest four, then those the objective could pick and the next fastest at every row
// count. The objective: the least time at one row (decode reads the weights once a token); members within 3%
// of it are told apart by their time at 4-64 rows and at 512 over 8 (rows a forward spends on
// drafts and prompts). The qmm members and the vec -qmm members, which give each other's bits, compete as one
// candidate, the fastest of them at each row count (KernelChoices::Choice::by_rows; every qmm tile and the two
// fastest -qmm members at one row timed at every row count). Every member is batch-invariant, so the choice changes speed, never which tokens a
// decoder emits (a row's bits can differ between members, as between devices). A member's one-row time is its
// one-row twin's, as a decode step runs it (matmul_grid.h's dispatched_member).
#pragma once
#include <string>
#include <vector>

#include "vulkan/matmul_family.h"

namespace jf::vulkan {

class VulkanForward;

struct SweepOptions {
  std::vector<int> rows = {1, 4, 16, 64, 512};
  int reps = 5;                 // products timed a row count (the least of them kept)
  double budget_seconds = 120;  // members not timed once it is spent are left out (and counted)
  std::vector<MatmulKernel> only;  // the members to time (each must be one the device runs); empty: all
};

struct MemberTimes {
  MatmulKernel kernel;
  std::vector<double> seconds;  // a product's device time, by SweepOptions::rows
  // What the driver says it compiled the member to, and its one-row twin to (Kernels::statistics; "" if it does not).
  std::string compiled, compiled_one_row;
};

struct ShapeSweep {
  MatmulShape shape;
  std::vector<MemberTimes> members;  // the members timed (at one row only: NaN at the other row counts)
  size_t chosen = 0;                 // into members (by the objective above)
  size_t default_member = SIZE_MAX;  // the untuned default's index in members (SIZE_MAX: not timed)
  // Where the qmm members won as one candidate (choose_qmm_by_rows): (rows, index into members) by row count.
  std::vector<std::pair<int, size_t>> by_rows;
};

struct SweepResult {
  std::vector<int> rows;
  std::vector<ShapeSweep> shapes;
  int skipped = 0;   // (shape, member) pairs left out by the budget
  int deepened = 0;  // (shape, member) pairs of depth 2 or 4 timed (twins of a shape's fastest depth-1 members)
  // The device kept reading before each shape was timed (bandwidth.h's warm_up, after its pipelines were
  // compiled): the time spent, and the read rate of the first warm-up's first and last submissions.
  double warm_seconds = 0;
  double warm_first_bytes_per_second = 0, warm_last_bytes_per_second = 0;
};

// Times the family on each of the forward's distinct matrices. Throws jf::Error without device timestamps.
SweepResult sweep_matmul_family(VulkanForward& fwd, const SweepOptions& o);
// The member the objective picks among timed ones (rows as in SweepOptions::rows, the first being 1).
size_t choose_member(const std::vector<MemberTimes>& members, const std::vector<int>& rows);
// The qmm members among `members` give each other's bits, so they compete as one candidate whose time at each
// row count is the least of theirs. Where the objective picks that candidate or any qmm member: the fastest
// qmm member at each timed row count, (rows, index into members); else empty.
std::vector<std::pair<int, size_t>> choose_qmm_by_rows(const std::vector<MemberTimes>& members, const std::vector<int>& rows);
// The choices to cache, merged into `into` (shapes of other models are kept).
void record_choices(const SweepResult& r, KernelChoices& into);
// The table `jf tune --kernels` prints: per shape, the chosen member's times beside the default's and the
// fastest at each row count, each with the weights' read bandwidth at one row and, where the driver says,
// what it compiled the member to (registers, spills: why a member is slow).
std::string sweep_table(const SweepResult& r);

}  // namespace jf::vulkan
