// AVX-512 attention: key scores and exponentials 16 lanes at a time. Every lane does the arithmetic of the
// AVX2 version and the sums keep its 8-lane order, so both give the same bits; the weighted sum of values
// is the AVX2 code (kernels/ops_avx2.cpp).
#include <immintrin.h>

#include <cmath>

#include "kernels/ops.h"
#include "kernels/simd_avx512.h"

namespace jf::avx512 {

namespace {

// out[b] = (q . keys of the 16 slots of block blk[b]) * scale: lane t is q[0]*k[0] followed by
// fma(q[d], k[d], .) for d = 1 .. hd-1, as in avx2::group_scores.
template <int NB>
inline void block_scores(const float* q, const float* const* blk, int hd, __m512 scale, __m512* out) {
  __m512 acc[NB];
  const __m512 q0 = _mm512_set1_ps(q[0]);
#pragma GCC unroll 8
  for (int b = 0; b < NB; b++) acc[b] = _mm512_mul_ps(q0, _mm512_loadu_ps(blk[b]));
  for (int d = 1; d < hd; d++) {
    const __m512 qd = _mm512_set1_ps(q[d]);
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) acc[b] = _mm512_fmadd_ps(qd, _mm512_loadu_ps(blk[b] + d * kKeyBlock), acc[b]);
  }
#pragma GCC unroll 8
  for (int b = 0; b < NB; b++) out[b] = _mm512_mul_ps(acc[b], scale);
}

// Whether s[0..16) are the 16 slots of one key block, in order.
inline bool whole_block(const int32_t* s) {
  if (s[0] % kKeyBlock != 0) return false;
  const __m512i want = _mm512_add_epi32(_mm512_set1_epi32(s[0]),
                                        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  return _mm512_cmpeq_epi32_mask(_mm512_loadu_si512(s), want) == 0xFFFF;
}

// scores[j] = (q . key of slots[j]) * scale: whole blocks up to 8 at a time, any other slot read out of its
// block's 16-lane score vector.
void key_scores(const float* q, const float* keys, int hd, const int32_t* slots, int64_t n, float scale,
                float* scores) {
  const __m512 sv = _mm512_set1_ps(scale);
  const int64_t bs = int64_t{kKeyBlock} * hd;
  int64_t j = 0;
  while (j < n) {
    const float* blk[8];
    int64_t at[8];
    int nb = 0;
    for (; nb < 8 && j + kKeyBlock <= n && whole_block(slots + j); nb++, j += kKeyBlock) {
      blk[nb] = keys + (slots[j] / kKeyBlock) * bs;
      at[nb] = j;
    }
    __m512 s[8];
    switch (nb) {
      case 0: break;
      case 1: block_scores<1>(q, blk, hd, sv, s); break;
      case 2: block_scores<2>(q, blk, hd, sv, s); break;
      case 3: block_scores<3>(q, blk, hd, sv, s); break;
      case 4: block_scores<4>(q, blk, hd, sv, s); break;
      case 5: block_scores<5>(q, blk, hd, sv, s); break;
      case 6: block_scores<6>(q, blk, hd, sv, s); break;
      case 7: block_scores<7>(q, blk, hd, sv, s); break;
      default: block_scores<8>(q, blk, hd, sv, s); break;
    }
    for (int b = 0; b < nb; b++) _mm512_storeu_ps(scores + at[b], s[b]);
    if (nb > 0) continue;
    const int32_t block = slots[j] / kKeyBlock;
    blk[0] = keys + block * bs;
    block_scores<1>(q, blk, hd, sv, s);
    alignas(64) float t[kKeyBlock];
    _mm512_store_ps(t, s[0]);
    for (; j < n && slots[j] / kKeyBlock == block; j++) scores[j] = t[slots[j] % kKeyBlock];
  }
}

}  // namespace

void attend_head(const float* q, const float* keys, const float* v, int64_t v_stride, int head_dim,
                 const int32_t* slots, int64_t n, float scale, float* scores, float* out) {
  key_scores(q, keys, head_dim, slots, n, scale, scores);
  // The maximum is exact in any order.
  __m512 m = _mm512_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(scores + j));
  float mx = _mm512_reduce_max_ps(m);
  for (; j < n; j++) mx = scores[j] > mx ? scores[j] : mx;
  // exp, and the sum in avx2::attend_head's order: 8-lane vectors of list positions, in list order. A
  // missing tail lane is -inf, whose exp is 0, and adding a zero vector changes no lane.
  const __m512 mv = _mm512_set1_ps(mx);
  __m256 sumv = _mm256_setzero_ps();
  for (j = 0; j < n; j += 16) {
    const __mmask16 live = n - j >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (n - j)) - 1);
    const __m512 x = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), live, scores + j);
    const __m512 e = exp(_mm512_sub_ps(x, mv));
    _mm512_mask_storeu_ps(scores + j, live, e);
    sumv = _mm256_add_ps(sumv, _mm512_castps512_ps256(e));
    sumv = _mm256_add_ps(sumv, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
  }
  alignas(32) float sum8[8];
  _mm256_store_ps(sum8, sumv);
  avx2::attend_values(v, v_stride, head_dim, slots, n, scores, sum8, out);
}

}  // namespace jf::avx512
