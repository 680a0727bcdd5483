// Thread count and the one parallel loop the kernels use. Work is split over independent output
// elements only, so results never depend on the number of threads or on which thread ran what.
//
// The pool is built for a shared, noisy machine: the calling thread works too, chunks are claimed
// dynamically, and the caller waits only for chunks that were actually claimed — a worker thread the OS
// has not scheduled yet never stalls a forward pass.
#pragma once
#include <cstdint>
#include <algorithm>
#include <functional>

namespace jf {

void set_num_threads(int n);  // n <= 0: all hardware threads
int num_threads();

// Runs fn(chunk) for every chunk in [0, n_chunks), on the pool when `parallel` and more than one thread,
// otherwise inline in order. Returns when all chunks are done. A call made while the pool runs another
// job (from inside fn, or from a second thread) runs inline.
void parallel_chunks(int64_t n_chunks, bool parallel, const std::function<void(int64_t)>& fn);

// Calls fn(begin, end) over [0, n) in contiguous pieces (about 4 per thread for load balance).
template <class F>
void parallel_for(int64_t n, bool parallel, F&& fn) {
  const int nt = num_threads();
  if (!parallel || nt <= 1 || n <= 1) {
    if (n > 0) fn(int64_t(0), n);
    return;
  }
  const int64_t pieces = std::min<int64_t>(n, int64_t(nt) * 4);
  parallel_chunks(pieces, true, [&](int64_t c) { fn(n * c / pieces, n * (c + 1) / pieces); });
}

}  // namespace jf
