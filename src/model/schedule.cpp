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

MultiRowSchedule ScheduleChooser::choose(int64_t n) const {
  const MultiRowSchedule forced = multirow_schedule();
  if (forced != MultiRowSchedule::Auto) return forced;
  const Class& c = classes_[class_of(n)];
  if (c.decided >= 0) return kCandidates[c.decided];
  // Round robin: the first candidate with the fewest trials goes next.
  int next = 0;
  for (int i = 1; i < candidates(n); i++)
    if (c.per_row[i].size() < c.per_row[next].size()) next = i;
  return kCandidates[next];
}

void ScheduleChooser::record(int64_t n, MultiRowSchedule used, double seconds) {
  Class& c = classes_[class_of(n)];
  if (c.decided >= 0 || multirow_schedule() != MultiRowSchedule::Auto) return;
  const int k = candidates(n);
  const int i = static_cast<int>(std::find(kCandidates, kCandidates + k, used) - kCandidates);
  if (i == k) return;  // not a candidate for this class (a forward from before an override was lifted)
  c.per_row[i].push_back(seconds / static_cast<double>(std::max<int64_t>(n, 1)));
  for (int j = 0; j < k; j++)
    if (c.per_row[j].size() < kTrials) return;
  int best = 0;
  for (int j = 1; j < k; j++)
    if (median(c.per_row[j]) < median(c.per_row[best])) best = j;
  c.decided = best;
}

}  // namespace jf
