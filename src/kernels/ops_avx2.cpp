// AVX2 versions of the row operations; per element the same operation order as every other call.
#include <immintrin.h>

#include <cmath>

#include "kernels/ops.h"
#include "kernels/simd_avx2.h"

namespace jf::avx2 {

void rmsnorm(const float* x, const float* g, int64_t n, float eps, float* out) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 xv = _mm256_loadu_ps(x + i);
    acc = _mm256_fmadd_ps(xv, xv, acc);
  }
  float ss = hsum(acc);
  for (int64_t j = i; j < n; j++) ss += x[j] * x[j];
  const float scale = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  const __m256 sv = _mm256_set1_ps(scale);
  for (i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(g + i), _mm256_mul_ps(sv, _mm256_loadu_ps(x + i))));
  for (; i < n; i++) out[i] = g[i] * (scale * x[i]);
}

void silu_mul(float* gate, const float* up, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(gate + i);
    __m256 e = exp(_mm256_sub_ps(_mm256_setzero_ps(), v));
    __m256 s = _mm256_div_ps(v, _mm256_add_ps(one, e));
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
  }
  // Tail through the same vector code on a padded copy, so every element sees identical arithmetic.
  if (i < n) {
    alignas(32) float gv[8] = {0}, uv[8] = {0};
    for (int64_t j = i; j < n; j++) gv[j - i] = gate[j], uv[j - i] = up[j];
    __m256 v = _mm256_load_ps(gv);
    __m256 s = _mm256_div_ps(v, _mm256_add_ps(one, exp(_mm256_sub_ps(_mm256_setzero_ps(), v))));
    _mm256_store_ps(gv, _mm256_mul_ps(s, _mm256_load_ps(uv)));
    for (int64_t j = i; j < n; j++) gate[j] = gv[j - i];
  }
}

int64_t argmax(const float* x, int64_t n) {
  // max_ps(x, m) returns m when x is NaN, so NaNs never win; then the first index holding the maximum.
  __m256 m = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + i), m);
  float mx = hmax(m);
  for (; i < n; i++) mx = x[i] > mx ? x[i] : mx;
  const __m256 mv = _mm256_set1_ps(mx);
  for (i = 0; i + 8 <= n; i += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), mv, _CMP_EQ_OQ));
    if (mask) return i + __builtin_ctz(static_cast<unsigned>(mask));
  }
  for (; i < n; i++)
    if (x[i] == mx) return i;
  return scalar::argmax(x, n);  // every value is NaN
}

namespace {

// The largest of n values (exact whatever the order, so the vector form changes no result).
inline float max_of(const float* x, int64_t n) {
  __m256 m = _mm256_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + j));
  float mx = hmax(m);
  for (; j < n; j++) mx = x[j] > mx ? x[j] : mx;
  return mx;
}

// Scores are computed for groups of 8 consecutive slots (half a key block of kernels/ops.h): dimension d of
// group g's slots is 8 floats at group_keys(keys, hd, g) + d * kKeyBlock.
constexpr int kGroup = 8;
inline const float* group_keys(const float* keys, int hd, int64_t g) {
  constexpr int per_block = kKeyBlock / kGroup;
  return keys + (g / per_block) * kKeyBlock * hd + (g % per_block) * kGroup;
}

// out[b] = (q . keys of the 8 slots of group grp[b]) * scale, NB groups at a time so the FMA chains overlap.
// Each lane is q[0]*k[0] followed by fma(q[d], k[d], .) for d = 1 .. hd-1: a slot's score does not depend on
// which other slots share its group or its batch.
template <int NB>
inline void group_scores(const float* q, const float* const* grp, int hd, __m256 scale, __m256* out) {
  __m256 acc[NB];
  const __m256 q0 = _mm256_broadcast_ss(q);
#pragma GCC unroll 8
  for (int b = 0; b < NB; b++) acc[b] = _mm256_mul_ps(q0, _mm256_loadu_ps(grp[b]));
  for (int d = 1; d < hd; d++) {
    const __m256 qd = _mm256_broadcast_ss(q + d);
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) acc[b] = _mm256_fmadd_ps(qd, _mm256_loadu_ps(grp[b] + d * kKeyBlock), acc[b]);
  }
#pragma GCC unroll 8
  for (int b = 0; b < NB; b++) out[b] = _mm256_mul_ps(acc[b], scale);
}

// Whether s[0..8) are the 8 slots of one group, in order.
inline bool whole_group(const int32_t* s) {
  if (s[0] % kGroup != 0) return false;
  const __m256i want = _mm256_add_epi32(_mm256_set1_epi32(s[0]), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i got = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
  return _mm256_movemask_epi8(_mm256_cmpeq_epi32(got, want)) == -1;
}

// scores[j] = (q . key of slots[j]) * scale. Runs of whole groups (the committed prefix) are scored up to 8
// groups at a time; any other slot is read out of its group's full 8-lane score vector.
void key_scores(const float* q, const float* keys, int hd, const int32_t* slots, int64_t n, float scale,
                float* scores) {
  const __m256 sv = _mm256_set1_ps(scale);
  int64_t j = 0;
  while (j < n) {
    const float* grp[8];
    int64_t at[8];
    int nb = 0;
    for (; nb < 8 && j + kGroup <= n && whole_group(slots + j); nb++, j += kGroup) {
      grp[nb] = group_keys(keys, hd, slots[j] / kGroup);
      at[nb] = j;
    }
    __m256 s[8];
    switch (nb) {
      case 0: break;
      case 1: group_scores<1>(q, grp, hd, sv, s); break;
      case 2: group_scores<2>(q, grp, hd, sv, s); break;
      case 3: group_scores<3>(q, grp, hd, sv, s); break;
      case 4: group_scores<4>(q, grp, hd, sv, s); break;
      case 5: group_scores<5>(q, grp, hd, sv, s); break;
      case 6: group_scores<6>(q, grp, hd, sv, s); break;
      case 7: group_scores<7>(q, grp, hd, sv, s); break;
      default: group_scores<8>(q, grp, hd, sv, s); break;
    }
    for (int b = 0; b < nb; b++) _mm256_storeu_ps(scores + at[b], s[b]);
    if (nb > 0) continue;
    // A slot whose group is not listed whole: score the group, keep the lanes of the listed slots in it.
    const int32_t g = slots[j] / kGroup;
    grp[0] = group_keys(keys, hd, g);
    group_scores<1>(q, grp, hd, sv, s);
    alignas(32) float t[kGroup];
    _mm256_store_ps(t, s[0]);
    for (; j < n && slots[j] / kGroup == g; j++) scores[j] = t[slots[j] % kGroup];
  }
}

// out = inv * sum_j p_j v_j over head_dim = 8 * NV. Keys are spread over IL interleaved accumulator sets
// by their index in the list (j mod IL) and the sets are added in a fixed order at the end: the result
// depends only on the list, and independent chains keep the FMA units busy.
template <int NV>
void weighted_sum(const float* v, int64_t stride, const int32_t* slots, int64_t n, const float* p, float inv,
                  float* out) {
  constexpr int IL = NV >= 4 ? 1 : 4 / NV;
  __m256 acc[IL][NV];
  for (int a = 0; a < IL; a++)
    for (int d = 0; d < NV; d++) acc[a][d] = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + IL <= n; j += IL)
    for (int a = 0; a < IL; a++) {
      const float* vj = v + slots[j + a] * stride;
      const __m256 pj = _mm256_set1_ps(p[j + a]);
      for (int d = 0; d < NV; d++) acc[a][d] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + 8 * d), acc[a][d]);
    }
  for (int a = 0; j < n; j++, a++) {
    const float* vj = v + slots[j] * stride;
    const __m256 pj = _mm256_set1_ps(p[j]);
    for (int d = 0; d < NV; d++) acc[a][d] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + 8 * d), acc[a][d]);
  }
  for (int w = 1; w < IL; w *= 2)  // pairwise tree: (0+1)+(2+3)
    for (int a = 0; a + w < IL; a += 2 * w)
      for (int d = 0; d < NV; d++) acc[a][d] = _mm256_add_ps(acc[a][d], acc[a + w][d]);
  const __m256 iv = _mm256_set1_ps(inv);
  for (int d = 0; d < NV; d++) _mm256_storeu_ps(out + 8 * d, _mm256_mul_ps(acc[0][d], iv));
}

}  // namespace

void attend_head(const float* q, const float* keys, const float* v, int64_t v_stride, int head_dim,
                 const int32_t* slots, int64_t n, float scale, float* scores, float* out) {
  key_scores(q, keys, head_dim, slots, n, scale, scores);
  const float mx = max_of(scores, n);
  // exp and sum over the score list in 8-wide blocks (padded tail), so equal lists give equal bits.
  const __m256 mv = _mm256_set1_ps(mx);
  __m256 sumv = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 e = exp(_mm256_sub_ps(_mm256_loadu_ps(scores + j), mv));
    _mm256_storeu_ps(scores + j, e);
    sumv = _mm256_add_ps(sumv, e);
  }
  if (j < n) {  // the tail as one vector whose missing lanes are -inf (exp gives 0, the sum is unchanged)
    const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - j)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 x = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(scores + j, live), _mm256_castsi256_ps(live));
    const __m256 e = exp(_mm256_sub_ps(x, mv));
    _mm256_maskstore_ps(scores + j, live, e);
    sumv = _mm256_add_ps(sumv, e);
  }
  alignas(32) float sum8[8];
  _mm256_store_ps(sum8, sumv);
  attend_values(v, v_stride, head_dim, slots, n, scores, sum8, out);
}

void attend_values(const float* v, int64_t v_stride, int head_dim, const int32_t* slots, int64_t n, const float* p,
                   const float* sum8, float* out) {
  const float inv = 1.0f / hsum(_mm256_loadu_ps(sum8));
  switch (head_dim) {
    case 8: return weighted_sum<1>(v, v_stride, slots, n, p, inv, out);
    case 16: return weighted_sum<2>(v, v_stride, slots, n, p, inv, out);
    case 32: return weighted_sum<4>(v, v_stride, slots, n, p, inv, out);
    case 64: return weighted_sum<8>(v, v_stride, slots, n, p, inv, out);
    case 128: return weighted_sum<16>(v, v_stride, slots, n, p, inv, out);
    default: break;
  }
  for (int d = 0; d < head_dim; d++) out[d] = 0.0f;
  for (int64_t j = 0; j < n; j++) {
    const float* vj = v + slots[j] * v_stride;
    for (int d = 0; d < head_dim; d++) out[d] += p[j] * vj[d];
  }
  for (int d = 0; d < head_dim; d++) out[d] *= inv;
}

}  // namespace jf::avx2
