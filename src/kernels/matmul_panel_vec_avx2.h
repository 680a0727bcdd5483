// The AVX2 traits of the panel tiles (kernels/matmul_panel_tiles.h): one panel of 8 output features per
// vector. Shared by the AVX2 and AVX-VNNI files; the anonymous namespace gives each its own copy, compiled
// with its own flags (one inline definition under two instruction sets would break the one-definition rule).
#pragma once
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "kernels/matmul_panel_tiles.h"

namespace jf::avx2 {
namespace {

struct PanelVec {
  using T = __m256;
  static constexpr int PP = 1;  // panels per vector
  static constexpr int MR = 4;  // rows of x per pass over the weights
  // Vectors per tile for mr rows, from the 16 vector registers: mr * NV accumulators + NV converted weights
  // + 1 broadcast. The int8 tiles hold two vectors per weight vector (Q8_0: |q| and q; Q4_0: two groups)
  // and two temporaries per product; their scales are loaded only between blocks.
  template <class L>
  static constexpr int wide(int mr) {
    if constexpr (panel_tiles::kIntPanel<L>) return mr == 1 ? 4 : mr == 2 ? 3 : 2;
    return mr == 1 ? 8 : mr == 2 ? 4 : 3;
  }
  static T zero() { return _mm256_setzero_ps(); }
  static T broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T loadu(const float* p) { return _mm256_loadu_ps(p); }
  static void storeu(float* p, T v) { _mm256_storeu_ps(p, v); }
  static void pin(T& v) { __asm__("" : "+x"(v)); }
  // The 8 values at byte offset `off` of the panel (ps, the panel stride, is unused with one panel).
  static T load_f32(const uint8_t* panel, size_t, size_t off) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(panel + off));
  }
  static T load_f16(const uint8_t* panel, size_t, size_t off) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + off)));
  }
  static T load_bf16(const uint8_t* panel, size_t, size_t off) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + off));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static T mul(T a, T b) { return _mm256_mul_ps(a, b); }

  // Q8_0 (tile_q8): 32-bit integer lanes, one per output; a step adds 4 byte products to each.
  using I = __m256i;
  struct W {  // a group of 4 quants of 8 outputs as |q| and q: pmaddubsw multiplies unsigned by signed bytes
    __m256i abs, q;
  };
  static W load_q(const uint8_t* panel, size_t, size_t off) {
    const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + off));
    const __m256i q = _mm256_xor_si256(u, _mm256_set1_epi8(static_cast<char>(0x80)));  // q + 128 -> q
    return {_mm256_abs_epi8(q), q};
  }
  static void pin(W& w) { __asm__("" : "+x"(w.abs), "+x"(w.q)); }
  // IQ4: nibble indices (bytes 0..15) to their table values, as load_q gives Q8_0's quants.
  static W table_q(__m256i index) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
    const __m256i q = _mm256_shuffle_epi8(table, index);
    return {_mm256_abs_epi8(q), q};
  }
  static __m256i broadcast4(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
  }
  static I block_start(const int32_t*) { return _mm256_setzero_si256(); }  // products of q itself: no bias
  static I izero() { return _mm256_setzero_si256(); }
  // K-quants: 8 int8 sub-block scales (or mins) as 32-bit lanes (then converted to fp32).
  static I load_i8(const uint8_t* panel, size_t, size_t off) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(panel + off)));
  }
  // Q2_K's scale | min << 4 bytes (as load_i8 gives them): the low and the high 4 bits of each lane's byte.
  static I low4(I v) { return _mm256_and_si256(v, _mm256_set1_epi32(15)); }
  static I high4(I v) { return _mm256_and_si256(_mm256_srli_epi32(v, 4), _mm256_set1_epi32(15)); }
  static I start(const int32_t* p) { return _mm256_set1_epi32(*p); }  // a block's integer sum from *p on
  // Two non-negative values below 2^15 per lane as its low and high 16 bits.
  static I pair16(I lo, I hi) { return _mm256_or_si256(lo, _mm256_slli_epi32(hi, 16)); }
  // acc + the products of m's and *x's 16-bit halves per lane (pair16's form): a K-quant's mins times the
  // activations' sums, two sub-blocks per lane.
  static I dot2(I acc, I m, const int32_t* x) { return _mm256_add_epi32(acc, _mm256_madd_epi16(m, _mm256_set1_epi32(*x))); }
  // acc += sum of 4 products q * x per output, as |q| * (x with q's sign): pairs of them are at most
  // 2 * 128 * 127, inside pmaddubsw's int16, so the sum is exact.
  static I dot4(I acc, const W& w, __m256i x) {
    const __m256i pairs = _mm256_maddubs_epi16(w.abs, _mm256_sign_epi8(x, w.q));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
  static T to_float(I v) { return _mm256_cvtepi32_ps(v); }

  // Q4_0: two groups per 32-byte load, as the file's unsigned nibbles (q + 8).
  using W4 = __m256i;
  static void load_q4(const uint8_t* panel, size_t, size_t off, W4& lo, W4& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + off));
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    lo = _mm256_and_si256(v, nibble);
    hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble);
  }
  static void pin(__m256i& w) { __asm__("" : "+x"(w)); }
  // 5- and 6-bit types: kBits more bits of each quant of a pair of groups from the plane at `off`
  // (matmul.h), the low group's at bits slot + 4.., the high group's at bits slot.., put at bit 4 of lo
  // and hi (16-bit shifts; the mask keeps the bits that stayed within their byte).
  template <int kBits>
  static void add_high(const uint8_t* panel, size_t, size_t off, int slot, W4& lo, W4& hi) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + off));
    const __m256i mask = _mm256_set1_epi8(static_cast<char>(((1 << kBits) - 1) << 4));
    lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_srli_epi16(v, slot), mask));
    hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(v, 4 - slot), mask));
  }
  // Crumb panels (Q2_K, Q3_K): 32 bytes as they are; the 2-bit quants at bit `shift` of each byte; the bit g
  // of each byte of a plane put at bit 2 (Q3_K's third bit) and added to q.
  static W4 load_raw(const uint8_t* panel, size_t, size_t off) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + off));
  }
  static W4 crumbs(W4 v, int shift) { return _mm256_and_si256(_mm256_srli_epi16(v, shift), _mm256_set1_epi8(3)); }
  static W4 with_bit(W4 q, W4 plane, int g) {
    const __m256i at2 = g >= 2 ? _mm256_srli_epi16(plane, g - 2) : _mm256_slli_epi16(plane, 2 - g);
    return _mm256_or_si256(q, _mm256_and_si256(at2, _mm256_set1_epi8(4)));
  }
  // acc += 4 products of unsigned quants (Q4_0's q + 8, Q6_K's q + 32, ...) and x per output: at most
  // 63 * 127 each, so pmaddubsw's int16 pairs are exact.
  static I dot4u(I acc, W4 w, __m256i x) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)));
  }
  // y[col .. col + 8) = v, clipped at N (the last panel of a matrix may be partly padding).
  static void store(T v, float* y, int64_t N, int64_t col) {
    if (col + kPanel <= N) return _mm256_storeu_ps(y + col, v);
    alignas(32) float t[kPanel];
    _mm256_store_ps(t, v);
    for (int64_t c = col; c < N; c++) y[c] = t[c - col];
  }
};

}  // namespace
}  // namespace jf::avx2
