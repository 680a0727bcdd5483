// AVX2/FMA matmul: the shared tiles instantiated for 8 fp32 lanes.
#include <immintrin.h>

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
  static T load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static T load_bf16(const uint16_t* p) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static T load_i8(const int8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
};

}  // namespace

void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1) {
  tiles::matmul_cols<Vec>(x, M, w, y, n0, n1);
}

}  // namespace jf::avx2
