#include "kernels/matmul.h"

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

std::vector<float> pack_panels(const WeightMatrix& w) {
  const int64_t K = w.cols, N = w.rows, n_panels = (N + kPanel - 1) / kPanel;
  std::vector<float> packed(static_cast<size_t>(n_panels * K * kPanel), 0.0f);
  std::vector<float> row(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; n++) {
    dequantize_row(w.type, w.row(n), row.data(), K);
    float* panel = packed.data() + (n / kPanel) * K * kPanel + n % kPanel;
    for (int64_t k = 0; k < K; k++) panel[k * kPanel] = row[k];
  }
  return packed;
}

void matmul(const float* x, int64_t M, const WeightMatrix& w, float* y, bool threads) {
  JF_CHECK(w.data != nullptr && w.rows > 0 && w.cols > 0, "empty weight matrix");
  if (M <= 0) return;
  const Isa isa = active_isa();
  const bool parallel = threads && M * w.rows * w.cols >= (1 << 17);
  if (w.packed && isa != Isa::Scalar) {
    const int64_t n_panels = (w.rows + kPanel - 1) / kPanel;
    parallel_for(n_panels, parallel,
                 [&](int64_t p0, int64_t p1) { avx2::matmul_panels(x, M, w, y, p0, p1); });
    return;
  }
  // Split the output columns into tiles; a thread gets a contiguous run of whole tiles.
  const int64_t tile = isa == Isa::Scalar ? 8 : kColTile;
  const int64_t n_tiles = (w.rows + tile - 1) / tile;
  parallel_for(n_tiles, parallel, [&](int64_t t0, int64_t t1) {
    int64_t n0 = t0 * tile, n1 = std::min(t1 * tile, w.rows);
    switch (isa) {
      case Isa::Avx512:
        avx512::matmul_cols(x, M, w, y, n0, n1);
        break;
      case Isa::Avx2:
        avx2::matmul_cols(x, M, w, y, n0, n1);
        break;
      case Isa::Scalar:
        scalar::matmul_cols(x, M, w, y, n0, n1);
        break;
    }
  });
}

}  // namespace jf
