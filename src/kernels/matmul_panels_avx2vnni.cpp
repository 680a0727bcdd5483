// Int8 panel tiles (every quantized type) with AVX-VNNI (vpdpbusd on 256-bit vectors): one instruction adds 4 byte products per
// output where pmaddubsw needs four (sign, multiply, widen, add). The AVX2 traits otherwise; the integer
// sums are exact either way, so the results are avx2::matmul_panels_q8's bit for bit.
#include <immintrin.h>

#include <type_traits>

#include "kernels/matmul_panel_vec_avx2.h"

namespace jf::avx2vnni {

namespace {

struct PanelVec : avx2::PanelVec {
  static constexpr int MR = 4;
  // mr * NV accumulators + NV weight vectors (Q4_0: 2 NV) + 1 broadcast, from 16 registers.
  template <class L>
  static constexpr int wide(int mr) {
    if constexpr (panel_tiles::kNibblePanel<L>) return mr == 1 ? 5 : mr == 2 ? 3 : 2;
    return mr == 1 ? 7 : mr == 2 ? 5 : 3;
  }
  using W = __m256i;  // the weights as stored: q + 128, unsigned
  static W load_q(const uint8_t* panel, size_t, size_t off) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + off));
  }
  // IQ4: nibble indices to their table values + 128, as load_q gives Q8_0's bytes.
  static W table_q(__m256i index) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(panel_tiles::kIq4ValuesPlus128.data()));
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(t), index);
  }
  // sum (q + 128) * x = sum q * x + 128 * sum x: start each block from -128 * sum x.
  static I block_start(const int32_t* bias) { return _mm256_set1_epi32(*bias); }
  static I dot4(I acc, W w, __m256i x) { return _mm256_dpbusd_avx_epi32(acc, w, x); }
  static I dot4u(I acc, W4 w, __m256i x) { return _mm256_dpbusd_avx_epi32(acc, w, x); }  // Q4_0: q + 8
  static I dot2(I acc, I m, const int32_t* x) { return _mm256_dpwssd_avx_epi32(acc, m, _mm256_set1_epi32(*x)); }
};

}  // namespace

void matmul_panels_q8(const Q8Rows& x, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  panel_tiles::matmul_panels_q8<PanelVec>(x, w, y, p0, p1);
}

}  // namespace jf::avx2vnni
