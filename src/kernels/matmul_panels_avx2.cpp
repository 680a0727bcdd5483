// AVX2 kernels over the panel layout: the shared panel tiles (kernels/matmul_panel_tiles.h) with one panel
// of 8 output features per vector.
#include <immintrin.h>

#include "kernels/matmul_panel_vec_avx2.h"

namespace jf::avx2 {

void matmul_panels(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  panel_tiles::matmul_panels<PanelVec>(x, M, w, y, p0, p1);
}

void matmul_panels_q8(const Q8Rows& x, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  panel_tiles::matmul_panels_q8<PanelVec>(x, w, y, p0, p1);
}

namespace {

// The largest |x| of n values (a multiple of 8), and whether all are finite.
float max_abs(const float* x, int64_t n, bool& finite) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 amax = _mm256_setzero_ps(), not_finite = _mm256_setzero_ps();
  for (int64_t i = 0; i < n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    amax = _mm256_max_ps(amax, _mm256_and_ps(v, abs_mask));
    not_finite = _mm256_or_ps(not_finite, _mm256_sub_ps(v, v));  // NaN for inf and NaN, else 0
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
  finite = _mm256_movemask_ps(_mm256_cmp_ps(not_finite, not_finite, _CMP_UNORD_Q)) == 0;
  return _mm_cvtss_f32(m4);
}

// The 32 quants of one block at scale 127 / amax; returns their sum.
int32_t quantize_block(const float* xb, float amax, int8_t* qb) {
  const __m256 inv = _mm256_set1_ps(127.0f / amax), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  __m256i n[4];
  for (int i = 0; i < 4; i++)
    n[i] = _mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_mul_ps(_mm256_loadu_ps(xb + 8 * i), inv))));
  // int32 -> int8 (values within [-127, 127], so the saturating packs are exact); packs work per 128-bit
  // lane, the permute puts the four 4-byte groups of each lane back in order.
  const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(qb),
                      _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  const __m256i s8 = _mm256_add_epi32(_mm256_add_epi32(n[0], n[1]), _mm256_add_epi32(n[2], n[3]));
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
  return _mm_cvtsi128_si32(s4);
}

}  // namespace

// The scalar definition (scalar::quantize_row_q8), 8 lanes at a time: the same maximum, the same divisions,
// products and rounding (cvtps rounds to nearest even, as nearbyint does), so the same bits.
void quantize_row_q8(const float* x, int64_t K, int8_t* q, float* d, int32_t* bias, int64_t group) {
  for (int64_t g0 = 0; g0 < K; g0 += group) {
    bool finite = true;
    const float amax = max_abs(x + g0, group, finite);
    for (int64_t b = g0 / kQ8Block; b < (g0 + group) / kQ8Block; b++) {
      int8_t* qb = q + b * kQ8Block;
      if (!finite || amax < kQ8MinAbsMax) {
        std::memset(qb, 0, kQ8Block);
        d[b] = finite ? 0.0f : kQ8NotFinite;
        bias[b] = 0;
        continue;
      }
      d[b] = amax / 127.0f;
      bias[b] = -128 * quantize_block(x + b * kQ8Block, amax, qb);
    }
  }
}

}  // namespace jf::avx2
