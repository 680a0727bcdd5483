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

namespace {

inline float dot(const float* a, const float* b, int n) {
  __m256 acc = _mm256_setzero_ps();
  int d = 0;
  for (; d + 8 <= n; d += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + d), _mm256_loadu_ps(b + d), acc);
  float s = hsum(acc);
  for (; d < n; d++) s += a[d] * b[d];
  return s;
}

// The largest of n values (exact whatever the order, so the vector form changes no result).
inline float max_of(const float* x, int64_t n) {
  __m256 m = _mm256_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + j));
  float mx = hmax(m);
  for (; j < n; j++) mx = x[j] > mx ? x[j] : mx;
  return mx;
}

// Horizontal sums of 8 vectors at once: lane j of the result is ((x0+x1)+(x2+x3))+((x4+x5)+(x6+x7)) of a[j],
// the same tree for every j.
inline __m256 transpose_sum8(const __m256 a[8]) {
  const __m256 t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
  const __m256 t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
  const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// scores[j] = (q . k[slot j]) * scale for all n slots, 8 keys at a time (head_dim % 8 == 0). A key's score
// depends only on q and that key (missing keys of the last group are stand-ins whose scores are dropped).
void scores_blocked(const float* q, const float* k, int64_t stride, int hd, const int32_t* slots, int64_t n,
                    float scale, float* scores) {
  const __m256 sv = _mm256_set1_ps(scale);
  for (int64_t j0 = 0; j0 < n; j0 += 8) {
    const float* kp[8];
    if (j0 + 8 <= n) {
#pragma GCC unroll 8
      for (int j = 0; j < 8; j++) kp[j] = k + slots[j0 + j] * stride;
    } else {
      for (int j = 0; j < 8; j++) kp[j] = k + slots[j0 + j < n ? j0 + j : j0] * stride;
    }
    __m256 acc[8];
    for (int j = 0; j < 8; j++) acc[j] = _mm256_setzero_ps();
    for (int d = 0; d < hd; d += 8) {
      const __m256 qv = _mm256_loadu_ps(q + d);
      for (int j = 0; j < 8; j++) acc[j] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kp[j] + d), acc[j]);
    }
    const __m256 s = _mm256_mul_ps(transpose_sum8(acc), sv);
    if (j0 + 8 <= n) {
      _mm256_storeu_ps(scores + j0, s);
    } else {
      alignas(32) float t[8];
      _mm256_store_ps(t, s);
      for (int64_t j = j0; j < n; j++) scores[j] = t[j - j0];
    }
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

void attend_head(const float* q, const float* k, const float* v, int64_t stride, int head_dim, const int32_t* slots,
                 int64_t n, float scale, float* scores, float* out) {
  float mx = -INFINITY;
  if (head_dim % 8 == 0) {
    scores_blocked(q, k, stride, head_dim, slots, n, scale, scores);
    mx = max_of(scores, n);
  } else {
    for (int64_t j = 0; j < n; j++) {
      scores[j] = dot(q, k + slots[j] * stride, head_dim) * scale;
      mx = scores[j] > mx ? scores[j] : mx;
    }
  }
  // exp and sum over the score list in 8-wide blocks (padded tail), so equal lists give equal bits.
  const __m256 mv = _mm256_set1_ps(mx);
  __m256 sumv = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    __m256 e = exp(_mm256_sub_ps(_mm256_loadu_ps(scores + j), mv));
    _mm256_storeu_ps(scores + j, e);
    sumv = _mm256_add_ps(sumv, e);
  }
  if (j < n) {
    alignas(32) float t[8];
    for (int r = 0; r < 8; r++) t[r] = j + r < n ? scores[j + r] : -INFINITY;
    __m256 e = exp(_mm256_sub_ps(_mm256_load_ps(t), mv));
    _mm256_store_ps(t, e);
    sumv = _mm256_add_ps(sumv, e);
    for (int r = 0; j + r < n; r++) scores[j + r] = t[r];
  }
  const float inv = 1.0f / hsum(sumv);
  switch (head_dim) {
    case 8: return weighted_sum<1>(v, stride, slots, n, scores, inv, out);
    case 16: return weighted_sum<2>(v, stride, slots, n, scores, inv, out);
    case 32: return weighted_sum<4>(v, stride, slots, n, scores, inv, out);
    case 64: return weighted_sum<8>(v, stride, slots, n, scores, inv, out);
    case 128: return weighted_sum<16>(v, stride, slots, n, scores, inv, out);
    default: break;
  }
  for (int d = 0; d < head_dim; d++) out[d] = 0.0f;
  for (j = 0; j < n; j++) {
    const float* vj = v + slots[j] * stride;
    for (int d = 0; d < head_dim; d++) out[d] += scores[j] * vj[d];
  }
  for (int d = 0; d < head_dim; d++) out[d] *= inv;
}

}  // namespace jf::avx2
