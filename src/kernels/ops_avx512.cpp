// AVX-512 attention: key scores (kernels/attention_scores.h), exponentials and the weighted sum of values
// (kernels/attention_values.h) 16 lanes at a time. Every lane does the arithmetic of the AVX2 version and the
// sums keep its order, so both give the same bits; 8-wide heads take the AVX2 weighted sum.
#include <immintrin.h>

#include <cmath>

#include "kernels/ops.h"
#include "kernels/attention_scores.h"
#include "kernels/attention_values.h"
#include "kernels/simd_avx512.h"

namespace jf::avx512 {

namespace {

// Scores a whole key block (16 slots) per vector; sums 16 elements of value rows per vector.
struct AttnVec {
  using T = __m512;
  static constexpr int L = 16;
  static constexpr int kAccRegs = 16;  // of 32
  static T zero() { return _mm512_setzero_ps(); }
  static T set1(float v) { return _mm512_set1_ps(v); }
  static T add(T a, T b) { return _mm512_add_ps(a, b); }
  static T loadu(const float* p) { return _mm512_loadu_ps(p); }
  static T load(const float* p) { return _mm512_loadu_ps(p); }
  static T load(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static void storeu(float* p, T v) { _mm512_storeu_ps(p, v); }
  static bool consecutive(const int32_t* s) {
    const __m512i want = _mm512_add_epi32(_mm512_set1_epi32(s[0]),
                                          _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    return _mm512_cmpeq_epi32_mask(_mm512_loadu_si512(s), want) == 0xFFFF;
  }
};

// s[j] = exp(s[j] - max), and sum16 = the 16 lane sums in avx2's order: lane l adds list positions j = l mod
// 16 in list order. A missing tail lane is -inf, whose exp is 0, and adding zeros changes no lane.
void exp_scores(float* s, int64_t n, float* sum16) {
  __m512 m = _mm512_set1_ps(-INFINITY);  // the maximum is exact in any order
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) m = _mm512_max_ps(m, _mm512_loadu_ps(s + j));
  float mx = _mm512_reduce_max_ps(m);
  for (; j < n; j++) mx = s[j] > mx ? s[j] : mx;
  const __m512 mv = _mm512_set1_ps(mx);
  __m512 sumv = _mm512_setzero_ps();
  for (j = 0; j + 16 <= n; j += 16) {
    const __m512 e = exp(_mm512_sub_ps(_mm512_loadu_ps(s + j), mv));
    _mm512_storeu_ps(s + j, e);
    sumv = _mm512_add_ps(sumv, e);
  }
  if (j < n) {
    const __mmask16 live = static_cast<__mmask16>((1u << (n - j)) - 1);
    const __m512 e = exp(_mm512_sub_ps(_mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), live, s + j), mv));
    _mm512_mask_storeu_ps(s + j, live, e);
    sumv = _mm512_add_ps(sumv, e);
  }
  _mm512_storeu_ps(sum16, sumv);
}

}  // namespace

template <class E>
void attend_group(const float* q, int heads, const E* keys, const E* v, int64_t v_stride, int head_dim,
                  const int32_t* slots, int64_t n, float scale, float* scores, float* out, float cap) {
  attention::key_scores<AttnVec>(q, heads, keys, head_dim, slots, n, scale, scores);
  if (cap > 0.0f)
    for (int h = 0; h < heads; h++) avx2::softcap(scores + h * score_stride(n), n, cap);
  float sum16[16 * kMaxGroup];
  for (int h = 0; h < heads; h++) exp_scores(scores + h * score_stride(n), n, sum16 + 16 * h);
  float inv[kMaxGroup];
  auto sums = [&](auto nv) {
    avx2::softmax_inverses(sum16, heads, inv);
    attention::weighted_sums<AttnVec, decltype(nv)::value>(v, v_stride, slots, n, heads, scores, inv, out);
  };
  switch (head_dim) {
    case 16: return sums(std::integral_constant<int, 1>{});
    case 32: return sums(std::integral_constant<int, 2>{});
    case 64: return sums(std::integral_constant<int, 4>{});
    case 96: return sums(std::integral_constant<int, 6>{});  // phi3
    case 128: return sums(std::integral_constant<int, 8>{});
    case 256: return sums(std::integral_constant<int, 16>{});  // gemma2, gemma3
    default: return avx2::attend_values(v, v_stride, head_dim, slots, n, heads, scores, sum16, out);
  }
}
template void attend_group(const float*, int, const float*, const float*, int64_t, int, const int32_t*, int64_t, float,
                            float*, float*, float);
template void attend_group(const float*, int, const uint16_t*, const uint16_t*, int64_t, int, const int32_t*, int64_t,
                            float, float*, float*, float);

}  // namespace jf::avx512
