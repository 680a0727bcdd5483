// y = x W^T for a batch of rows x and a weight matrix W stored row-major in any DType.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/dtype.h"

namespace jf {

// A weight matrix of `rows` output features by `cols` input features, row-major (GGUF/GGML layout:
// the input dimension is contiguous). Non-owning.
struct WeightMatrix {
  DType type = DType::F32;
  const void* data = nullptr;
  int64_t rows = 0;  // N: output features
  int64_t cols = 0;  // K: input features
  // Optional second copy in the small-K layout (see pack_panels), owned elsewhere; SIMD kernels use it.
  const float* packed = nullptr;
  size_t row_bytes() const { return dtype_row_bytes(type, cols); }
  const uint8_t* row(int64_t n) const { return static_cast<const uint8_t*>(data) + n * row_bytes(); }
};

// y[m][n] = sum_k x[m][k] * W[n][k] for m < M, n < W.rows; x is M x W.cols, y is M x W.rows (row-major).
// Each weight is read from memory once per call for all M rows. Batch invariant: every y[m][n] is
// computed by the same sequence of floating-point operations whatever M, the row's index m and the
// thread count, so a row's result is bit-identical alone or inside any batch.
// threads = false keeps it on the calling thread (for callers already inside a parallel loop).
void matmul(const float* x, int64_t M, const WeightMatrix& w, float* y, bool threads = true);

// Small-K layout: fp32 weights in panels of kPanel output features, k-major inside a panel:
// packed[(p * K + k) * kPanel + c] = W[p * kPanel + c][k], zero past the last row. A kernel over this
// layout broadcasts one x value and multiplies a whole panel with it, so it needs no horizontal sums —
// the cost that dominates the row-major kernels when K is only a few hundred. Per output element the
// order is acc = fma(x[k], w[k], acc) for k = 0, 1, ..., K-1 from acc = 0, whatever M or the tile shape.
constexpr int64_t kPanel = 8;
// Matrices with at most this many input features are worth repacking (measured: bench/forward_cost).
constexpr int64_t kPackMaxCols = 512;
std::vector<float> pack_panels(const WeightMatrix& w);

namespace scalar {
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
}
// Weight rows per column tile in the SIMD kernels; a thread's column range starts at a multiple of it.
constexpr int64_t kColTile = 12;
namespace avx2 {
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
// Panels [p0, p1) of y = x W^T from w.packed (used for every SIMD instruction set).
void matmul_panels(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1);
}
namespace avx512 {
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
}

}  // namespace jf
