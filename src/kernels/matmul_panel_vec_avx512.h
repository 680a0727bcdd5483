// The AVX-512 traits of the panel tiles (kernels/matmul_panel_tiles.h): two adjacent panels (16 output
// features) per vector. Shared by the AVX-512 file (fp32/F16/BF16 tiles) and the AVX-512 VNNI one (Q8_0 and
// Q4_0 tiles, which add the integer members); the anonymous namespace gives each its own copy, compiled with
// its own flags.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/matmul_panel_tiles.h"

namespace jf::avx512 {
namespace {

struct PanelVec {
  using T = __m512;
  static constexpr int PP = 2;  // panels per vector
  // Rows of x per pass over the weights: 8 (twice AVX2's) halves the weight conversions per FMA.
  static constexpr int MR = 8;
  // Vectors per tile for mr rows, from the 32 vector registers: mr * NV accumulators + NV converted weights
  // + 1 broadcast. One or two rows read weights from DRAM faster as fewer streams: a tile reads its 2 NV
  // panels side by side, and 8 streams per thread keep more of the bandwidth than 16 (bench/read_bandwidth
  // --streams; NV 8 -> 4 made a llama-1b forward 17% faster at M = 1, docs/BENCHMARKS.md).
  template <class L>
  static constexpr int wide(int mr) {
    constexpr int kWide[] = {0, 4, 4, 6, 5, 5, 4, 3, 3};
    // Q8_0: narrower tiles for 5-8 rows (GCC spilled accumulators of the 8 x 3 tile; 8 x 2 ran 10-15%
    // faster at 8-16 rows).
    constexpr int kWideQ8[] = {0, 4, 4, 6, 5, 4, 3, 2, 2};
    constexpr int kWideQ4[] = {0, 4, 4, 5, 4, 4, 3, 2, 2};  // two weight vectors (groups) per vector
    if constexpr (panel_tiles::kNibblePanel<L>) return kWideQ4[mr];
    if constexpr (panel_tiles::kIntPanel<L>) return kWideQ8[mr];
    return kWide[mr];
  }
  static T zero() { return _mm512_setzero_ps(); }
  static T broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T loadu(const float* p) { return _mm512_loadu_ps(p); }
  static void storeu(float* p, T v) { _mm512_storeu_ps(p, v); }
  static void pin(T& v) { __asm__("" : "+v"(v)); }
  // Lanes 0-7: the 8 values at byte offset `off` of the first panel; lanes 8-15: of the next (ps bytes on).
  static T load_f32(const uint8_t* panel, size_t ps, size_t off) {
    const __m256 lo = _mm256_loadu_ps(reinterpret_cast<const float*>(panel + off));
    const __m256 hi = _mm256_loadu_ps(reinterpret_cast<const float*>(panel + ps + off));
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
  }
  static __m256i load_2x16(const uint8_t* panel, size_t ps, size_t off) {
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + off));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(panel + ps + off));
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
  }
  static T load_f16(const uint8_t* panel, size_t ps, size_t off) { return _mm512_cvtph_ps(load_2x16(panel, ps, off)); }
  static T load_bf16(const uint8_t* panel, size_t ps, size_t off) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load_2x16(panel, ps, off)), 16));
  }
  static T mul(T a, T b) { return _mm512_mul_ps(a, b); }

  // y[col .. col + 16) = v, clipped at N (the last panels of a matrix may be partly padding).
  static void store(T v, float* y, int64_t N, int64_t col) {
    if (col + 2 * kPanel <= N) return _mm512_storeu_ps(y + col, v);
    const __mmask16 keep = static_cast<__mmask16>((1u << std::max<int64_t>(0, N - col)) - 1);
    _mm512_mask_storeu_ps(y + col, keep, v);
  }
};

}  // namespace
}  // namespace jf::avx512
