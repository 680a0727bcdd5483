// Register-blocked tiles over the panel layout (kernels/matmul.h), written once over a SIMD traits type V
// whose vector covers V::PP panels (AVX2: one panel of 8 lanes; AVX-512: two adjacent panels in 16 lanes).
// One broadcast x value times the weights of PP panels at a time, for MR rows of x and NV vectors per tile:
// no horizontal sums, and each weight vector is converted to fp32 once per MR rows. Every output element is
// the chain acc = fma(x[k], w[k], acc), k = 0 .. K-1 (quantized panels: exact integer block sums with int8
// activations, blocks combined by their scales, see tile_q8), whatever V, MR or NV, so all instantiations
// agree bit for bit. Include only from a file compiled for V's instruction set.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

#include "base/error.h"
#include "kernels/matmul.h"

namespace jf::panel_tiles {

// Weight-type tags: the weights of position k of the PP panels starting at `panel` (ps bytes apart).
struct PanelF32 {
  static constexpr int kBytes = 4;
  template <class V>
  static typename V::T load(const uint8_t* panel, size_t ps, int64_t k) { return V::load_f32(panel, ps, k * kPanel * 4); }
};
struct PanelF16 {
  static constexpr int kBytes = 2;
  template <class V>
  static typename V::T load(const uint8_t* panel, size_t ps, int64_t k) { return V::load_f16(panel, ps, k * kPanel * 2); }
};
struct PanelBF16 {
  static constexpr int kBytes = 2;
  template <class V>
  static typename V::T load(const uint8_t* panel, size_t ps, int64_t k) { return V::load_bf16(panel, ps, k * kPanel * 2); }
};
// Quantized panels (per block of 32 positions: fp32 vectors of 8 scales (and mins or second-half scales),
// then groups of 4 quants x 8 outputs), see tile_q8. kNibbles: 4-bit quants two groups per byte (with
// kHighBits more per quant in planes); kMin: a min per block (or half); kHalves: two scales per block
// (Q2_K's, Q3_K's, Q6_K's sub-blocks of 16); kNibbleOffset: the nibbles hold q + it (Q4_0: 8, Q5_0: 16,
// Q3_K: 4, Q6_K: 32); kKQuant: integer sub-block scales and a super-block header (matmul.h).
template <DType Type>
struct PanelInt {
  static constexpr DType kType = Type;
  static constexpr bool kNibbles = panel_nibbles(Type);
  static constexpr int kHighBits = panel_high_bits(Type);
  static constexpr int kNibbleOffset = panel_nibble_offset(Type);
  static constexpr bool kMin = dtype_has_min(Type);
  static constexpr bool kHalves = dtype_scales_per_32(Type) == 2;
  static constexpr bool kKQuant = dtype_is_kquant(Type);
  static constexpr bool kTable = panel_table(Type);  // nibbles are indices into kIq4Values
};
// IQ4's table values + 128: the unsigned bytes the VNNI tiles multiply (as Q8_0's q + 128).
inline constexpr auto kIq4ValuesPlus128 = [] {
  std::array<uint8_t, 16> t{};
  for (int i = 0; i < 16; i++) t[i] = static_cast<uint8_t>(kIq4Values[i] + 128);
  return t;
}();
using PanelQ8 = PanelInt<DType::Q8_0>;
using PanelQ4 = PanelInt<DType::Q4_0>;
template <class L>
struct IsIntPanel : std::false_type {};
template <DType T>
struct IsIntPanel<PanelInt<T>> : std::true_type {};
template <class L>
constexpr bool kIntPanel = IsIntPanel<L>::value;
template <class L>
constexpr bool kNibblePanel = [] {
  if constexpr (kIntPanel<L>) return L::kNibbles;
  return false;
}();

// acc[i][j] = fma(x_i[k], wv[j], acc[i][j]) for MR rows of x (stride K).
template <class V, int MR, int NV>
inline void fma_rows(typename V::T (&acc)[MR][NV], const float* x, int64_t K, int64_t k, typename V::T (&wv)[NV]) {
#pragma GCC unroll 8
  for (int j = 0; j < NV; j++)
    if constexpr (MR > 1) V::pin(wv[j]);  // keep the converted weights in registers for all rows
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++) {
    const typename V::T b = V::broadcast(x + i * K + k);
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) acc[i][j] = V::fma(b, wv[j], acc[i][j]);
  }
}

template <class V, int MR, int NV>
inline void zero_tile(typename V::T (&acc)[MR][NV]) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) acc[i][j] = V::zero();
}

template <class V, int MR, int NV>
inline void store_tile(const typename V::T (&acc)[MR][NV], float* y, int64_t N, int64_t col0) {
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) V::store(acc[i][j], y + i * N, N, col0 + j * V::PP * kPanel);
}

// Element types (F32, F16, BF16): y[i][col0 + c] for MR rows and NV vectors of PP panels (ps bytes apart).
template <class V, class L, int MR, int NV>
void tile_elem(const float* x, int64_t K, const uint8_t* w, size_t ps, float* y, int64_t N, int64_t col0) {
  typename V::T acc[MR][NV];
  zero_tile<V, MR, NV>(acc);
  constexpr int64_t kLine = 64 / (kPanel * L::kBytes);  // positions per cache line of a panel
  const size_t used = size_t(K) * kPanel * L::kBytes;  // bytes of a panel
  for (int64_t k = 0; k < K; k++) {
    // Each panel's line ~1 KB ahead, once per line, and past the end the next tile's (as tile_q8). A
    // prefetch never faults, so passing the last panel is harmless.
    if (k % kLine == 0) {
      const size_t at = size_t(k) * kPanel * L::kBytes + 1024;
      const uint8_t* pf = at >= used ? w + NV * V::PP * ps - used : w;
#pragma GCC unroll 8
      for (int j = 0; j < NV * V::PP; j++) _mm_prefetch(reinterpret_cast<const char*>(pf + j * ps + at), _MM_HINT_T0);
    }
    typename V::T wv[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) wv[j] = L::template load<V>(w + j * V::PP * ps, ps, k);
    fma_rows<V, MR, NV>(acc, x, K, k, wv);
  }
  store_tile<V, MR, NV>(acc, y, N, col0);
}

// Quantized panels times quantized activations (Q8Rows): per block of 32 positions, exact int32 dot
// products of the activations' quants with the weights' (stored unsigned: bytes as q + 128, nibbles (with
// high bits) as q + panel_nibble_offset: as in the files, Q4_0 q + 8, Q5_0 q + 16, Q6_K q + 32, the others
// q; V::dot4 / V::dot4u may then multiply unsigned by signed bytes, and each block's sum starts from the
// -128 * sum(x) (bytes) or -offset * sum(x) (nibbles) that undoes the offset where they do), then
// acc = fma(float(sum), dw * dx, acc), blocks in order (mins and K-quants' integer scales: see matmul.h).
// Each step multiplies 4 broadcast activation bytes with 4 positions of every output in the vector. The
// running totals wait in memory while a block's integer sums hold the registers.
struct Q8Input {  // MR rows of a Q8Rows from row m on
  const int8_t* q;
  const float* d;
  const int32_t* bias;
  const int32_t* start;  // Q8Rows::offset_starts of the panels' type, start_stride per row
  int64_t start_stride;  // K / 32, or K / 16 for the types with halves
  const float* sum_dx;   // Q8Rows::sum_dx (Q4_1, Q5_1)
  const int32_t* xsum_pairs;  // Q8Rows::xsum_pairs or xsum16_pairs (the K-quants' mins), pair_stride per row
  int64_t pair_stride;
  int64_t K;
};

// The integer sums of groups [g0, g1) (4 positions each) of block b into acc: byte quants.
template <class V, int MR, int NV>
inline void dot_groups(typename V::I (&acc)[MR][NV], const Q8Input& x, int64_t b, const uint8_t* w, size_t ps,
                       size_t quants, int g0, int g1) {
  const int64_t K = x.K;
#pragma GCC unroll 8
  for (int g = g0; g < g1; g++) {
    typename V::W wv[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) {
      wv[j] = V::load_q(w + j * V::PP * ps, ps, quants + g * 4 * kPanel);
      if constexpr (MR > 1) V::pin(wv[j]);
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      const auto xb = V::broadcast4(x.q + i * K + b * kQ8Block + 4 * g);
#pragma GCC unroll 8
      for (int j = 0; j < NV; j++) acc[i][j] = V::dot4(acc[i][j], wv[j], xb);
    }
  }
}

// acc += the products of pair h's two groups of weights (lo: group 2h, hi: 2h + 1) with the activations of
// block b: Q8_0's dot for IQ4's table values, V::dot4u for unsigned nibbles.
template <class V, class F, int MR, int NV, class Wt>
inline void multiply_pair(typename V::I (&acc)[MR][NV], const Q8Input& x, int64_t b, int h, const Wt (&lo)[NV],
                          const Wt (&hi)[NV]) {
  const int64_t K = x.K;
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++) {
    const auto x0 = V::broadcast4(x.q + i * K + b * kQ8Block + 8 * h);
    const auto x1 = V::broadcast4(x.q + i * K + b * kQ8Block + 8 * h + 4);
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) {
      if constexpr (F::kTable)
        acc[i][j] = V::dot4(V::dot4(acc[i][j], lo[j], x0), hi[j], x1);
      else
        acc[i][j] = V::dot4u(V::dot4u(acc[i][j], lo[j], x0), hi[j], x1);
    }
  }
}

// The integer sums of pairs of groups [h0, h1) of block b into acc, nibble panels: one load holds group 2h
// in its low nibbles and 2h + 1 in its high ones; the 5- and 6-bit types' bits above the nibble come from
// their planes (matmul.h), one shift each way, a mask and an or per pair, so the products are those of the
// whole unsigned quants (V::dot4u: unsigned weights, at most 63, times signed activation bytes). (A plain
// loop: the shift counts are constants once it is unrolled; a lambda per pair spilled the Q4_K tiles.)
template <class V, class F, int MR, int NV>
inline void dot_nibble_pairs(typename V::I (&acc)[MR][NV], const Q8Input& x, int64_t b, const uint8_t* w,
                             size_t ps, size_t quants, int h0, int h1) {
#pragma GCC unroll 4
  for (int h = h0; h < h1; h++) {
    typename V::W4 lo[NV], hi[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) {
      V::load_q4(w + j * V::PP * ps, ps, quants + h * 4 * kPanel, lo[j], hi[j]);
      if constexpr (F::kHighBits > 0) {
        constexpr int per_plane = 4 / F::kHighBits;
        const size_t plane = quants + kPanelNibbleBytes + (h / per_plane) * kPanelPlaneBytes;
        const int slot = F::kHighBits * (h % per_plane);
        V::template add_high<F::kHighBits>(w + j * V::PP * ps, ps, plane, slot, lo[j], hi[j]);
      }
      if constexpr (MR > 1) V::pin(lo[j]), V::pin(hi[j]);
    }
    if constexpr (F::kTable) {  // the table's values in the form load_q gives Q8_0's bytes, then Q8_0's dot
      typename V::W qlo[NV], qhi[NV];
#pragma GCC unroll 8
      for (int j = 0; j < NV; j++) {
        qlo[j] = V::table_q(lo[j]), qhi[j] = V::table_q(hi[j]);
        if constexpr (MR > 1) V::pin(qlo[j]), V::pin(qhi[j]);
      }
      multiply_pair<V, F, MR, NV>(acc, x, b, h, qlo, qhi);
    } else {
      multiply_pair<V, F, MR, NV>(acc, x, b, h, lo, hi);
    }
  }
}

// The integer sums of quad h of block b (groups 4h .. 4h + 3: half h of the block) into acc, crumb panels
// (Q2_K, Q3_K): one load holds the quad's four groups at bits 0, 2, 4, 6 of each byte, and Q3_K's third bits
// come from its plane (group g's at bit g), moved to bit 2 (shift counts are constants once unrolled).
template <class V, class F, int MR, int NV>
inline void dot_crumb_quad(typename V::I (&acc)[MR][NV], const Q8Input& x, int64_t b, const uint8_t* w, size_t ps,
                           size_t quants, int h) {
  typename V::W4 v[NV], plane[NV];
#pragma GCC unroll 8
  for (int j = 0; j < NV; j++) {
    v[j] = V::load_raw(w + j * V::PP * ps, ps, quants + h * 4 * kPanel);
    if constexpr (F::kHighBits > 0) plane[j] = V::load_raw(w + j * V::PP * ps, ps, quants + kPanelCrumbBytes);
  }
#pragma GCC unroll 2
  for (int p = 0; p < 2; p++) {  // the quad's two pairs of groups
    typename V::W4 lo[NV], hi[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) {
      lo[j] = V::crumbs(v[j], 4 * p);
      hi[j] = V::crumbs(v[j], 4 * p + 2);
      if constexpr (F::kHighBits > 0) {
        lo[j] = V::with_bit(lo[j], plane[j], 4 * h + 2 * p);
        hi[j] = V::with_bit(hi[j], plane[j], 4 * h + 2 * p + 1);
      }
      if constexpr (MR > 1) V::pin(lo[j]), V::pin(hi[j]);
    }
    multiply_pair<V, F, MR, NV>(acc, x, b, 2 * h + p, lo, hi);
  }
}

// total = fma(float(acc), scale * dx, total) with the fp32 scales at byte `at` of the block.
template <class V, int MR, int NV, int L>
inline void scale_into(float (&total)[MR][NV][L], const typename V::I (&acc)[MR][NV], const Q8Input& x, int64_t b,
                       const uint8_t* w, size_t ps, size_t at) {
  const int64_t nb = x.K / kQ8Block;
#pragma GCC unroll 8
  for (int j = 0; j < NV; j++) {
    const typename V::T dw = V::load_f32(w + j * V::PP * ps, ps, at);
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      const typename V::T scale = V::mul(dw, V::broadcast(x.d + i * nb + b));
      V::storeu(total[i][j], V::fma(V::to_float(acc[i][j]), scale, V::loadu(total[i][j])));
    }
  }
}

// K-quants (F): u = fma(float(acc), d * sc, u), sc the int8 scales at byte `sc_at` of the block (Q2_K: the
// low 4 bits, panel_scale_min_byte), d the fp32 values at byte `d_at` (the super-block header). d * sc is
// exact (see Q8Rows), formed once per vector for all rows: a conversion and an FMA per row and vector.
template <class V, class F, int MR, int NV, int L>
inline void kscale_into(float (&u)[MR][NV][L], const typename V::I (&acc)[MR][NV], const uint8_t* w, size_t ps,
                        size_t sc_at, size_t d_at) {
#pragma GCC unroll 8
  for (int j = 0; j < NV; j++) {
    const uint8_t* panel = w + j * V::PP * ps;
    typename V::I sc = V::load_i8(panel, ps, sc_at);
    if constexpr (panel_scale_min_byte(F::kType)) sc = V::low4(sc);
    const typename V::T d = V::mul(V::load_f32(panel, ps, d_at), V::to_float(sc));
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) V::storeu(u[i][j], V::fma(V::to_float(acc[i][j]), d, V::loadu(u[i][j])));
  }
}

// The end of a K-quant super-block (blocks s .. s + 7, header at byte `head`): for the types with mins,
// u = fma(float(sum of m * sum_k qx over its sub-blocks), -dmin, u), the integer dot product taken two
// sub-blocks at a time (V::dot2: 16-bit products, the mins are below 64 and the activations' sums below
// 2^15); then total = fma(u, dx, total) with the super-block's activation scale.
template <class V, class F, int MR, int NV, int L>
inline void finish_super_block(float (&total)[MR][NV][L], const float (&u)[MR][NV][L], const Q8Input& x, int64_t s,
                               const uint8_t* w, size_t ps, size_t head) {
  constexpr DType kT = F::kType;
  const int64_t nb = x.K / kQ8Block;
  typename V::I mins[MR][NV];
  if constexpr (F::kMin) {
    // Two sub-blocks per step: lanes hold the pair's two mins as 16-bit halves, x.xsum_pairs their sums.
    constexpr int parts = F::kHalves ? 2 : 1, pairs = 8 * parts / 2;
    auto min_at = [&](int t) {  // sub-block t of the super-block: its min byte's offset
      return panel_block_offset(kT, s + t / parts) + (parts == 2 ? (t % 2) * kPanel : kPanel);
    };
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
      for (int j = 0; j < NV; j++) mins[i][j] = V::izero();
#pragma GCC unroll 8
    for (int p = 0; p < pairs; p++) {
#pragma GCC unroll 8
      for (int j = 0; j < NV; j++) {
        const uint8_t* panel = w + j * V::PP * ps;
        typename V::I lo = V::load_i8(panel, ps, min_at(2 * p)), hi = V::load_i8(panel, ps, min_at(2 * p + 1));
        if constexpr (panel_scale_min_byte(kT)) lo = V::high4(lo), hi = V::high4(hi);
        const typename V::I m = V::pair16(lo, hi);
        const int32_t* xs = x.xsum_pairs + s * parts / 2 + p;
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++) mins[i][j] = V::dot2(mins[i][j], m, xs + i * x.pair_stride);
      }
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < NV; j++) {
    typename V::T nd{};
    if constexpr (F::kMin) nd = V::load_f32(w + j * V::PP * ps, ps, head + kPanel * sizeof(float));
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++) {
      typename V::T v = V::loadu(u[i][j]);
      if constexpr (F::kMin) v = V::fma(V::to_float(mins[i][j]), nd, v);
      V::storeu(total[i][j], V::fma(v, V::broadcast(x.d + i * nb + s), V::loadu(total[i][j])));
    }
  }
}

template <class V, class F, int MR, int NV>
void tile_q8(const Q8Input& x, const uint8_t* w, size_t ps, float* y, int64_t N, int64_t col0) {
  constexpr int L = V::PP * kPanel;
  alignas(64) float total[MR][NV][L] = {};
  alignas(64) float u[MR][NV][L];  // K-quants: the super-block's sum before its activation scale
  const int64_t K = x.K, nb = K / kQ8Block;
  constexpr DType kT = F::kType;
  constexpr size_t bb = panel_block_bytes(kT), hb = panel_head_bytes(kT);
  for (int64_t b = 0; b < nb; b++) {
    // Fetch each panel's block 4 ahead: without it the streamed weights arrived too late (2-thread AVX2
    // tiles at 4 rows ran at half their cached speed; 2 and 8 blocks ahead measured slower than 4).
    // K-quants: with the header bytes before the block. Near the end of the panels, the next tile's first
    // blocks instead: that tile starts cold otherwise, since only its first panel continues one of this
    // tile's streams (8-row q4_k_m forwards 8% faster). A prefetch never faults, so passing the last
    // panel is harmless.
    const bool next = b + 4 >= nb;
    const uint8_t* pf = next ? w + NV * V::PP * ps : w;
    const size_t ahead = panel_block_offset(kT, next ? b + 4 - nb : b + 4) - hb;
#pragma GCC unroll 16
    for (int j = 0; j < NV * V::PP; j++)
#pragma GCC unroll 8
      for (size_t off = 0; off < bb + hb; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(pf + j * ps + ahead + off), _MM_HINT_T0);
    typename V::I acc[MR][NV];
    const size_t at = panel_block_offset(kT, b), quants = at + panel_quants_offset(kT);
    const size_t head = panel_head_offset(kT, b);
    if constexpr (F::kKQuant)
      if (b % 8 == 0) std::fill(&u[0][0][0], &u[0][0][0] + MR * NV * L, 0.0f);
    if constexpr (F::kHalves) {  // two chained sub-blocks of 16 positions (two pairs of groups each)
#pragma GCC unroll 2
      for (int h = 0; h < 2; h++) {
        // sum (q + o) * x = sum q * x + o * sum x: start from -o * sum x.
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
          for (int j = 0; j < NV; j++) {
            if constexpr (F::kNibbleOffset > 0)
              acc[i][j] = V::start(x.start + i * x.start_stride + 2 * b + h);
            else
              acc[i][j] = V::izero();
          }
        if constexpr (panel_crumbs(kT))
          dot_crumb_quad<V, F, MR, NV>(acc, x, b, w, ps, quants, h);
        else
          dot_nibble_pairs<V, F, MR, NV>(acc, x, b, w, ps, quants, 2 * h, 2 * h + 2);
        kscale_into<V, F, MR, NV, L>(u, acc, w, ps, at + h * kPanel, head);
      }
      if (b % 8 == 7) finish_super_block<V, F, MR, NV, L>(total, u, x, b - 7, w, ps, head);
      continue;
    }
#pragma GCC unroll 8
    for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
      for (int j = 0; j < NV; j++) {
        if constexpr (!F::kNibbles || F::kTable)
          acc[i][j] = V::block_start(x.bias + i * nb + b);  // bytes q + 128 (or as V::table_q), see V::dot4
        else if constexpr (F::kNibbleOffset > 0)  // sum (q + o) * x = sum q * x + o * sum x
          acc[i][j] = V::start(x.start + i * x.start_stride + b);
        else
          acc[i][j] = V::izero();
      }
    if constexpr (F::kNibbles)
      dot_nibble_pairs<V, F, MR, NV>(acc, x, b, w, ps, quants, 0, kQ8Block / 8);
    else
      dot_groups<V, MR, NV>(acc, x, b, w, ps, quants, 0, kQ8Block / 4);
    if constexpr (F::kKQuant) {  // Q4_K, Q5_K (sub-blocks of 32, a min each)
      kscale_into<V, F, MR, NV, L>(u, acc, w, ps, at, head);
      if (b % 8 == 7) finish_super_block<V, F, MR, NV, L>(total, u, x, b - 7, w, ps, head);
      continue;
    }
    scale_into<V, MR, NV, L>(total, acc, x, b, w, ps, at);
    if constexpr (F::kMin) {  // Q4_1, Q5_1: + sum(qx) * dx * m
#pragma GCC unroll 8
      for (int j = 0; j < NV; j++) {
        const typename V::T mw = V::load_f32(w + j * V::PP * ps, ps, at + kPanel * sizeof(float));
#pragma GCC unroll 8
        for (int i = 0; i < MR; i++)
          V::storeu(total[i][j], V::fma(V::broadcast(x.sum_dx + i * nb + b), mw, V::loadu(total[i][j])));
      }
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 8
    for (int j = 0; j < NV; j++) V::store(V::loadu(total[i][j]), y + i * N, N, col0 + j * L);
}

// Rows m.. of the input: fp32 rows or quantized ones.
inline const float* rows_from(const float* x, int64_t m, int64_t K) { return x + m * K; }
inline Q8Input rows_from(const Q8Input& x, int64_t m, int64_t K) {
  const int64_t nb = K / kQ8Block;
  const int32_t* start = x.start ? x.start + m * x.start_stride : nullptr;
  const int32_t* pairs = x.xsum_pairs ? x.xsum_pairs + m * x.pair_stride : nullptr;
  return {x.q + m * K, x.d + m * nb, x.bias + m * nb, start, x.start_stride, x.sum_dx + m * nb, pairs, x.pair_stride, K};
}

// Kept out of line: inlined into the row loops, GCC 12 spilled an accumulator of the Q8_0 tiles to the
// stack (a store-to-load chain on every FMA, 3x slower).
template <class V, class L, int MR, int NV, class X>
__attribute__((noinline)) void tile(const X& x, int64_t K, const uint8_t* w, size_t ps, float* y, int64_t N, int64_t col0) {
  if constexpr (kIntPanel<L>)
    tile_q8<V, L, MR, NV>(x, w, ps, y, N, col0);
  else
    tile_elem<V, L, MR, NV>(x, K, w, ps, y, N, col0);
}

// Panels [p0, p1) for MR rows: tiles of V::wide<L>(MR) vectors, then of 2 and 1 for the rest.
// (p1 - p0) is a multiple of V::PP.
template <class V, class L, int MR, class X>
void panel_rows(const X& x, int64_t K, const uint8_t* packed, size_t ps, float* y, int64_t N, int64_t p0,
                int64_t p1) {
  constexpr int NV = V::template wide<L>(MR), PP = V::PP;
  int64_t p = p0;
  for (; p + NV * PP <= p1; p += NV * PP) tile<V, L, MR, NV>(x, K, packed + p * ps, ps, y, N, p * kPanel);
  for (; p + 2 * PP <= p1; p += 2 * PP) tile<V, L, MR, 2>(x, K, packed + p * ps, ps, y, N, p * kPanel);
  for (; p < p1; p += PP) tile<V, L, MR, 1>(x, K, packed + p * ps, ps, y, N, p * kPanel);
}

// Tiles for the last `mr` (< MR) rows of a batch: the largest compiled row count that fits.
template <class V, class L, int MR, class X>
void panel_rows_upto(int64_t mr, const X& x, int64_t K, const uint8_t* packed, size_t ps, float* y, int64_t N,
                     int64_t p0, int64_t p1) {
  if constexpr (MR > 1)
    if (mr < MR) return panel_rows_upto<V, L, MR - 1>(mr, x, K, packed, ps, y, N, p0, p1);
  panel_rows<V, L, MR>(x, K, packed, ps, y, N, p0, p1);
}

// Panels [p0, p1) of y = x W^T for all M rows, V::MR rows at a time; (p1 - p0) is a multiple of V::PP.
// x: fp32 rows, or a Q8Input for PanelQ8 / PanelQ4.
template <class V, class L, class X>
void run_panels(const X& x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  constexpr int MR = V::MR;
  const int64_t K = w.cols, N = w.rows;
  const size_t ps = panel_bytes(w.packed_type, K);
  // Panels whose weights stay in cache (~256 KB) while every group of rows passes over them. One pass of
  // rows (M <= MR) reads each weight once: no groups, so the widest tiles cover the whole range (a group
  // of 12 panels left K = 5632's one-row tiles 2 vectors wide instead of 8).
  const int64_t cached = std::max<int64_t>(12, static_cast<int64_t>((size_t(256) << 10) / ps) / 12 * 12);
  const int64_t group = M <= MR ? p1 - p0 : cached;
  for (int64_t g = p0; g < p1; g += group) {
    const int64_t g1 = std::min(p1, g + group);
    for (int64_t m = 0; m < M; m += MR)
      panel_rows_upto<V, L, MR>(std::min<int64_t>(MR, M - m), rows_from(x, m, K), K, w.packed, ps, y + m * N, N, g, g1);
  }
}

template <class V>
void matmul_panels(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  switch (w.packed_type) {
    case DType::F32: return run_panels<V, PanelF32>(x, M, w, y, p0, p1);
    case DType::F16: return run_panels<V, PanelF16>(x, M, w, y, p0, p1);
    case DType::BF16: return run_panels<V, PanelBF16>(x, M, w, y, p0, p1);
    default: break;  // quantized types need quantized rows: matmul_panels_q8
  }
}

template <class V>
void matmul_panels_q8(const Q8Rows& x, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  JF_CHECK(x.group == q8_group(w.packed_type), "activations quantized per " + std::to_string(x.group) + " for " +
                                                  dtype_name(w.packed_type) + " weights");
  const int64_t parts = x.K / kQ8Block * dtype_scales_per_32(w.packed_type);  // sub-blocks per row
  const int32_t* pairs = dtype_scales_per_32(w.packed_type) == 2 ? x.xsum16_pairs.data() : x.xsum_pairs.data();
  const Q8Input in{x.q.data(), x.d.data(), x.bias.data(), x.offset_starts(w.packed_type), parts,
                   x.sum_dx.data(), pairs, parts / 2, x.K};
  switch (w.packed_type) {
    case DType::Q4_0: return run_panels<V, PanelQ4>(in, x.M, w, y, p0, p1);
    case DType::Q4_1: return run_panels<V, PanelInt<DType::Q4_1>>(in, x.M, w, y, p0, p1);
    case DType::Q5_0: return run_panels<V, PanelInt<DType::Q5_0>>(in, x.M, w, y, p0, p1);
    case DType::Q5_1: return run_panels<V, PanelInt<DType::Q5_1>>(in, x.M, w, y, p0, p1);
    case DType::Q2_K: return run_panels<V, PanelInt<DType::Q2_K>>(in, x.M, w, y, p0, p1);
    case DType::Q3_K: return run_panels<V, PanelInt<DType::Q3_K>>(in, x.M, w, y, p0, p1);
    case DType::Q4_K: return run_panels<V, PanelInt<DType::Q4_K>>(in, x.M, w, y, p0, p1);
    case DType::Q5_K: return run_panels<V, PanelInt<DType::Q5_K>>(in, x.M, w, y, p0, p1);
    case DType::Q6_K: return run_panels<V, PanelInt<DType::Q6_K>>(in, x.M, w, y, p0, p1);
    case DType::IQ4_NL: return run_panels<V, PanelInt<DType::IQ4_NL>>(in, x.M, w, y, p0, p1);
    case DType::IQ4_XS: return run_panels<V, PanelInt<DType::IQ4_XS>>(in, x.M, w, y, p0, p1);
    default: return run_panels<V, PanelQ8>(in, x.M, w, y, p0, p1);
  }
}

}  // namespace jf::panel_tiles
