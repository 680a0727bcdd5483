// AVX2/FMA matmul: the shared tiles instantiated for 8 fp32 lanes.
#include <immintrin.h>

#include <algorithm>

#include "kernels/matmul_tiles.h"
#include "kernels/simd_avx2.h"

namespace jf::avx2 {

namespace {

struct Vec {
  using T = __m256;
  static constexpr int L = 8;
  static constexpr int MR = 2;  // 2 rows x 6 columns: 12 accumulators, the fastest shape measured
  static constexpr int nr(int mr) { return mr == 1 ? 12 : 6; }
  // Q8_0 tiles also hold a broadcast scale per weight row: fewer columns per tile.
  static constexpr int nr_q8(int mr) { return mr == 1 ? 12 : 6; }
  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float v) { return _mm256_set1_ps(v); }
  static T loadu(const float* p) { return _mm256_loadu_ps(p); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static float hsum(T v) { return avx2::hsum(v); }
  static T load_f16(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static T load_bf16(const uint16_t* p) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static T load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
};

// y[col .. col + 8) = v, clipped at N (the last panel of a matrix may be partly padding).
inline void store_panel(__m256 v, float* y, int64_t N, int64_t col) {
  if (col + kPanel <= N) return _mm256_storeu_ps(y + col, v);
  alignas(32) float t[kPanel];
  _mm256_store_ps(t, v);
  for (int64_t c = col; c < N; c++) y[c] = t[c - col];
}

// y[i][col0 + c] for MR rows of x (stride K) and NP panels of the small-K layout, c < 8 * NP and col0 + c <
// N.
template <int MR, int NP>
void panel_tile(const float* x, int64_t K, const float* w, float* y, int64_t N, int64_t col0) {
  __m256 acc[MR][NP];
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
    for (int p = 0; p < NP; p++) acc[i][p] = _mm256_setzero_ps();
  const int64_t ps = K * kPanel;
  for (int64_t k = 0; k < K; k++) {
    __m256 wv[NP];
#pragma GCC unroll 8
    for (int p = 0; p < NP; p++) {
      wv[p] = _mm256_loadu_ps(w + p * ps + k * kPanel);
      if constexpr (MR > 1) __asm__("" : "+x"(wv[p]));  // one load per weight vector, not one per row
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      const __m256 b = _mm256_broadcast_ss(x + i * K + k);
#pragma GCC unroll 8
      for (int p = 0; p < NP; p++) acc[i][p] = _mm256_fmadd_ps(b, wv[p], acc[i][p]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
    for (int p = 0; p < NP; p++) store_panel(acc[i][p], y + i * N, N, col0 + p * kPanel);
}

// Panels [p0, p1) for MR rows: as many panels per tile as the 16 vector registers allow.
template <int MR>
void panel_rows(const float* x, int64_t K, const float* packed, float* y, int64_t N, int64_t p0, int64_t p1) {
  constexpr int NP = MR == 1 ? 8 : MR == 2 ? 4 : 3;  // MR * NP accumulators + NP weights + 1 <= 16
  const int64_t ps = K * kPanel;
  int64_t p = p0;
  for (; p + NP <= p1; p += NP) panel_tile<MR, NP>(x, K, packed + p * ps, y, N, p * kPanel);
  if constexpr (NP > 2)
    for (; p + 2 <= p1; p += 2) panel_tile<MR, 2>(x, K, packed + p * ps, y, N, p * kPanel);
  for (; p < p1; p++) panel_tile<MR, 1>(x, K, packed + p * ps, y, N, p * kPanel);
}

}  // namespace

void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1) {
  tiles::matmul_cols<Vec>(x, M, w, y, n0, n1);
}

void matmul_panels(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  const int64_t K = w.cols, N = w.rows;
  constexpr int64_t kGroup = 8;  // panels whose weights stay in L1/L2 while every row group passes
  for (int64_t g = p0; g < p1; g += kGroup) {
    const int64_t g1 = std::min(p1, g + kGroup);
    for (int64_t m = 0; m < M;) {
      const int64_t mr = std::min<int64_t>(4, M - m);
      const float* xm = x + m * K;
      float* ym = y + m * N;
      switch (mr) {
        case 1:
          panel_rows<1>(xm, K, w.packed, ym, N, g, g1);
          break;
        case 2:
          panel_rows<2>(xm, K, w.packed, ym, N, g, g1);
          break;
        case 3:
          panel_rows<3>(xm, K, w.packed, ym, N, g, g1);
          break;
        default:
          panel_rows<4>(xm, K, w.packed, ym, N, g, g1);
          break;
      }
      m += mr;
    }
  }
}

}  // namespace jf::avx2
