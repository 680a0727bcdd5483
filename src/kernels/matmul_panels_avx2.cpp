// AVX2 kernels over the panel layout: the shared panel tiles (kernels/matmul_panel_tiles.h) with one panel
// of 8 output features per vector.
#include <immintrin.h>

#include "kernels/matmul_panel_tiles.h"

namespace jf::avx2 {

namespace {

struct PanelVec {
  using T = __m256;
  static constexpr int PP = 1;  // panels per vector
  static constexpr int MR = 4;  // rows of x per pass over the weights
  // Vectors per tile for mr rows, from the 16 vector registers: MR * NV accumulators + NV converted weights
  // + 1 broadcast (any weight type: Q8_0 scales are loaded only between blocks).
  template <class L>
  static constexpr int wide(int mr) { return mr == 1 ? 8 : mr == 2 ? 4 : 3; }
  static T zero() { return _mm256_setzero_ps(); }
  static T broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, T v) { _mm256_storeu_ps(p, v); }
  static void pin(T& v) { __asm__("" : "+x"(v)); }
  // The 8 values at byte offset `off` of the panel (ps, the panel stride, is unused with one panel).
  static T load_f32(const uint8_t* panel, size_t, size_t off) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(panel + off));
  }
  static T load_f16(const uint8_t* panel, size_t, size_t off) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + off)));
  }
  static T load_bf16(const uint8_t* panel, size_t, size_t off) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + off));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static T load_i8(const uint8_t* panel, size_t, size_t off) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(panel + off))));
  }
  // y[col .. col + 8) = v, clipped at N (the last panel of a matrix may be partly padding).
  static void store(T v, float* y, int64_t N, int64_t col) {
    if (col + kPanel <= N) return _mm256_storeu_ps(y + col, v);
    alignas(32) float t[kPanel];
    _mm256_store_ps(t, v);
    for (int64_t c = col; c < N; c++) y[c] = t[c - col];
  }
};

}  // namespace

void matmul_panels(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  panel_tiles::matmul_panels<PanelVec>(x, M, w, y, p0, p1);
}

}  // namespace jf::avx2
