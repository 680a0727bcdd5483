// y = x W^T for a batch of rows x and a weight matrix W stored row-major in any DType.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/mapped_file.h"
#include "kernels/dtype.h"

namespace jf {

// A weight matrix of `rows` output features by `cols` input features, row-major (GGUF/GGML layout:
// the input dimension is contiguous). Non-owning.
struct WeightMatrix {
  DType type = DType::F32;
  const void* data = nullptr;
  int64_t rows = 0;  // N: output features
  int64_t cols = 0;  // K: input features
  // Optional second copy in the panel layout (see pack_panels), owned elsewhere; the SIMD kernels use it.
  const uint8_t* packed = nullptr;
  DType packed_type = DType::F32;
  size_t row_bytes() const { return dtype_row_bytes(type, cols); }
  const uint8_t* row(int64_t n) const { return static_cast<const uint8_t*>(data) + n * row_bytes(); }
};

// y[m][n] = sum_k x[m][k] * W[n][k] for m < M, n < W.rows; x is M x W.cols, y is M x W.rows (row-major).
// Each weight is read from memory once per call for all M rows. Batch invariant: every y[m][n] is
// computed by the same sequence of floating-point operations whatever M, the row's index m and the
// thread count, so a row's result is bit-identical alone or inside any batch.
// threads = false keeps it on the calling thread (for callers already inside a parallel loop).
void matmul(const float* x, int64_t M, const WeightMatrix& w, float* y, bool threads = true);

// Panel layout: the weights in panels of kPanel output features, k-major inside a panel, so a kernel
// multiplies one broadcast x value with 8 outputs' weights at once and needs no horizontal sums (the cost
// that dominates the row-major kernels at small K) and converts each weight vector once for several rows.
//   F32 / F16 / BF16: panel p is K groups of 8 values, group k = W[8p .. 8p+8)[k].
//   Q8_0: panel p is K/32 blocks, each 8 fp32 scales then 32 groups of 8 int8 quants.
// Rows past N are zero. Per output element the order is acc = fma(x[k], w[k], acc) for k = 0 .. K-1 from
// acc = 0, whatever M or the tile shape (w[k] as fp32; Q8_0 weights in fp32 panels are q * d rounded to
// fp32; in Q8_0 panels each block's quants go through that chain from 0 and the block sums are added as
// acc = fma(sum, d, acc), blocks in order).
constexpr int64_t kPanel = 8;
// Matrices with at most this many input features get an fp32 panel copy whatever their type (see
// model/weights.h pack_matrices).
constexpr int64_t kPackMaxCols = 512;
size_t panel_bytes(DType type, int64_t K);  // bytes of one panel
size_t read_bytes(const WeightMatrix& w);   // bytes the kernels read for one pass over w (its panels if any)
// The panel copy of w in `type` (F32, or w's own type).
PageBuffer pack_panels(const WeightMatrix& w, DType type);

namespace scalar {
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
}
// Weight rows per column tile in the SIMD kernels; a thread's column range starts at a multiple of it.
constexpr int64_t kColTile = 12;
namespace avx2 {
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
// Panels [p0, p1) of y = x W^T from w.packed.
void matmul_panels(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1);
}  // namespace avx2
namespace avx512 {
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
// Same results as avx2::matmul_panels, 16 lanes at a time.
void matmul_panels(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1);
}  // namespace avx512

}  // namespace jf
