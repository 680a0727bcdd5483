// AVX2 kernels over the panel layout (kernels/matmul.h): one broadcast x value times the weights of 8 output
// features at a time, for MR rows of x and NP panels per tile. No horizontal sums, and each weight vector is
// converted to fp32 once per MR rows.
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/matmul.h"

namespace jf::avx2 {

namespace {

// Weights of position k of one panel (8 output features) as fp32 lanes, for the element types.
struct PanelF32 {
  static __m256 load(const uint8_t* panel, int64_t k) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(panel) + k * kPanel);
  }
};
struct PanelF16 {
  static __m256 load(const uint8_t* panel, int64_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + k * kPanel * 2)));
  }
};
struct PanelBF16 {
  static __m256 load(const uint8_t* panel, int64_t k) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + k * kPanel * 2));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
};

// y[col .. col + 8) = v, clipped at N (the last panel of a matrix may be partly padding).
inline void store_panel(__m256 v, float* y, int64_t N, int64_t col) {
  if (col + kPanel <= N) return _mm256_storeu_ps(y + col, v);
  alignas(32) float t[kPanel];
  _mm256_store_ps(t, v);
  for (int64_t c = col; c < N; c++) y[c] = t[c - col];
}

// acc[i][p] = fma(x_i[k], wv[p], acc[i][p]) for MR rows of x (stride K).
template <int MR, int NP>
inline void fma_rows(__m256 (&acc)[MR][NP], const float* x, int64_t K, int64_t k, __m256 (&wv)[NP]) {
#pragma GCC unroll 8
  for (int p = 0; p < NP; p++)
    if constexpr (MR > 1) __asm__("" : "+x"(wv[p]));  // keep the converted weights in registers for all rows
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++) {
    const __m256 b = _mm256_broadcast_ss(x + i * K + k);
#pragma GCC unroll 8
    for (int p = 0; p < NP; p++) acc[i][p] = _mm256_fmadd_ps(b, wv[p], acc[i][p]);
  }
}

template <int MR, int NP>
inline void zero_tile(__m256 (&acc)[MR][NP]) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
    for (int p = 0; p < NP; p++) acc[i][p] = _mm256_setzero_ps();
}

template <int MR, int NP>
inline void store_tile(const __m256 (&acc)[MR][NP], float* y, int64_t N, int64_t col0) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
    for (int p = 0; p < NP; p++) store_panel(acc[i][p], y + i * N, N, col0 + p * kPanel);
}

// Element types (F32, F16, BF16): y[i][col0 + c] for MR rows and NP panels (ps bytes apart).
template <class L, int MR, int NP>
void tile_elem(const float* x, int64_t K, const uint8_t* w, size_t ps, float* y, int64_t N, int64_t col0) {
  __m256 acc[MR][NP];
  zero_tile<MR, NP>(acc);
  for (int64_t k = 0; k < K; k++) {
    __m256 wv[NP];
#pragma GCC unroll 8
    for (int p = 0; p < NP; p++) wv[p] = L::load(w + p * ps, k);
    fma_rows<MR, NP>(acc, x, K, k, wv);
  }
  store_tile<MR, NP>(acc, y, N, col0);
}

// Q8_0: per block of 32 positions, 8 fp32 scales (one per output feature) then 32 x 8 int8 quants; the
// weight is q * d rounded to fp32, as in the row-major kernels.
template <int MR, int NP>
void tile_q8(const float* x, int64_t K, const uint8_t* w, size_t ps, float* y, int64_t N, int64_t col0) {
  __m256 acc[MR][NP];
  zero_tile<MR, NP>(acc);
  const size_t bb = panel_bytes(DType::Q8_0, kQ8Block);
  for (int64_t b = 0; b < K / kQ8Block; b++) {
    __m256 d[NP];
#pragma GCC unroll 8
    for (int p = 0; p < NP; p++) d[p] = _mm256_loadu_ps(reinterpret_cast<const float*>(w + p * ps + b * bb));
    for (int kk = 0; kk < kQ8Block; kk++) {
      __m256 wv[NP];
#pragma GCC unroll 8
      for (int p = 0; p < NP; p++) {
        const uint8_t* q = w + p * ps + b * bb + kPanel * sizeof(float) + kk * kPanel;
        const __m256 qv =
            _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
        wv[p] = _mm256_mul_ps(qv, d[p]);
      }
      fma_rows<MR, NP>(acc, x, K, b * kQ8Block + kk, wv);
    }
  }
  store_tile<MR, NP>(acc, y, N, col0);
}

// Tag for Q8_0 panels (scales per block), which tile_q8 handles.
struct PanelQ8 {};

template <class L, int MR, int NP>
void tile(const float* x, int64_t K, const uint8_t* w, size_t ps, float* y, int64_t N, int64_t col0) {
  if constexpr (std::is_same_v<L, PanelQ8>)
    tile_q8<MR, NP>(x, K, w, ps, y, N, col0);
  else
    tile_elem<L, MR, NP>(x, K, w, ps, y, N, col0);
}

// Panels per tile for MR rows, from the 16 vector registers: MR * NP accumulators + NP converted weights
// (+ NP scales for Q8_0) + 1 broadcast.
template <class L, int MR>
constexpr int kWide = std::is_same_v<L, PanelQ8> ? (MR == 1 ? 6 : MR == 2 ? 4 : 2) : (MR == 1 ? 8 : MR == 2 ? 4 : 3);

// Panels [p0, p1) for MR rows: tiles of kWide panels, then of 2 and 1 for the rest.
template <class L, int MR>
void panel_rows(const float* x, int64_t K, const uint8_t* packed, size_t ps, float* y, int64_t N, int64_t p0,
                int64_t p1) {
  constexpr int NP = kWide<L, MR>;
  int64_t p = p0;
  for (; p + NP <= p1; p += NP) tile<L, MR, NP>(x, K, packed + p * ps, ps, y, N, p * kPanel);
  for (; p + 2 <= p1; p += 2) tile<L, MR, 2>(x, K, packed + p * ps, ps, y, N, p * kPanel);
  for (; p < p1; p++) tile<L, MR, 1>(x, K, packed + p * ps, ps, y, N, p * kPanel);
}

template <class L>
void run_panels(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  const int64_t K = w.cols, N = w.rows;
  const size_t ps = panel_bytes(w.packed_type, K);
  // Panels whose weights stay in cache (~256 KB) while every group of 4 rows passes over them.
  const int64_t group = std::max<int64_t>(12, static_cast<int64_t>((size_t(256) << 10) / ps) / 12 * 12);
  for (int64_t g = p0; g < p1; g += group) {
    const int64_t g1 = std::min(p1, g + group);
    for (int64_t m = 0; m < M; m += 4) {
      const float* xm = x + m * K;
      float* ym = y + m * N;
      switch (std::min<int64_t>(4, M - m)) {
        case 1: panel_rows<L, 1>(xm, K, w.packed, ps, ym, N, g, g1); break;
        case 2: panel_rows<L, 2>(xm, K, w.packed, ps, ym, N, g, g1); break;
        case 3: panel_rows<L, 3>(xm, K, w.packed, ps, ym, N, g, g1); break;
        default: panel_rows<L, 4>(xm, K, w.packed, ps, ym, N, g, g1); break;
      }
    }
  }
}

}  // namespace

void matmul_panels(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  switch (w.packed_type) {
    case DType::F32: return run_panels<PanelF32>(x, M, w, y, p0, p1);
    case DType::F16: return run_panels<PanelF16>(x, M, w, y, p0, p1);
    case DType::BF16: return run_panels<PanelBF16>(x, M, w, y, p0, p1);
    case DType::Q8_0: return run_panels<PanelQ8>(x, M, w, y, p0, p1);
  }
}

}  // namespace jf::avx2
