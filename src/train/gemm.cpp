// Register-tiled C += A·B in the outer-product form (vectorised over the contiguous n dimension).
#include "train/gemm.h"

#include <algorithm>

#include "kernels/parallel.h"

namespace jf {
namespace {

constexpr int kRowTile = 8;   // rows of C per tile (MR)
constexpr int kColTile = 32;  // columns of C per tile (NC): two AVX-512 vectors per row, 16 accumulators

// One MR x NC tile of C, accumulated over all of K in registers, then added to C once.
template <int MR, int NC>
void tile(int64_t K, const float* a, int64_t a_ms, int64_t a_ks, const float* b, int64_t ldb, float* c, int64_t ldc) {
  float acc[MR][NC] = {};
  for (int64_t k = 0; k < K; k++) {
    const float* bk = b + k * ldb;
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
      const float ar = a[r * a_ms + k * a_ks];
      for (int n = 0; n < NC; n++) acc[r][n] += ar * bk[n];
    }
  }
  for (int r = 0; r < MR; r++)
    for (int n = 0; n < NC; n++) c[r * ldc + n] += acc[r][n];
}

using TileFn = void (*)(int64_t, const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t);

template <int NC>
constexpr TileFn kTilesOfWidth[kRowTile] = {&tile<1, NC>, &tile<2, NC>, &tile<3, NC>, &tile<4, NC>,
                                            &tile<5, NC>, &tile<6, NC>, &tile<7, NC>, &tile<8, NC>};

// Rows [m0, m0 + mr) of columns [n0, n1) (n1 - n0 <= kColTile): one full-width tile, or narrower tiles
// (16, 8, then single columns) for the ragged last chunk.
void column_chunk(int mr, int64_t n0, int64_t n1, int64_t K, const float* a, int64_t a_ms, int64_t a_ks,
                  const float* b, int64_t ldb, float* c, int64_t ldc) {
  int64_t n = n0;
  auto run = [&](TileFn fn, int width) {
    for (; n + width <= n1; n += width) fn(K, a, a_ms, a_ks, b + n, ldb, c + n, ldc);
  };
  run(kTilesOfWidth<kColTile>[mr - 1], kColTile);
  run(kTilesOfWidth<16>[mr - 1], 16);
  run(kTilesOfWidth<8>[mr - 1], 8);
  run(kTilesOfWidth<1>[mr - 1], 1);
}

}  // namespace

void gemm_accumulate(bool parallel, int64_t M, int64_t N, int64_t K, const float* a, int64_t a_ms, int64_t a_ks,
                     const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  const int64_t row_blocks = (M + kRowTile - 1) / kRowTile;
  const int64_t col_chunks = (N + kColTile - 1) / kColTile;
  // Column-chunk-major order: consecutive units share the chunk's panel of B, which stays in cache.
  parallel_for(row_blocks * col_chunks, parallel, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) {
      const int64_t chunk = u / row_blocks, m0 = (u % row_blocks) * kRowTile;
      const int mr = static_cast<int>(std::min<int64_t>(kRowTile, M - m0));
      const int64_t n0 = chunk * kColTile, n1 = std::min(N, n0 + kColTile);
      column_chunk(mr, n0, n1, K, a + m0 * a_ms, a_ms, a_ks, b, ldb, c + m0 * ldc, ldc);
    }
  });
}

void transpose(bool parallel, int64_t rows, int64_t cols, const float* src, float* dst) {
  constexpr int64_t kTile = 32;
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
  parallel_for(col_tiles, parallel, [&](int64_t c0, int64_t c1) {
    for (int64_t ct = c0; ct < c1; ct++) {
      const int64_t j0 = ct * kTile, j1 = std::min(cols, j0 + kTile);
      for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
        const int64_t i1 = std::min(rows, i0 + kTile);
        for (int64_t j = j0; j < j1; j++)
          for (int64_t i = i0; i < i1; i++) dst[j * rows + i] = src[i * cols + j];
      }
    }
  });
}

}  // namespace jf
