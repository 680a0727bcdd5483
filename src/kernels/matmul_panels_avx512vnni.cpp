// Int8 panel tiles (every quantized type) with AVX-512 VNNI (vpdpbusd on 512-bit vectors, two panels per vector), in a
// file of their own so that only it is compiled for VNNI: CPUs with AVX-512 but without VNNI (Skylake-SP)
// keep the AVX-512 float kernels and take the AVX2 integer tiles, which give the same bits.
#include <immintrin.h>

#include <cstring>

#include "kernels/matmul_panel_vec_avx512.h"

namespace jf::avx512 {

namespace {

struct PanelVecVnni : PanelVec {
  using PanelVec::pin;
  // Q8_0 (tile_q8): 32-bit integer lanes, one per output of the two panels; vpdpbusd adds 4 products of
  // unsigned weight bytes (q + 128) and signed activation bytes to each.
  using I = __m512i;
  using W = __m512i;
  static W load_q(const uint8_t* panel, size_t ps, size_t off) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + off));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + ps + off));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  static void pin(W& w) { __asm__("" : "+v"(w)); }
  // IQ4: nibble indices to their table values + 128, as load_q gives Q8_0's bytes.
  static W table_q(__m512i index) {
    const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(panel_tiles::kIq4ValuesPlus128.data()));
    return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(t), index);
  }
  static __m512i broadcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
  }
  // sum (q + 128) * x = sum q * x + 128 * sum x: start each block from -128 * sum x.
  static I block_start(const int32_t* bias) { return _mm512_set1_epi32(*bias); }
  static I izero() { return _mm512_setzero_si512(); }
  // K-quants: 8 int8 sub-block scales (or mins) of each panel as 32-bit lanes (then converted to fp32).
  static I load_i8(const uint8_t* panel, size_t ps, size_t off) {
    const __m128i lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(panel + off));
    const __m128i hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(panel + ps + off));
    return _mm512_cvtepi8_epi32(_mm_unpacklo_epi64(lo, hi));
  }
  static I low4(I v) { return _mm512_and_si512(v, _mm512_set1_epi32(15)); }  // as avx2::PanelVec::low4
  static I high4(I v) { return _mm512_and_si512(_mm512_srli_epi32(v, 4), _mm512_set1_epi32(15)); }
  static I start(const int32_t* p) { return _mm512_set1_epi32(*p); }  // a block's integer sum from *p on
  static I dot4(I acc, W w, __m512i x) { return _mm512_dpbusd_epi32(acc, w, x); }
  static T to_float(I v) { return _mm512_cvtepi32_ps(v); }
  // Nibble panels: two groups per load, unsigned (Q4_0: the file's q + 8).
  using W4 = __m512i;
  static void load_q4(const uint8_t* panel, size_t ps, size_t off, W4& lo, W4& hi) {
    const __m512i v = load_q(panel, ps, off), nibble = _mm512_set1_epi8(0x0F);
    lo = _mm512_and_si512(v, nibble);
    hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
  }
  // 5- and 6-bit types: the bits above the nibbles from a plane, as avx2::PanelVec::add_high.
  template <int kBits>
  static void add_high(const uint8_t* panel, size_t ps, size_t off, int slot, W4& lo, W4& hi) {
    const __m512i v = load_q(panel, ps, off);
    const __m512i mask = _mm512_set1_epi8(static_cast<char>(((1 << kBits) - 1) << 4));
    lo = _mm512_or_si512(lo, _mm512_and_si512(_mm512_srli_epi16(v, slot), mask));
    hi = _mm512_or_si512(hi, _mm512_and_si512(_mm512_slli_epi16(v, 4 - slot), mask));
  }
  // Crumb panels (Q2_K, Q3_K): 64 bytes as they are; the 2-bit quants at bit `shift` of each byte; the
  // bit g of each byte of a plane put at bit 2 (Q3_K's third bit) and added to q.
  static W4 load_raw(const uint8_t* panel, size_t ps, size_t off) { return load_q(panel, ps, off); }
  static W4 crumbs(W4 v, int shift) { return _mm512_and_si512(_mm512_srli_epi16(v, shift), _mm512_set1_epi8(3)); }
  static W4 with_bit(W4 q, W4 plane, int g) {
    const __m512i at2 = g >= 2 ? _mm512_srli_epi16(plane, g - 2) : _mm512_slli_epi16(plane, 2 - g);
    return _mm512_or_si512(q, _mm512_and_si512(at2, _mm512_set1_epi8(4)));
  }
  static I dot4u(I acc, W4 w, __m512i x) { return _mm512_dpbusd_epi32(acc, w, x); }
  // Two non-negative values below 2^15 per lane as its low and high 16 bits.
  static I pair16(I lo, I hi) { return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)); }
  // acc + the products of m's and *x's 16-bit halves per lane (pair16's form): a K-quant's mins times the
  // activations' sums, two sub-blocks per lane.
  static I dot2(I acc, I m, const int32_t* x) { return _mm512_dpwssd_epi32(acc, m, _mm512_set1_epi32(*x)); }
};

}  // namespace

void matmul_panels_q8(const Q8Rows& x, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  const int64_t pairs_end = p0 + (p1 - p0) / 2 * 2;
  panel_tiles::matmul_panels_q8<PanelVecVnni>(x, w, y, p0, pairs_end);
  if (pairs_end < p1) avx2::matmul_panels_q8(x, w, y, pairs_end, p1);
}

}  // namespace jf::avx512
