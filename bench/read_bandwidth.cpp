// DRAM read bandwidth as the matmul kernels see it: a buffer far larger than the caches, read once per
// pass through jf's thread pool (the pool and the chunking a forward uses), for 1..T threads. The number
// the bandwidth bound of forward_cost needs (--bandwidth): bytes of weights / this is the least time a
// forward at M = 1 can take. --streams reads each thread's range as that many regions side by side, as a
// matmul tile reads its panels: how much of the bandwidth survives a tile's number of concurrent streams.
#include <immintrin.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "base/mapped_file.h"
#include "base/timer.h"
#include "kernels/parallel.h"

using namespace jf;

namespace {

// Reads [p, p + n) as `streams` equal regions in step, 64 bytes of each at a time, with 256-bit loads; the
// empty asm keeps them from being dropped.
void read_range(const uint8_t* p, size_t n, int streams) {
  const size_t len = n / size_t(streams) / 64 * 64;
  __m256i a = _mm256_setzero_si256(), b = a;
  for (size_t i = 0; i < len; i += 64)
    for (int s = 0; s < streams; s++) {
      const uint8_t* q = p + size_t(s) * len + i;
      a = _mm256_xor_si256(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)));
      b = _mm256_xor_si256(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + 32)));
    }
  const __m256i x = _mm256_xor_si256(a, b);
  __asm__ volatile("" : : "x"(x));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"DRAM read bandwidth through jf's thread pool"};
  int64_t mb = 1024;
  int max_threads = 2, reps = 10;
  std::vector<int> stream_counts{1};
  app.add_option("--mb", mb, "Buffer size in MB (well above the last-level cache)")
      ->check(CLI::Range(int64_t(16), int64_t(1) << 20));
  app.add_option("-t,--threads", max_threads, "Measure 1 .. this many threads")->check(CLI::Range(1, 256));
  app.add_option("--reps", reps, "Passes per thread count (the fastest is reported)")->check(CLI::Range(1, 100000));
  app.add_option("--streams", stream_counts, "Comma-separated numbers of regions each thread reads side by side")
      ->delimiter(',')
      ->check(CLI::Range(1, 64));
  CLI11_PARSE(app, argc, argv);
  const size_t bytes = size_t(mb) << 20;
  PageBuffer buf(bytes);  // the kind of buffer panel copies live in
  std::memset(buf.data(), 1, bytes);
  std::printf("%lld MB buffer, fastest of %d passes\n\n| threads | streams | ms per pass | GB/s |\n|---|---|---|---|\n",
              static_cast<long long>(mb), reps);
  for (int t = 1; t <= max_threads; t++)
    for (int streams : stream_counts) {
      set_num_threads(t);
      const int64_t chunks = int64_t(bytes >> 20);  // 1 MB chunks, claimed as the matmul's are
      double best = 1e30;
      for (int r = 0; r < reps; r++) {
        const double t0 = now_seconds();
        parallel_for(chunks, t > 1, [&](int64_t c0, int64_t c1) {
          read_range(buf.data() + (size_t(c0) << 20), size_t(c1 - c0) << 20, streams);
        });
        best = std::min(best, now_seconds() - t0);
      }
      std::printf("| %d | %d | %.2f | %.1f |\n", t, streams, best * 1e3, bytes / best / 1e9);
    }
  return 0;
}
