// Register-blocked matmul tiles, written once over a SIMD traits type (AVX2: 8 lanes, AVX-512: 16 lanes).
// Per output element the operation sequence is fixed — acc = fma(x, w, acc) over k in chunks of the lane
// count, then the traits' fixed horizontal sum, then a scalar tail — whatever the tile shape, so results
// are batch invariant. Include only from a file compiled for the traits' instruction set.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "base/error.h"
#include "kernels/matmul.h"

namespace jf::tiles {

// Loaders turn L consecutive weights of a row into fp32 lanes (V::L lanes).
template <class V>
struct LoadF32 {
  static typename V::T load(const uint8_t* row, int64_t k) { return V::loadu(reinterpret_cast<const float*>(row) + k); }
  static float at(const uint8_t* row, int64_t k) { return reinterpret_cast<const float*>(row)[k]; }
};
template <class V>
struct LoadF16 {
  static typename V::T load(const uint8_t* row, int64_t k) { return V::load_f16(reinterpret_cast<const uint16_t*>(row) + k); }
  static float at(const uint8_t* row, int64_t k) { return f16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]); }
};
template <class V>
struct LoadBF16 {
  static typename V::T load(const uint8_t* row, int64_t k) { return V::load_bf16(reinterpret_cast<const uint16_t*>(row) + k); }
  static float at(const uint8_t* row, int64_t k) { return bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[k]); }
};

// The step every tile repeats: acc[i][j] += x_i[0 .. L) * w_j for MR rows of x (stride K) and NR weight
// vectors already converted to fp32 lanes.
template <class V, int MR, int NR>
inline void fma_block(typename V::T (&acc)[MR][NR], const float* x, int64_t K, const typename V::T (&wv)[NR]) {
#pragma GCC unroll 32
  for (int i = 0; i < MR; i++) {
    const typename V::T xv = V::loadu(x + i * K);
#pragma GCC unroll 32
    for (int j = 0; j < NR; j++) acc[i][j] = V::fma(xv, wv[j], acc[i][j]);
  }
}

// y[i][j] = dot(x_i, w_j) for MR rows of x (stride K) and NR weight rows (stride ws bytes).
template <class V, int MR, int NR, class L>
void tile_float(const float* x, int64_t K, const uint8_t* w, size_t ws, float* y, int64_t ldy) {
  using T = typename V::T;
  T acc[MR][NR];
#pragma GCC unroll 32
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 32
    for (int j = 0; j < NR; j++) acc[i][j] = V::zero();
  int64_t k = 0;
  for (; k + V::L <= K; k += V::L) {
    T wv[NR];
#pragma GCC unroll 32
    for (int j = 0; j < NR; j++) wv[j] = L::load(w + j * ws, k);
    fma_block<V, MR, NR>(acc, x + k, K, wv);
  }
  for (int i = 0; i < MR; i++)
    for (int j = 0; j < NR; j++) {
      float s = V::hsum(acc[i][j]);
      for (int64_t kk = k; kk < K; kk++) s += x[i * K + kk] * L::at(w + j * ws, kk);
      y[i * ldy + j] = s;
    }
}

// Q8_0: each weight becomes q * d (rounded to fp32) before its FMA, block by block.
template <class V, int MR, int NR>
void tile_q8(const float* x, int64_t K, const uint8_t* w, size_t ws, float* y, int64_t ldy) {
  using T = typename V::T;
  T acc[MR][NR];
#pragma GCC unroll 32
  for (int i = 0; i < MR; i++)
#pragma GCC unroll 32
    for (int j = 0; j < NR; j++) acc[i][j] = V::zero();
  const int64_t nb = K / kQ8Block;
  for (int64_t b = 0; b < nb; b++) {
    T d[NR];
    const BlockQ8_0* blk[NR];
#pragma GCC unroll 32
    for (int j = 0; j < NR; j++) {
      blk[j] = reinterpret_cast<const BlockQ8_0*>(w + j * ws) + b;
      d[j] = V::set1(_cvtsh_ss(blk[j]->d));  // F16C conversion: exact, like f16_to_f32, but one instruction
    }
#pragma GCC unroll 4
    for (int g = 0; g < kQ8Block / V::L; g++) {
      const int64_t k = b * kQ8Block + g * V::L;
      T wv[NR];
#pragma GCC unroll 32
      for (int j = 0; j < NR; j++) wv[j] = V::mul(V::load_i8(blk[j]->qs + g * V::L), d[j]);
      fma_block<V, MR, NR>(acc, x + k, K, wv);
    }
  }
  for (int i = 0; i < MR; i++)
    for (int j = 0; j < NR; j++) y[i * ldy + j] = V::hsum(acc[i][j]);
}

using TileFn = void (*)(const float*, int64_t, const uint8_t*, size_t, float*, int64_t);

template <class V, class L>
struct FloatTiles {
  static constexpr int nr(int mr) { return V::nr(mr); }
  template <int MR, int NR>
  static void f(const float* x, int64_t K, const uint8_t* w, size_t ws, float* y, int64_t ldy) {
    tile_float<V, MR, NR, L>(x, K, w, ws, y, ldy);
  }
};
template <class V>
struct Q8Tiles {
  static constexpr int nr(int mr) { return V::nr_q8(mr); }
  template <int MR, int NR>
  static void f(const float* x, int64_t K, const uint8_t* w, size_t ws, float* y, int64_t ldy) {
    tile_q8<V, MR, NR>(x, K, w, ws, y, ldy);
  }
};

// Columns [n0, n1) of y = x W^T. Columns go in tiles of kColTile weight rows; inside a tile, rows of x go
// in groups of up to V::MR, each group covering the tile with calls of V::nr(mr) columns (the tile's
// weights stay in L1 across the row groups). Leftover columns use one-column tiles.
template <class V, class F>
void run_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1) {
  constexpr int nr1 = F::nr(1), nr2 = F::nr(2), nr3 = F::nr(3), nr4 = F::nr(4);
  constexpr TileFn full[4] = {&F::template f<1, nr1>, &F::template f<2, nr2>, &F::template f<3, nr3>,
                              &F::template f<4, nr4>};
  constexpr TileFn one[4] = {&F::template f<1, 1>, &F::template f<2, 1>, &F::template f<3, 1>, &F::template f<4, 1>};
  const int64_t K = w.cols, N = w.rows;
  const size_t ws = w.row_bytes();
  constexpr int64_t kRowBlock = 32;  // rows of x kept hot in cache while weight tiles stream by
  for (int64_t m0 = 0; m0 < M; m0 += kRowBlock) {
    const int64_t mb = std::min(kRowBlock, M - m0);
    int64_t n = n0;
    for (; n + kColTile <= n1; n += kColTile) {
      for (int64_t m = m0; m < m0 + mb;) {
        const int mr = static_cast<int>(std::min<int64_t>(V::MR, m0 + mb - m));
        const int nr = mr == 1 ? nr1 : mr == 2 ? nr2 : mr == 3 ? nr3 : nr4;
        for (int64_t j = 0; j < kColTile; j += nr) full[mr - 1](x + m * K, K, w.row(n + j), ws, y + m * N + n + j, N);
        m += mr;
      }
    }
    for (; n < n1; n++) {
      for (int64_t m = m0; m < m0 + mb;) {
        const int mr = static_cast<int>(std::min<int64_t>(V::MR, m0 + mb - m));
        one[mr - 1](x + m * K, K, w.row(n), ws, y + m * N + n, N);
        m += mr;
      }
    }
  }
}

template <class V>
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1) {
  switch (w.type) {
    case DType::F32: run_cols<V, FloatTiles<V, LoadF32<V>>>(x, M, w, y, n0, n1); break;
    case DType::F16: run_cols<V, FloatTiles<V, LoadF16<V>>>(x, M, w, y, n0, n1); break;
    case DType::BF16: run_cols<V, FloatTiles<V, LoadBF16<V>>>(x, M, w, y, n0, n1); break;
    case DType::Q8_0: run_cols<V, Q8Tiles<V>>(x, M, w, y, n0, n1); break;
    default: JF_CHECK(false, "no row-major SIMD tiles for this quantized type (matmul uses the scalar ones)");
  }
}

}  // namespace jf::tiles
