// Small AVX-512 helpers (include only from files compiled with AVX-512 enabled).
#pragma once
#include <immintrin.h>

namespace jf::avx512 {

// exp(x) for 16 lanes: lane for lane the operations of avx2::exp (kernels/simd_avx2.h), so the same bits for
// x < 88.37 (attention passes x <= 0). 2^n is applied with scalef, one instruction instead of avx2's four
// (convert, add the bias, shift, multiply): the same product while 2^n is a normal number, i.e. n <= 127.
// Inputs clamped to n = 128 (x >= 88.37, and NaN, which both versions clamp there) give inf in avx2 and the
// finite p * 2^128 here; only a model already producing NaN scores reaches that in attention.
inline __m512 exp(__m512 x) {
  const __m512 hi = _mm512_set1_ps(88.3762626647949f), lo = _mm512_set1_ps(-87.3365478515625f);
  const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  x = _mm512_max_ps(_mm512_min_ps(x, hi), lo);
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 r2 = _mm512_mul_ps(r, r);
  p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_maskz_scalef_ps(static_cast<__mmask16>(~under), p, n);
}

}  // namespace jf::avx512
