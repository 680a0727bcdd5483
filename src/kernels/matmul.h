// y = x W^T for a batch of rows x and a weight matrix W stored row-major in any DType.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kernels/dtype.h"

namespace jf {

// A weight matrix of `rows` output features by `cols` input features, row-major (GGUF/GGML layout:
// the input dimension is contiguous). Non-owning.
struct WeightMatrix {
  DType type = DType::F32;
  const void* data = nullptr;
  int64_t rows = 0;  // N: output features
  int64_t cols = 0;  // K: input features
  size_t row_bytes() const { return dtype_row_bytes(type, cols); }
  const uint8_t* row(int64_t n) const { return static_cast<const uint8_t*>(data) + n * row_bytes(); }
};

// y[m][n] = sum_k x[m][k] * W[n][k] for m < M, n < W.rows; x is M x W.cols, y is M x W.rows (row-major).
// Each weight is read from memory once per call for all M rows. Batch invariant: every y[m][n] is
// computed by the same sequence of floating-point operations whatever M, the row's index m and the
// thread count, so a row's result is bit-identical alone or inside any batch.
void matmul(const float* x, int64_t M, const WeightMatrix& w, float* y);

namespace scalar {
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
}
// Weight rows per column tile in the SIMD kernels; a thread's column range starts at a multiple of it.
constexpr int64_t kColTile = 12;
namespace avx2 {
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
}
namespace avx512 {
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
}

}  // namespace jf
