#include "vulkan/tile_probe.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "kernels/dtype.h"
#include "vulkan/buffer.h"
#include "vulkan/recorder.h"

namespace jf::vulkan {

namespace {

constexpr uint32_t kN = 32, kK = 512;

// y = x W^T for the `rows` rows of x (host buffers: no staging).
std::vector<float> tile_product(Context& ctx, const Kernel& k, MatrixMath math, uint32_t tile_rows, const Buffer& w,
                                const std::vector<float>& x, uint32_t rows) {
  Buffer xb(ctx, x.size() * 4, Buffer::Kind::Host), yb(ctx, size_t{rows} * kN * 4, Buffer::Kind::Host);
  std::memcpy(xb.mapped(), x.data(), x.size() * 4);
  const MatmulParams p = MatmulParams::plain(rows, kN, kK);
  MatmulKernel tiles;
  tiles.tile_rows = tile_rows;
  const MatmulGrid g = matmul_grid(tiles, math, kN, rows);
  Recorder rec(ctx);
  rec.begin();
  rec.dispatch(k, {xb.view(), yb.view(), w.view(), xb.view(), xb.view(), yb.view(), yb.view()}, p, g.x, g.y, g.z);
  rec.finish();
  const float* y = static_cast<const float*>(yb.mapped());
  return std::vector<float>(y, y + size_t{rows} * kN);
}

}  // namespace

TileProbe probe_tile_positions(Context& ctx, Kernels& kernels, MatrixMath math, uint32_t tile_rows) {
  Rng rng(54);
  std::vector<float> wf(kN * kK);
  for (float& v : wf) v = rng.uniform() * 2.0f - 1.0f;
  const size_t row_bytes = dtype_row_bytes(DType::Q8_0, kK);
  std::vector<uint8_t> wq(row_bytes * kN);
  for (uint32_t n = 0; n < kN; n++) quantize_row(DType::Q8_0, &wf[n * kK], &wq[n * row_bytes], kK);
  Buffer w(ctx, (wq.size() + 3) / 4 * 4, Buffer::Kind::Host);
  std::memcpy(w.mapped(), wq.data(), wq.size());
  MatmulKernel tiles;
  tiles.tile_rows = tile_rows;
  const Kernel& k = kernels.get(matmul_shader(tiles, math, DType::Q8_0), kMatmulBindings, matmul_constants(tiles, math));
  TileProbe probe;
  // Probe rows: ordinary values, and values past fp16's range (which the tiles scale down by a power of two).
  for (float magnitude : {1.0f, 1e6f}) {
    std::vector<float> row(kK);
    for (float& v : row) v = (rng.uniform() * 2.0f - 1.0f) * magnitude;
    const std::vector<float> alone = tile_product(ctx, k, math, tile_rows, w, row, 1);
    std::vector<float> deq(kK);
    for (uint32_t n = 0; n < kN; n++) {
      dequantize_row(DType::Q8_0, &wq[n * row_bytes], deq.data(), kK);
      double ref = 0, mag = 0;
      for (uint32_t i = 0; i < kK; i++) ref += double(row[i]) * deq[i], mag += std::fabs(double(row[i]) * deq[i]);
      if (!std::isfinite(alone[n]) || std::fabs(alone[n] - ref) > 4e-3 * mag + 1e-6) {
        probe.finite = false;
        probe.detail = "inputs of magnitude " + std::to_string(magnitude) + ": output " + std::to_string(n) + " is " +
                       std::to_string(alone[n]) + ", the reference " + std::to_string(ref);
        return probe;
      }
    }
    // The row at every position of a tile; the other rows huge, tiny, fp32-denormal or zero, by position.
    const float fill[] = {6e4f, 1e6f, 1e-6f, 1e-40f, 0.0f, -3e4f};
    for (uint32_t at = 0; at < tile_rows; at++) {
      std::vector<float> x(size_t{tile_rows} * kK);
      for (uint32_t r = 0; r < tile_rows; r++)
        for (uint32_t i = 0; i < kK; i++) x[r * kK + i] = r == at ? row[i] : fill[(r + i) % 6] * (i % 2 ? -1.0f : 1.0f);
      const std::vector<float> y = tile_product(ctx, k, math, tile_rows, w, x, tile_rows);
      if (std::memcmp(&y[at * kN], alone.data(), kN * 4) != 0) {
        probe.invariant = false;
        probe.detail = "a row of magnitude " + std::to_string(magnitude) + " at position " + std::to_string(at) + " of " + std::to_string(tile_rows) +
                       " differs from the same row alone";
        return probe;
      }
    }
  }
  return probe;
}

}  // namespace jf::vulkan
