// AVX-512 matmul: the shared tiles instantiated for 16 fp32 lanes (32 vector registers allow 4x6 tiles).
#include <immintrin.h>

#include "kernels/matmul_tiles.h"

namespace jf::avx512 {

namespace {

struct Vec {
  using T = __m512;
  static constexpr int L = 16;
  static constexpr int MR = 4;  // 4 rows x 6 columns: 24 accumulators, the fastest shape measured
  static constexpr int nr(int mr) { return mr <= 2 ? 12 : 6; }
  // Q8_0 tiles also hold a broadcast scale per weight row: fewer columns per tile.
  static constexpr int nr_q8(int mr) { return mr == 1 ? 12 : 6; }
  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float v) { return _mm512_set1_ps(v); }
  static T loadu(const float* p) { return _mm512_loadu_ps(p); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  // Fixed-order horizontal sum: 512 -> 256 -> 128 -> 64 -> 32 bits.
  static float hsum(T v) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
  static T load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static T load_bf16(const uint16_t* p) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static T load_i8(const int8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
};

}  // namespace

void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1) {
  tiles::matmul_cols<Vec>(x, M, w, y, n0, n1);
}

}  // namespace jf::avx512
