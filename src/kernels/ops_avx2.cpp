// AVX2 versions of the row operations; per element the same operation order as every other call.
#include <immintrin.h>

#include <atomic>
#include <cmath>

#include "kernels/ops.h"
#include "kernels/attention_scores.h"
#include "kernels/attention_values.h"
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

namespace {

// x[i] = f(x[i], u[i]) 8 lanes at a time; the tail goes through the same vector code on a padded copy, so
// every element sees identical arithmetic wherever it sits.
template <class F>
void elementwise(float* x, const float* u, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, f(_mm256_loadu_ps(x + i), _mm256_loadu_ps(u + i)));
  if (i == n) return;
  alignas(32) float xv[8] = {0}, uv[8] = {0};
  for (int64_t j = i; j < n; j++) xv[j - i] = x[j], uv[j - i] = u[j];
  _mm256_store_ps(xv, f(_mm256_load_ps(xv), _mm256_load_ps(uv)));
  for (int64_t j = i; j < n; j++) x[j] = xv[j - i];
}

}  // namespace

void silu_mul(float* gate, const float* up, int64_t n) {
  elementwise(gate, up, n, [](__m256 v, __m256 u) {
    const __m256 s = _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), exp(_mm256_sub_ps(_mm256_setzero_ps(), v))));
    return _mm256_mul_ps(s, u);
  });
}

void gelu_tanh_mul(float* gate, const float* up, int64_t n) {
  const __m256 k = _mm256_set1_ps(0.7978845608028654f), c = _mm256_set1_ps(0.044715f);  // sqrt(2 / pi)
  elementwise(gate, up, n, [&](__m256 x, __m256 u) {
    const __m256 inner = _mm256_mul_ps(k, _mm256_add_ps(x, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(c, x), x), x)));
    const __m256 g = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), tanh(inner)));
    return _mm256_mul_ps(g, u);
  });
}

void softcap(float* x, int64_t n, float cap) {
  const __m256 c = _mm256_set1_ps(cap);
  elementwise(x, x, n, [&](__m256 v, __m256) { return _mm256_mul_ps(c, tanh(_mm256_div_ps(v, c))); });
}

namespace {

// The largest of n values, NaNs ignored (max_ps(x, m) returns m when x is NaN). Exact whatever the order, so
// the vector form changes no result.
inline float max_of(const float* x, int64_t n) {
  __m256 m = _mm256_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + j), m);
  float mx = hmax(m);
  for (; j < n; j++) mx = x[j] > mx ? x[j] : mx;
  return mx;
}

}  // namespace

int64_t argmax(const float* x, int64_t n) {  // the first index holding the maximum
  const float mx = max_of(x, n);
  const __m256 mv = _mm256_set1_ps(mx);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), mv, _CMP_EQ_OQ));
    if (mask) return i + __builtin_ctz(static_cast<unsigned>(mask));
  }
  for (; i < n; i++)
    if (x[i] == mx) return i;
  return scalar::argmax(x, n);  // every value is NaN
}

namespace {

// Scores 8 slots (half a key block) per vector; sums 8 elements of value rows per vector.
struct AttnVec {
  using T = __m256;
  static constexpr int L = 8;
  static constexpr int kAccRegs = 8;  // of 16
  static T zero() { return _mm256_setzero_ps(); }
  static T set1(float v) { return _mm256_set1_ps(v); }
  static T add(T a, T b) { return _mm256_add_ps(a, b); }
  static T loadu(const float* p) { return _mm256_loadu_ps(p); }
  static T load(const float* p) { return _mm256_loadu_ps(p); }
  static T load(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static void storeu(float* p, T v) { _mm256_storeu_ps(p, v); }
  static bool consecutive(const int32_t* s) {
    const __m256i want = _mm256_add_epi32(_mm256_set1_epi32(s[0]), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i got = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
    return _mm256_movemask_epi8(_mm256_cmpeq_epi32(got, want)) == -1;
  }
};

// s[j] = exp(s[j] - max), and sum16 = the 16 lane sums of the exponentials: lane l adds list positions
// j = l mod 16 in list order (lanes 0-7 in one accumulator, 8-15 in the other; a tail's missing lanes add 0),
// so equal lists give equal bits, and the AVX-512 version's single 16-lane accumulator gives the same ones.
void exp_scores(float* s, int64_t n, float* sum16) {
  const __m256 mv = _mm256_set1_ps(max_of(s, n));
  __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m256 e0 = exp(_mm256_sub_ps(_mm256_loadu_ps(s + j), mv));
    const __m256 e1 = exp(_mm256_sub_ps(_mm256_loadu_ps(s + j + 8), mv));
    _mm256_storeu_ps(s + j, e0);
    _mm256_storeu_ps(s + j + 8, e1);
    lo = _mm256_add_ps(lo, e0);
    hi = _mm256_add_ps(hi, e1);
  }
  if (j + 8 <= n) {
    const __m256 e = exp(_mm256_sub_ps(_mm256_loadu_ps(s + j), mv));
    _mm256_storeu_ps(s + j, e);
    lo = _mm256_add_ps(lo, e);
    j += 8;
  }
  if (j < n) {  // the tail as one vector whose missing lanes are -inf (exp gives 0, the sum is unchanged)
    const __m256i live = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - j)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 x = _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(s + j, live), _mm256_castsi256_ps(live));
    const __m256 e = exp(_mm256_sub_ps(x, mv));
    _mm256_maskstore_ps(s + j, live, e);
    __m256& acc = j % 16 == 0 ? lo : hi;
    acc = _mm256_add_ps(acc, e);
  }
  _mm256_storeu_ps(sum16, lo);
  _mm256_storeu_ps(sum16 + 8, hi);
}

}  // namespace

namespace {

float to_f32(float x) { return x; }
float to_f32(uint16_t h) { return _cvtsh_ss(h); }  // (not dtype.h's inline helper: this file has other flags)

std::atomic<int64_t> g_attend_values_scalar_calls{0};

}  // namespace

int64_t attend_values_scalar_calls() { return g_attend_values_scalar_calls.load(); }

template <class E>
void attend_values(const E* v, int64_t v_stride, int head_dim, const int32_t* slots, int64_t n, int heads,
                   const float* p, const float* sum16, float* out) {
  float inv[kMaxGroup];
  softmax_inverses(sum16, heads, inv);
  switch (head_dim) {
    case 8: return attention::weighted_sums<AttnVec, 1>(v, v_stride, slots, n, heads, p, inv, out);
    case 16: return attention::weighted_sums<AttnVec, 2>(v, v_stride, slots, n, heads, p, inv, out);
    case 32: return attention::weighted_sums<AttnVec, 4>(v, v_stride, slots, n, heads, p, inv, out);
    case 64: return attention::weighted_sums<AttnVec, 8>(v, v_stride, slots, n, heads, p, inv, out);
    case 96: return attention::weighted_sums<AttnVec, 12>(v, v_stride, slots, n, heads, p, inv, out);  // phi3
    case 128: return attention::weighted_sums<AttnVec, 16>(v, v_stride, slots, n, heads, p, inv, out);
    case 256: return attention::weighted_sums<AttnVec, 32>(v, v_stride, slots, n, heads, p, inv, out);  // gemma
    default: break;
  }
  g_attend_values_scalar_calls.fetch_add(1, std::memory_order_relaxed);
  for (int h = 0; h < heads; h++) {
    float* o = out + h * head_dim;
    for (int d = 0; d < head_dim; d++) o[d] = 0.0f;
    for (int64_t j = 0; j < n; j++) {
      const E* vj = v + slots[j] * v_stride;
      for (int d = 0; d < head_dim; d++) o[d] += p[h * score_stride(n) + j] * to_f32(vj[d]);
    }
    for (int d = 0; d < head_dim; d++) o[d] *= inv[h];
  }
}

template void attend_values(const float*, int64_t, int, const int32_t*, int64_t, int, const float*, const float*,
                             float*);
template void attend_values(const uint16_t*, int64_t, int, const int32_t*, int64_t, int, const float*, const float*,
                             float*);

template <class E>
void attend_group(const float* q, int heads, const E* keys, const E* v, int64_t v_stride, int head_dim,
                  const int32_t* slots, int64_t n, float scale, float* scores, float* out, float cap) {
  attention::key_scores<AttnVec>(q, heads, keys, head_dim, slots, n, scale, scores);
  if (cap > 0.0f)
    for (int h = 0; h < heads; h++) avx2::softcap(scores + h * score_stride(n), n, cap);
  float sum16[16 * kMaxGroup];
  for (int h = 0; h < heads; h++) exp_scores(scores + h * score_stride(n), n, sum16 + 16 * h);
  attend_values(v, v_stride, head_dim, slots, n, heads, scores, sum16, out);
}
template void attend_group(const float*, int, const float*, const float*, int64_t, int, const int32_t*, int64_t, float,
                            float*, float*, float);
template void attend_group(const float*, int, const uint16_t*, const uint16_t*, int64_t, int, const int32_t*, int64_t,
                            float, float*, float*, float);

void softmax_inverses(const float* sum16, int heads, float* inv) {
  for (int h = 0; h < heads; h++)
    inv[h] = 1.0f / hsum(_mm256_add_ps(_mm256_loadu_ps(sum16 + 16 * h), _mm256_loadu_ps(sum16 + 16 * h + 8)));
}

}  // namespace jf::avx2
