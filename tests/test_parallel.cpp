// The thread pool under the one schedule that broke it: jobs issued back to back, a short one after a long
// one, while a worker that lost the race for the last chunk of the previous job is still looking for work.
// This binary builds its own copy of kernels/parallel.cpp with JF_POOL_PUBLISH_GAP defined as a yield
// between publishing a job and opening its claims, the window in which the OS can preempt the caller on a
// busy machine. Before the fix, a worker could read the previous job's exhausted claim together with the
// next job's chunk count, claim a chunk that did not exist and call the previous job's (destroyed)
// function: a rare segfault in jf train under CI load. With the gap it failed within the first few hundred jobs.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "kernels/parallel.h"

namespace jf {
namespace {

// Runs `jobs` jobs of alternately 48 and 2 chunks on `threads` threads; counts chunks that ran other than
// exactly once and chunk indices outside their job.
int64_t misrun_chunks(int threads, int jobs) {
  set_num_threads(threads);
  int64_t wrong = 0;
  for (int j = 0; j < jobs; j++) {
    const int64_t n = j % 2 == 0 ? 48 : 2;
    std::vector<std::atomic<int>> runs(static_cast<size_t>(n));
    std::atomic<int64_t> out_of_range{0};
    parallel_chunks(n, true, [&](int64_t c) {
      if (c < 0 || c >= n) {
        out_of_range.fetch_add(1);
        return;
      }
      runs[static_cast<size_t>(c)].fetch_add(1);
    });
    wrong += out_of_range.load();
    for (const auto& r : runs) wrong += r.load() != 1;
  }
  set_num_threads(1);
  return wrong;
}

TEST(ParallelPool, EveryChunkRunsOnceWhenJobsFollowEachOtherClosely) {
  EXPECT_EQ(misrun_chunks(2, 4000), 0);
  EXPECT_EQ(misrun_chunks(3, 4000), 0);
}

// A chunk that itself calls parallel_chunks, and two threads issuing jobs at once: the pool runs one job at
// a time, the others run inline on their caller, and every chunk still runs exactly once.
TEST(ParallelPool, NestedAndConcurrentCallsRunInline) {
  set_num_threads(3);
  std::vector<std::atomic<int>> inner(16 * 8);
  parallel_chunks(16, true, [&](int64_t c) {
    parallel_chunks(8, true, [&](int64_t d) { inner[static_cast<size_t>(c * 8 + d)].fetch_add(1); });
  });
  for (const auto& r : inner) EXPECT_EQ(r.load(), 1);
  std::atomic<int64_t> wrong{0};
  auto issue = [&] {
    for (int j = 0; j < 500; j++) {
      std::vector<std::atomic<int>> runs(24);
      parallel_chunks(24, true, [&](int64_t c) { runs[static_cast<size_t>(c)].fetch_add(1); });
      for (const auto& r : runs) wrong += r.load() != 1;
    }
  };
  std::thread other(issue);
  issue();
  other.join();
  EXPECT_EQ(wrong.load(), 0);
  set_num_threads(1);
}

TEST(ParallelPool, ResultsDoNotDependOnTheThreadCount) {
  std::vector<int64_t> sums;
  for (int threads : {1, 2, 4}) {
    set_num_threads(threads);
    std::vector<int64_t> out(1000);
    parallel_for(1000, true, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) out[static_cast<size_t>(i)] = i * i;
    });
    int64_t s = 0;
    for (int64_t v : out) s += v;
    sums.push_back(s);
  }
  set_num_threads(1);
  EXPECT_EQ(sums[0], 332833500);
  EXPECT_EQ(sums[1], sums[0]);
  EXPECT_EQ(sums[2], sums[0]);
}

}  // namespace
}  // namespace jf
