#include "model/schedule.h"

#include <algorithm>
#include <atomic>

namespace jf {

namespace {
std::atomic<MultiRowSchedule> g_schedule{MultiRowSchedule::Auto};

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}
}  // namespace

void set_multirow_schedule(MultiRowSchedule s) { g_schedule.store(s); }
MultiRowSchedule multirow_schedule() { return g_schedule.load(); }

bool ScheduleChooser::split_rows(int64_t n) const {
  switch (multirow_schedule()) {
    case MultiRowSchedule::SplitRows: return true;
    case MultiRowSchedule::SplitMatrices: return false;
    case MultiRowSchedule::Auto: break;
  }
  const Class& c = classes_[class_of(n)];
  if (c.decided >= 0) return c.decided == 1;
  // Alternate, starting with rows: the schedule with fewer trials goes next.
  return c.per_row[1].size() <= c.per_row[0].size();
}

void ScheduleChooser::record(int64_t n, bool split_rows, double seconds) {
  Class& c = classes_[class_of(n)];
  if (c.decided >= 0 || multirow_schedule() != MultiRowSchedule::Auto) return;
  c.per_row[split_rows].push_back(seconds / static_cast<double>(n));
  if (c.per_row[0].size() >= kTrials && c.per_row[1].size() >= kTrials)
    c.decided = median(c.per_row[1]) <= median(c.per_row[0]) ? 1 : 0;
}

}  // namespace jf
