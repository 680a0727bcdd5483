// C += A·B with bfloat16 operands and fp32 sums: both operands are rounded to bfloat16 and packed so that
// each 32-bit lane holds a pair of consecutive k; one AVX512-BF16 dot product (vdpbf16ps) then adds two
// products per lane, twice the fp32 FMA rate. Without that instruction the same packed pairs are summed
// with fp32 FMAs in the instruction's order (the products of two bfloat16 values are exact in fp32).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/parallel.h"
#include "train/gemm.h"

#if defined(__AVX512BF16__) && defined(__AVX512F__)
#include <immintrin.h>
#define JF_GEMM_BF16_NATIVE 1
#else
#define JF_GEMM_BF16_NATIVE 0
#endif

namespace jf {
namespace {

constexpr int kRowTile = 8;   // rows of C per tile
constexpr int kColTile = 32;  // columns of C per tile: two vectors of 16 fp32 sums

// fp32 -> bfloat16, round to nearest even (NaN stays NaN).
uint16_t to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

[[maybe_unused]] float from_bf16(uint16_t h) {  // the emulation's
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

uint32_t pair(float lo, float hi) { return static_cast<uint32_t>(to_bf16(lo)) | (static_cast<uint32_t>(to_bf16(hi)) << 16); }

#if JF_GEMM_BF16_NATIVE
// The first n of 16 lanes (none for n <= 0, all for n >= 16).
__mmask16 first_lanes(int64_t n) {
  return n >= 16 ? 0xffff : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1);
}

// 16 pairs of consecutive values x[0..31] (zeros past n values), rounded as to_bf16 does for finite values.
__m512i consecutive_pairs16(const float* x, int64_t n) {
  const __m512 lo = _mm512_maskz_loadu_ps(first_lanes(n), x);
  const __m512 hi = _mm512_maskz_loadu_ps(first_lanes(n - 16), x + 16);
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

// In place: x[i][l] <- x[l][i] for 8 vectors of 8 32-bit words.
void transpose8x8(__m256i x[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(x[i], x[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi32(x[i], x[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 4; i++) {
    x[i] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x20);
    x[i + 4] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x31);
  }
}

// 8 lines contiguous in k (line l at src + l * line_stride; zeros for l >= lines): pair j of line l goes to
// dst[j * dst_stride + l]. 16 pairs of each line at a time, turned by two 8x8 transposes.
void pack_lines(const float* src, int64_t line_stride, int lines, int64_t K, uint32_t* dst, int64_t dst_stride) {
  const int64_t K2 = (K + 1) / 2;
  for (int64_t j0 = 0; j0 < K2; j0 += 16) {
    __m256i lo[8], hi[8];
    for (int l = 0; l < 8; l++) {
      const __m512i p = l < lines ? consecutive_pairs16(src + l * line_stride + 2 * j0, K - 2 * j0) : _mm512_setzero_si512();
      lo[l] = _mm512_castsi512_si256(p);
      hi[l] = _mm512_extracti64x4_epi64(p, 1);
    }
    transpose8x8(lo);
    transpose8x8(hi);
    for (int i = 0; i < 8 && j0 + i < K2; i++)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (j0 + i) * dst_stride), lo[i]);
    for (int i = 0; i < 8 && j0 + 8 + i < K2; i++)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (j0 + 8 + i) * dst_stride), hi[i]);
  }
}
#endif

// Packs the pairs of X(k, l) = x[l * l_stride + k * k_stride] (lines l < L, k < K) in blocks of W lines
// (W a multiple of 8; zeros past L and K): pair j of line l is at ((l / W) * K2 + j) * W + l % W and holds
// (X(2j, l) low half, X(2j+1, l) high half). A is packed with its rows as lines (W = kRowTile), B with its
// columns (W = kColTile), so that a tile reads each k pair of its lines as one run.
void pack_pairs(bool parallel, int64_t L, int64_t K, const float* x, int64_t l_stride, int64_t k_stride, int W,
                uint32_t* out) {
  const int64_t K2 = (K + 1) / 2;
  const int64_t groups = (L + W - 1) / W * (W / 8);  // 8 lines at a time, padding groups included
  parallel_for(groups, parallel, [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; g++) {
      const int64_t l0 = g * 8;
      const int lines = static_cast<int>(std::clamp<int64_t>(L - l0, 0, 8));
      uint32_t* dst = out + l0 / W * K2 * W + l0 % W;
#if JF_GEMM_BF16_NATIVE
      if (k_stride == 1) {  // lines contiguous in k
        pack_lines(x + l0 * l_stride, l_stride, lines, K, dst, W);
        continue;
      }
      if (l_stride == 1 && lines == 8) {  // lines side by side: two k -> 8 pairs at a time
        for (int64_t j = 0; j < K2; j++) {
          const __m256 lo = _mm256_loadu_ps(x + l0 + 2 * j * k_stride);
          const __m256 hi = 2 * j + 1 < K ? _mm256_loadu_ps(x + l0 + (2 * j + 1) * k_stride) : _mm256_setzero_ps();
          const __m256i l = _mm256_cvtepu16_epi32((__m128i)_mm256_cvtneps_pbh(lo));
          const __m256i h = _mm256_cvtepu16_epi32((__m128i)_mm256_cvtneps_pbh(hi));
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j * W), _mm256_or_si256(l, _mm256_slli_epi32(h, 16)));
        }
        continue;
      }
#endif
      auto at = [&](int l, int64_t k) { return l < lines && k < K ? x[(l0 + l) * l_stride + k * k_stride] : 0.0f; };
      for (int64_t j = 0; j < K2; j++)
        for (int l = 0; l < 8; l++) dst[j * W + l] = pair(at(l, 2 * j), at(l, 2 * j + 1));
    }
  });
}

#if JF_GEMM_BF16_NATIVE
template <int MR>
void tile(int64_t K2, const uint32_t* ap, const uint32_t* bp, float* c, int64_t ldc, int cols) {
  __m512 acc[MR][2];
  for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t j = 0; j < K2; j++) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + j * kColTile);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + j * kColTile + 16);
    for (int r = 0; r < MR; r++) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(ap[j * kRowTile + r]));
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
    }
  }
  const __mmask16 m0 = first_lanes(cols), m1 = first_lanes(cols - 16);
  for (int r = 0; r < MR; r++) {
    float* row = c + r * ldc;
    _mm512_mask_storeu_ps(row, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, row), acc[r][0]));
    _mm512_mask_storeu_ps(row + 16, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, row + 16), acc[r][1]));
  }
}
#else
template <int MR>
void tile(int64_t K2, const uint32_t* ap, const uint32_t* bp, float* c, int64_t ldc, int cols) {
  float acc[MR][kColTile] = {};
  for (int64_t j = 0; j < K2; j++)
    for (int r = 0; r < MR; r++) {
      const uint32_t a = ap[j * kRowTile + r];
      const float a_lo = from_bf16(static_cast<uint16_t>(a)), a_hi = from_bf16(static_cast<uint16_t>(a >> 16));
      for (int n = 0; n < kColTile; n++) {
        const uint32_t b = bp[j * kColTile + n];
        acc[r][n] = std::fma(a_hi, from_bf16(static_cast<uint16_t>(b >> 16)), acc[r][n]);
        acc[r][n] = std::fma(a_lo, from_bf16(static_cast<uint16_t>(b)), acc[r][n]);
      }
    }
  for (int r = 0; r < MR; r++)
    for (int n = 0; n < cols; n++) c[r * ldc + n] += acc[r][n];
}
#endif

using TileFn = void (*)(int64_t, const uint32_t*, const uint32_t*, float*, int64_t, int);
constexpr TileFn kTiles[kRowTile] = {&tile<1>, &tile<2>, &tile<3>, &tile<4>, &tile<5>, &tile<6>, &tile<7>, &tile<8>};

}  // namespace

bool gemm_bf16_native() { return JF_GEMM_BF16_NATIVE; }

void gemm_accumulate_bf16(bool parallel, int64_t M, int64_t N, int64_t K, const float* a, int64_t a_ms, int64_t a_ks,
                          const float* b, int64_t b_ks, int64_t b_ns, float* c, int64_t ldc) {
  if (M <= 0 || N <= 0 || K <= 0) return;
  const int64_t K2 = (K + 1) / 2;
  const int64_t row_blocks = (M + kRowTile - 1) / kRowTile;
  const int64_t col_chunks = (N + kColTile - 1) / kColTile;
  thread_local std::vector<uint32_t> a_packed, b_packed;  // grown to the largest call, reused
  a_packed.resize(std::max(a_packed.size(), static_cast<size_t>(row_blocks * K2 * kRowTile)));
  b_packed.resize(std::max(b_packed.size(), static_cast<size_t>(col_chunks * K2 * kColTile)));
  pack_pairs(parallel, M, K, a, a_ms, a_ks, kRowTile, a_packed.data());
  pack_pairs(parallel, N, K, b, b_ns, b_ks, kColTile, b_packed.data());
  const uint32_t* ap = a_packed.data();
  const uint32_t* bp = b_packed.data();
  // Column-chunk-major order: consecutive units share the chunk's packed panel of B, which stays in cache.
  parallel_for(row_blocks * col_chunks, parallel, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) {
      const int64_t chunk = u / row_blocks, m0 = (u % row_blocks) * kRowTile;
      const int mr = static_cast<int>(std::min<int64_t>(kRowTile, M - m0));
      const int cols = static_cast<int>(std::min<int64_t>(kColTile, N - chunk * kColTile));
      kTiles[mr - 1](K2, ap + m0 * K2, bp + chunk * K2 * kColTile, c + m0 * ldc + chunk * kColTile, ldc, cols);
    }
  });
}

}  // namespace jf
