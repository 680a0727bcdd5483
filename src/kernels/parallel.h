// Thread count and the one parallel loop the kernels use. Work is split over independent output
// elements only, so results never depend on the number of threads.
#pragma once
#include <omp.h>

#include <cstdint>

namespace jf {

void set_num_threads(int n);  // n <= 0: all hardware threads
int num_threads();

// Calls fn(begin, end) on contiguous chunks of [0, n) — one chunk per thread — when `parallel` is true
// and there is more than one thread; otherwise once with the whole range.
template <class F>
void parallel_for(int64_t n, bool parallel, F&& fn) {
  int nt = num_threads();
  if (!parallel || nt <= 1 || n <= 1) {
    if (n > 0) fn(int64_t(0), n);
    return;
  }
  if (nt > n) nt = static_cast<int>(n);
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num();
    int64_t b = n * t / nt, e = n * (t + 1) / nt;
    if (b < e) fn(b, e);
  }
}

}  // namespace jf
