// A random matrix of one weight type and `copies` panel copies of it, for the kernel benchmarks: one copy
// stays cache-resident, more than the last level cache holds stream from DRAM when cycled through.
#pragma once
#include <vector>

#include "base/rng.h"
#include "kernels/matmul.h"

namespace jf {

struct PanelCopies {
  std::vector<uint8_t> bytes;     // the row-major weights
  std::vector<PageBuffer> panels;  // their panel copies
  std::vector<WeightMatrix> ws;    // one matrix per copy, each with its own panels
};

inline PanelCopies make_panel_copies(DType t, int64_t rows, int64_t cols, int copies, Rng& rng) {
  PanelCopies out;
  std::vector<float> f(static_cast<size_t>(rows * cols));
  for (float& v : f) v = rng.normal();
  const size_t row_bytes = dtype_row_bytes(t, cols);
  out.bytes.resize(row_bytes * rows);
  for (int64_t n = 0; n < rows; n++) quantize_row(t, &f[n * cols], out.bytes.data() + n * row_bytes, cols);
  const WeightMatrix base{t, out.bytes.data(), rows, cols};
  for (int c = 0; c < copies; c++) out.panels.push_back(pack_panels(base, t));
  for (const PageBuffer& p : out.panels) {
    WeightMatrix w = base;
    w.packed = p.data();
    w.packed_type = t;
    out.ws.push_back(w);
  }
  return out;
}

}  // namespace jf
