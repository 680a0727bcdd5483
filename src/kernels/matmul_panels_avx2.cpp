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

// The scalar definition (scalar::quantize_row_q8), 8 lanes at a time: the same maximum, the same divisions,
// products and rounding (cvtps rounds to nearest even, as nearbyint does), so the same bits.
void quantize_row_q8(const float* x, int64_t K, int8_t* q, float* d, int32_t* bias) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t b = 0; b < K / kQ8Block; b++) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps(), not_finite = _mm256_setzero_ps();
    for (int i = 0; i < 4; i++) {
      v[i] = _mm256_loadu_ps(x + b * kQ8Block + 8 * i);
      amax = _mm256_max_ps(amax, _mm256_and_ps(v[i], abs_mask));
      not_finite = _mm256_or_ps(not_finite, _mm256_sub_ps(v[i], v[i]));  // NaN for inf and NaN, else 0
    }
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
    const float block_max = _mm_cvtss_f32(m4);
    const bool finite = _mm256_movemask_ps(_mm256_cmp_ps(not_finite, not_finite, _CMP_UNORD_Q)) == 0;
    int8_t* qb = q + b * kQ8Block;
    if (!finite || block_max < kQ8MinAbsMax) {
      std::memset(qb, 0, kQ8Block);
      d[b] = finite ? 0.0f : kQ8NotFinite;
      bias[b] = 0;
      continue;
    }
    d[b] = block_max / 127.0f;
    const __m256 inv = _mm256_set1_ps(127.0f / block_max), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    __m256i n[4];
    for (int i = 0; i < 4; i++) n[i] = _mm256_cvtps_epi32(_mm256_min_ps(hi, _mm256_max_ps(lo, _mm256_mul_ps(v[i], inv))));
    // int32 -> int8 (values within [-127, 127], so the saturating packs are exact); packs work per 128-bit
    // lane, the permute puts the four 4-byte groups of each lane back in order.
    const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qb),
                        _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    const __m256i s8 = _mm256_add_epi32(_mm256_add_epi32(n[0], n[1]), _mm256_add_epi32(n[2], n[3]));
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
    bias[b] = -128 * _mm_cvtsi128_si32(s4);
  }
}

}  // namespace jf::avx2
