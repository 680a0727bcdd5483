// AVX2/FMA matmul: register-blocked MR x NR tiles; per output element the operation sequence is fixed
// (8-lane FMA accumulation over k, fixed horizontal sum, then a scalar tail), whatever the tile shape.
#include <immintrin.h>

#include <algorithm>

#include "kernels/matmul.h"
#include "kernels/simd_avx2.h"

namespace jf::avx2 {

namespace {

// Loaders turn 8 consecutive weights of a row into fp32 lanes.
struct LoadF32 {
  static __m256 load(const uint8_t* row, int64_t k) { return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + k); }
  static float at(const uint8_t* row, int64_t k) { return reinterpret_cast<const float*>(row)[k]; }
};
struct LoadF16 {
  static __m256 load(const uint8_t* row, int64_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + k)));
  }
  static float at(const uint8_t* row, int64_t k) { return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]); }
};
struct LoadBF16 {
  static __m256 load(const uint8_t* row, int64_t k) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + k));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static float at(const uint8_t* row, int64_t k) { return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]); }
};

// MR rows of x times NR weight rows: y[i][j] = dot(x_i, w_j).
template <int MR, int NR, class L>
void tile_float(const float* x, int64_t K, const uint8_t* w, size_t wstride, float* y, int64_t ldy) {
  __m256 acc[MR][NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 16
    for (int j = 0; j < NR; j++) acc[i][j] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= K; k += 8) {
    __m256 wv[NR];
#pragma GCC unroll 16
    for (int j = 0; j < NR; j++) wv[j] = L::load(w + j * wstride, k);
#pragma GCC unroll 16
    for (int i = 0; i < MR; i++) {
      __m256 xv = _mm256_loadu_ps(x + i * K + k);
#pragma GCC unroll 16
      for (int j = 0; j < NR; j++) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MR; i++)
    for (int j = 0; j < NR; j++) {
      float s = hsum(acc[i][j]);
      for (int64_t kk = k; kk < K; kk++) s += x[i * K + kk] * L::at(w + j * wstride, kk);
      y[i * ldy + j] = s;
    }
}

// Q8_0: each weight is q * d (rounded to fp32) before the FMA, block by block.
template <int MR, int NR>
void tile_q8(const float* x, int64_t K, const uint8_t* w, size_t wstride, float* y, int64_t ldy) {
  __m256 acc[MR][NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 16
    for (int j = 0; j < NR; j++) acc[i][j] = _mm256_setzero_ps();
  const int64_t nb = K / kQ8Block;
  for (int64_t b = 0; b < nb; b++) {
    __m256 d[NR];
    const BlockQ8_0* blk[NR];
#pragma GCC unroll 16
    for (int j = 0; j < NR; j++) {
      blk[j] = reinterpret_cast<const BlockQ8_0*>(w + j * wstride) + b;
      d[j] = _mm256_set1_ps(_cvtsh_ss(blk[j]->d));
    }
#pragma GCC unroll 4
    for (int g = 0; g < 4; g++) {
      const int64_t k = b * kQ8Block + g * 8;
      __m256 wv[NR];
#pragma GCC unroll 16
      for (int j = 0; j < NR; j++) {
        __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk[j]->qs + g * 8));
        wv[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d[j]);
      }
#pragma GCC unroll 16
      for (int i = 0; i < MR; i++) {
        __m256 xv = _mm256_loadu_ps(x + i * K + k);
#pragma GCC unroll 16
        for (int j = 0; j < NR; j++) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
      }
    }
  }
  for (int i = 0; i < MR; i++)
    for (int j = 0; j < NR; j++) y[i * ldy + j] = hsum(acc[i][j]);
}

using TileFn = void (*)(const float*, int64_t, const uint8_t*, size_t, float*, int64_t);

// Tile kernels for MR = 1..4 rows: a full 12-column tile is covered by 12/MR calls of NR = 12/MR
// (12 accumulators each); leftover columns use NR = 1.
template <template <int, int> class T>
struct Tiles {
  static constexpr TileFn full[4] = {T<1, 12>::f, T<2, 6>::f, T<3, 4>::f, T<4, 3>::f};
  static constexpr TileFn one[4] = {T<1, 1>::f, T<2, 1>::f, T<3, 1>::f, T<4, 1>::f};
  static constexpr int nr[4] = {12, 6, 4, 3};
};
template <class L>
struct FloatTile {
  template <int MR, int NR>
  struct T {
    static void f(const float* x, int64_t K, const uint8_t* w, size_t ws, float* y, int64_t ldy) {
      tile_float<MR, NR, L>(x, K, w, ws, y, ldy);
    }
  };
};
template <int MR, int NR>
struct Q8Tile {
  static void f(const float* x, int64_t K, const uint8_t* w, size_t ws, float* y, int64_t ldy) {
    tile_q8<MR, NR>(x, K, w, ws, y, ldy);
  }
};

template <template <int, int> class T>
void run_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1) {
  using Tl = Tiles<T>;
  const int64_t K = w.cols, N = w.rows;
  const size_t ws = w.row_bytes();
  constexpr int64_t kRowBlock = 32;  // rows of x kept hot in cache while a weight tile is reused
  for (int64_t m0 = 0; m0 < M; m0 += kRowBlock) {
    const int64_t mb = std::min(kRowBlock, M - m0);
    int64_t n = n0;
    for (; n + kColTile <= n1; n += kColTile) {
      for (int64_t m = m0; m < m0 + mb;) {
        const int mr = static_cast<int>(std::min<int64_t>(4, m0 + mb - m));
        for (int64_t j = 0; j < kColTile; j += Tl::nr[mr - 1])
          Tl::full[mr - 1](x + m * K, K, w.row(n + j), ws, y + m * N + n + j, N);
        m += mr;
      }
    }
    for (; n < n1; n++) {
      for (int64_t m = m0; m < m0 + mb;) {
        const int mr = static_cast<int>(std::min<int64_t>(4, m0 + mb - m));
        Tl::one[mr - 1](x + m * K, K, w.row(n), ws, y + m * N + n, N);
        m += mr;
      }
    }
  }
}

}  // namespace

void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1) {
  switch (w.type) {
    case DType::F32: run_cols<FloatTile<LoadF32>::T>(x, M, w, y, n0, n1); break;
    case DType::F16: run_cols<FloatTile<LoadF16>::T>(x, M, w, y, n0, n1); break;
    case DType::BF16: run_cols<FloatTile<LoadBF16>::T>(x, M, w, y, n0, n1); break;
    case DType::Q8_0: run_cols<Q8Tile>(x, M, w, y, n0, n1); break;
  }
}

}  // namespace jf::avx2
