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

}  // namespace

void attend_head(const float* q, const float* k, const float* v, int64_t stride, int head_dim, const int32_t* slots,
                 int64_t n, float scale, float* scores, float* out) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; j++) {
    scores[j] = dot(q, k + slots[j] * stride, head_dim) * scale;
    mx = scores[j] > mx ? scores[j] : mx;
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
  if (head_dim % 8 == 0 && head_dim <= 256) {
    __m256 acc[32];
    const int nv = head_dim / 8;
    for (int d = 0; d < nv; d++) acc[d] = _mm256_setzero_ps();
    for (j = 0; j < n; j++) {
      const float* vj = v + slots[j] * stride;
      const __m256 p = _mm256_set1_ps(scores[j]);
      for (int d = 0; d < nv; d++) acc[d] = _mm256_fmadd_ps(p, _mm256_loadu_ps(vj + 8 * d), acc[d]);
    }
    const __m256 iv = _mm256_set1_ps(inv);
    for (int d = 0; d < nv; d++) _mm256_storeu_ps(out + 8 * d, _mm256_mul_ps(acc[d], iv));
  } else {
    for (int d = 0; d < head_dim; d++) out[d] = 0.0f;
    for (j = 0; j < n; j++) {
      const float* vj = v + slots[j] * stride;
      for (int d = 0; d < head_dim; d++) out[d] += scores[j] * vj[d];
    }
    for (int d = 0; d < head_dim; d++) out[d] *= inv;
  }
}

}  // namespace jf::avx2
