// The floor of the 8-row Q4_K tile: what the part of its work that no kernel design can drop costs, from
// cache and streamed from DRAM, beside jf's real kernel in the same run. The floor tile reads jf's real
// Q4_K panels (same bytes, same 4 streams per tile, same prefetch 4 blocks ahead), unpacks every nibble
// and issues every vpdpbusd of 8 rows, but applies no scale, no min and no header: integer sums only (a
// wrong result, a lower bound on time). docs/BENCHMARKS.md uses it to bound time(8) / time(1).
#include <immintrin.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/timer.h"
#include "kernels/cpu.h"
#include "kernels/matmul.h"
#include "kernels/parallel.h"
#include "panel_copies.h"

using namespace jf;

namespace {

constexpr int kRows = 8, kVectors = 2;  // the 8 x 2 tile: 8 rows, 2 vectors of 2 panels (4 streams)
constexpr DType kType = DType::Q4_K;

// Tiles [t0, t1) of `packed`: every nibble of every block times 8 rows of int8 activations (q, K each).
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void floor_tiles(const int8_t* q, int64_t K,
                                                                       const uint8_t* packed, size_t ps,
                                                                       int32_t* out, int ahead_blocks, int64_t t0,
                                                                       int64_t t1) {
  constexpr size_t kBlockBytes = panel_block_bytes(kType), kHeadBytes = panel_head_bytes(kType);
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  for (int64_t t = t0; t < t1; t++) {
    const uint8_t* w = packed + t * 2 * kVectors * ps;
    __m512i acc[kRows][kVectors];
    for (auto& row : acc)
      for (auto& a : row) a = _mm512_setzero_si512();
    for (int64_t b = 0; b < K / kQ8Block; b++) {
      // As jf's tiles: near the end, the next tile's first blocks.
      const bool next = b + ahead_blocks >= K / kQ8Block;
      const uint8_t* pf = next ? w + 2 * kVectors * ps : w;
      const size_t ahead = panel_block_offset(kType, b + ahead_blocks - (next ? K / kQ8Block : 0)) - kHeadBytes;
      for (int p = 0; p < 2 * kVectors && ahead_blocks > 0; p++)
        for (size_t off = 0; off < kBlockBytes + kHeadBytes; off += 64)
          _mm_prefetch(reinterpret_cast<const char*>(pf + p * ps + ahead + off), _MM_HINT_T0);
      const size_t quants = panel_block_offset(kType, b) + panel_quants_offset(kType);
#pragma GCC unroll 4
      for (int h = 0; h < 4; h++) {  // pairs of groups: low nibbles group 2h, high 2h + 1
        __m512i lo[kVectors], hi[kVectors];
        for (int j = 0; j < kVectors; j++) {
          const uint8_t* panel = w + j * 2 * ps + quants + h * 4 * kPanel;
          const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel));
          const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + ps));
          const __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(a), c, 1);
          lo[j] = _mm512_and_si512(v, nibble);
          hi[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
        }
        for (int i = 0; i < kRows; i++) {
          int32_t x0, x1;
          std::memcpy(&x0, q + i * K + b * kQ8Block + 8 * h, 4);
          std::memcpy(&x1, q + i * K + b * kQ8Block + 8 * h + 4, 4);
          const __m512i b0 = _mm512_set1_epi32(x0), b1 = _mm512_set1_epi32(x1);
          for (int j = 0; j < kVectors; j++)
            acc[i][j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(acc[i][j], lo[j], b0), hi[j], b1);
        }
      }
    }
    for (int i = 0; i < kRows; i++)
      for (int j = 0; j < kVectors; j++) _mm512_storeu_si512(out + (t * kRows + i) * 2 * kVectors * kPanel + j * 16, acc[i][j]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The 8-row Q4_K tile's floor (nibbles and dot products only) against jf's kernel"};
  int64_t rows = 5632, cols = 2048;
  int copies = 16, threads = 2, reps = 30;
  std::vector<int> aheads = {4};
  app.add_option("--rows", rows, "Output features N (a multiple of 32)")->check(CLI::Range(int64_t(32), int64_t(1) << 20));
  app.add_option("--cols", cols, "Input features K (a multiple of 256)")->check(CLI::Range(int64_t(256), int64_t(1) << 20));
  app.add_option("--copies", copies, "Panel copies cycled through for the DRAM runs (one is used from cache)")
      ->check(CLI::Range(2, 64));
  app.add_option("--ahead", aheads, "Comma-separated prefetch distances of the floor tile in blocks (0: none; jf's: 4)")
      ->delimiter(',')
      ->check(CLI::Range(0, 64));
  app.add_option("-t,--threads", threads, "Threads")->check(CLI::Range(1, 256));
  app.add_option("--reps", reps, "Repetitions (the fastest is reported)")->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);
  if (rows % 32 != 0 || cols % 256 != 0) {
    std::fprintf(stderr, "tile_floor: --rows must be a multiple of 32 and --cols of 256\n");
    return 1;
  }
  if (!has_avx512_vnni()) {
    std::fprintf(stderr, "tile_floor: needs AVX-512 VNNI\n");
    return 1;
  }
  set_num_threads(threads);
  set_active_isa(Isa::Avx512);

  Rng rng(1);
  const PanelCopies weights = make_panel_copies(kType, rows, cols, copies, rng);
  const std::vector<WeightMatrix>& ws = weights.ws;
  const size_t ps = panel_bytes(kType, cols);
  std::vector<float> x(static_cast<size_t>(kRows * cols)), y(static_cast<size_t>(kRows * rows));
  for (float& v : x) v = rng.normal();
  std::vector<int8_t> q(x.size());
  for (size_t i = 0; i < q.size(); i++) q[i] = static_cast<int8_t>(std::clamp(x[i] * 40.0f, -127.0f, 127.0f));
  std::vector<int32_t> sums(static_cast<size_t>(kRows * rows));
  const int64_t tiles = rows / (2 * kVectors * kPanel);

  // ms per matrix, fastest of reps, over the first n copies.
  auto time = [&](int n, auto&& one) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
      const double t0 = now_seconds();
      for (int c = 0; c < n; c++) one(ws[c]);
      best = std::min(best, (now_seconds() - t0) / n);
    }
    return best * 1e3;
  };
  auto real = [&](int64_t m) {
    return [&, m](const WeightMatrix& w) { matmul(x.data(), m, w, y.data(), threads > 1); };
  };
  auto floor = [&](int ahead) {
    return [&, ahead](const WeightMatrix& w) {
      parallel_for(tiles, threads > 1,
                   [&](int64_t t0, int64_t t1) { floor_tiles(q.data(), cols, w.packed, ps, sums.data(), ahead, t0, t1); });
    };
  };
  std::printf("%lld x %lld Q4_K panels (%.1f MB a copy), %d threads, fastest of %d; DRAM: %d copies cycled\n\n",
              static_cast<long long>(rows), static_cast<long long>(cols), read_bytes(ws[0]) / 1e6, threads, reps, copies);
  std::printf("| kernel | ms from cache | ms from DRAM | DRAM - cache |\n|---|---|---|---|\n");
  auto row = [&](const std::string& name, auto&& one) {
    const double cached = time(1, one), dram = time(copies, one);
    std::printf("| %s | %.3f | %.3f | %.3f |\n", name.c_str(), cached, dram, dram - cached);
    return dram;
  };
  const double one_row = row("jf Q4_K, M = 1", real(1)), eight = row("jf Q4_K, M = 8", real(8));
  double best_floor = 1e30;
  for (int ahead : aheads)
    best_floor = std::min(best_floor, row("floor, M = 8, prefetch " + std::to_string(ahead) + " blocks ahead", floor(ahead)));
  std::printf("\nFrom DRAM: jf(8) / jf(1) = %.2f; fastest floor(8) / jf(1) = %.2f; jf(8) / that floor = %.2f\n",
              eight / one_row, best_floor / one_row, eight / best_floor);
  return 0;
}
