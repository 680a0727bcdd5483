// How the number of concurrent streams a tile reads changes what streaming weights from DRAM costs it,
// with the 8-row Q4_K tile's memory pattern and compute per byte but no real arithmetic: per block of 32
// positions the tile reads 152 bytes from each of its 4 panels (today's layout: 4 streams), prefetches 4
// blocks ahead, and issues 128-512 vpdpbusd. The same bytes are read as 2 streams of 304, one of 608, or
// with the 4 panels' blocks interleaved (one stream). Each layout runs over a cache-resident buffer and one
// far larger than the last level cache; the ratio is what DRAM costs that layout (docs/BENCHMARKS.md).
#include <immintrin.h>
#include <sys/mman.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "base/timer.h"
#include "kernels/cpu.h"

namespace {

constexpr int kBlocks = 64;  // per panel: K = 2048
constexpr int kTileBlockBytes = 608;  // 4 panels x 152 bytes (Q4_K: 128 of quants, 16 of scales, 8 of header)

// ms per MB of weights over `bytes` of buf: tiles of kStreams streams of kBytes per block each (or, when
// kInterleaved, the 4 panels' blocks side by side), `dots` rounds of 16 vpdpbusd per block.
template <int kStreams, int kBytes, bool kInterleaved>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) double run(const uint8_t* buf, size_t bytes, int dots,
                                                                     int reps) {
  static_assert(kStreams * kBytes == kTileBlockBytes);
  const size_t stream_bytes = size_t(kBytes) * kBlocks, tile_bytes = stream_bytes * kStreams;
  const size_t tiles = bytes / tile_bytes;
  __m512i acc[16];
  for (int i = 0; i < 16; i++) acc[i] = _mm512_set1_epi32(i);
  const __m512i x = _mm512_set1_epi8(3);
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    const double t0 = jf::now_seconds();
    for (size_t t = 0; t < tiles; t++) {
      const uint8_t* tile = buf + t * tile_bytes;
      for (int b = 0; b < kBlocks; b++) {
        __m512i w[kStreams];
        for (int s = 0; s < kStreams; s++) {
          auto at = [&](int block) {
            return kInterleaved ? tile + (size_t(block) * kStreams + s) * kBytes
                                : tile + s * stream_bytes + size_t(block) * kBytes;
          };
          const uint8_t* ahead = at(b + 4);
          for (int off = 0; off < kBytes + 8; off += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + off), _MM_HINT_T0);
          w[s] = _mm512_xor_si512(_mm512_loadu_si512(at(b)), _mm512_loadu_si512(at(b) + 64));
        }
        for (int k = 0; k < dots; k++)
#pragma GCC unroll 16
          for (int i = 0; i < 16; i++) acc[i] = _mm512_dpbusd_epi32(acc[i], w[i % kStreams], x);
      }
    }
    best = std::min(best, jf::now_seconds() - t0);
  }
  for (int i = 0; i < 16; i++) __asm__ volatile("" : : "v"(acc[i]));
  return best / (double(tiles * tile_bytes) / 1e6) * 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"DRAM cost of a tile's concurrent streams (the 8-row Q4_K tile's pattern, one thread)"};
  int mb = 256, dots = 16, reps = 5;
  app.add_option("--mb", mb, "MB streamed from memory (far above the last level cache)")->check(CLI::Range(64, 1 << 16));
  app.add_option("--dots", dots, "Rounds of 16 vpdpbusd per block: 16 matches the 8-row Q4_K tile's time per block")
      ->check(CLI::Range(0, 256));
  app.add_option("--reps", reps, "Runs per layout (the fastest is reported)")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  if (!jf::has_avx512_vnni()) {
    std::fprintf(stderr, "panel_streams: needs AVX-512 VNNI\n");
    return 1;
  }
  const size_t big = size_t(mb) << 20, cached = size_t(8) << 20;
  void* p = mmap(nullptr, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "panel_streams: cannot allocate %d MB\n", mb);
    return 1;
  }
  madvise(p, big, MADV_HUGEPAGE);
  auto* buf = static_cast<uint8_t*>(p);
  for (size_t i = 0; i < big; i += 64) buf[i] = static_cast<uint8_t>(i * 7);
  std::printf("%d rounds of 16 vpdpbusd per block of %d bytes, one thread, fastest of %d; %d MB from DRAM\n\n", dots,
              kTileBlockBytes, reps, mb);
  std::printf("| layout | ms per MB, cached (8 MB) | ms per MB, DRAM | DRAM / cached |\n|---|---|---|---|\n");
  auto row = [&](const char* name, double (*f)(const uint8_t*, size_t, int, int)) {
    const double c = f(buf, cached, dots, reps * 4), d = f(buf, big, dots, reps);
    std::printf("| %s | %.4f | %.4f | %.2f |\n", name, c, d, d / c);
  };
  row("4 streams x 152 B (today's 8-row tile)", run<4, 152, false>);
  row("2 streams x 304 B", run<2, 304, false>);
  row("1 stream x 608 B", run<1, 608, false>);
  row("4 panels' blocks interleaved (1 stream)", run<4, 152, true>);
  munmap(p, big);
  return 0;
}
