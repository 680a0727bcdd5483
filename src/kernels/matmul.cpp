#include "kernels/matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "kernels/cpu.h"
#include "kernels/parallel.h"

namespace jf {

namespace scalar {

// Reference kernel: dequantize one weight row, then plain dot products in k order.
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1) {
  const int64_t K = w.cols, N = w.rows;
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(K));
  for (int64_t n = n0; n < n1; n++) {
    dequantize_row(w.type, w.row(n), row.data(), K);
    for (int64_t m = 0; m < M; m++) {
      const float* xm = x + m * K;
      float s = 0.0f;
      for (int64_t k = 0; k < K; k++) s += xm[k] * row[k];
      y[m * N + n] = s;
    }
  }
}

}  // namespace scalar

size_t panel_bytes(DType type, int64_t K) {
  if (type == DType::Q8_0) return size_t(K / kQ8Block) * kPanel * (sizeof(float) + kQ8Block);
  return size_t(K) * kPanel * dtype_row_bytes(type, 1);
}

size_t read_bytes(const WeightMatrix& w) {
  if (!w.packed) return w.rows * w.row_bytes();
  return (w.rows + kPanel - 1) / kPanel * panel_bytes(w.packed_type, w.cols);
}

PageBuffer pack_panels(const WeightMatrix& w, DType type) {
  JF_CHECK(type == DType::F32 || type == w.type, "panels hold fp32 or the matrix's own type");
  const int64_t K = w.cols, N = w.rows, n_panels = (N + kPanel - 1) / kPanel;
  const size_t ps = panel_bytes(type, K);
  PageBuffer packed(ps * n_panels);  // zero-filled: rows past N stay zero
  parallel_for(n_panels, n_panels > 1, [&](int64_t p0, int64_t p1) {
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t n = p0 * kPanel; n < std::min(N, p1 * kPanel); n++) {
      uint8_t* panel = packed.data() + (n / kPanel) * ps;
      const int64_t c = n % kPanel;
      if (type == DType::F32) {
        dequantize_row(w.type, w.row(n), row.data(), K);
        for (int64_t k = 0; k < K; k++) std::memcpy(panel + (k * kPanel + c) * 4, &row[k], 4);
      } else if (type == DType::Q8_0) {
        const auto* blocks = reinterpret_cast<const BlockQ8_0*>(w.row(n));
        for (int64_t b = 0; b < K / kQ8Block; b++) {
          uint8_t* bp = panel + b * panel_bytes(DType::Q8_0, kQ8Block);
          const float d = f16_to_f32(blocks[b].d);
          std::memcpy(bp + c * sizeof(float), &d, sizeof(float));
          for (int kk = 0; kk < kQ8Block; kk++)
            bp[kPanel * sizeof(float) + kk * kPanel + c] = static_cast<uint8_t>(blocks[b].qs[kk]);
        }
      } else {  // F16 / BF16: 2-byte values moved as they are
        const uint8_t* src = w.row(n);
        for (int64_t k = 0; k < K; k++) std::memcpy(panel + (k * kPanel + c) * 2, src + k * 2, 2);
      }
    }
  });
  return packed;
}

void matmul(const float* x, int64_t M, const WeightMatrix& w, float* y, bool threads) {
  JF_CHECK(w.data != nullptr && w.rows > 0 && w.cols > 0, "empty weight matrix");
  if (M <= 0) return;
  const Isa isa = active_isa();
  const bool parallel = threads && M * w.rows * w.cols >= (1 << 17);
  if (w.packed && isa != Isa::Scalar) {
    const int64_t n_panels = (w.rows + kPanel - 1) / kPanel;
    parallel_for(n_panels, parallel, [&](int64_t p0, int64_t p1) {
      if (isa == Isa::Avx512)
        avx512::matmul_panels(x, M, w, y, p0, p1);
      else
        avx2::matmul_panels(x, M, w, y, p0, p1);
    });
    return;
  }
  // Split the output columns into tiles; a thread gets a contiguous run of whole tiles.
  const int64_t tile = isa == Isa::Scalar ? 8 : kColTile;
  const int64_t n_tiles = (w.rows + tile - 1) / tile;
  parallel_for(n_tiles, parallel, [&](int64_t t0, int64_t t1) {
    int64_t n0 = t0 * tile, n1 = std::min(t1 * tile, w.rows);
    switch (isa) {
      case Isa::Avx512: avx512::matmul_cols(x, M, w, y, n0, n1); break;
      case Isa::Avx2: avx2::matmul_cols(x, M, w, y, n0, n1); break;
      case Isa::Scalar: scalar::matmul_cols(x, M, w, y, n0, n1); break;
    }
  });
}

}  // namespace jf
