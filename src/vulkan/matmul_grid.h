// Which matrix kernel a weight matrix uses and the grid it runs on: decided by the device and K, never by the
// row count, so each output sees the same operations in a forward of any size (batch invariance).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "vulkan/context.h"

namespace jf::vulkan {

// How a forward's matrix products are computed, chosen once per forward pass, never by the row count:
// - Fma: fp32 FMAs, matmul_serial or matmul_split by K (below);
// - Tiles: matmul_tiles with fp16 inputs and fp32 sums, its block products as FMAs (any device; the stand-in
//   that tests the tiles where there are no matrix units);
// - MatrixUnits: matmul_tiles on the device's matrix units (NV cooperative matrices, DeviceInfo::matrix_units).
// Tiles round weights and inputs to fp16, so logits move by ~1e-3 against Fma; each choice is batch-invariant.
enum class MatrixMath { Fma, Tiles, MatrixUnits };

// "fma", "tiles" or "matrix-units"; throws jf::Error naming the choices for anything else.
MatrixMath parse_matrix_math(const std::string& name);
const char* matrix_math_name(MatrixMath m);

struct MatmulGrid {
  bool serial = false;  // matmul_serial (a thread per output) rather than matmul_split (a workgroup per 4 outputs)
  bool tiles = false;   // matmul_tiles (a workgroup per 16 outputs x 16 rows)
  uint32_t x = 1, y = 1, z = 1;
};

inline constexpr uint32_t kSplitOutputs = 4;   // NO in matmul_split.comp
inline constexpr uint32_t kMatmulRows = 8;     // R in both shaders
inline constexpr uint32_t kSerialOutputs = 64; // WG in matmul_serial.comp
inline constexpr uint32_t kTileOutputs = 16;   // NT in matmul_tiles.comp
inline constexpr uint32_t kTileRows = 16;      // MT in matmul_tiles.comp

// The smallest K that matmul_split takes on `d`. A GPU reads a weight row coalesced only when a workgroup
// shares it, so from one step of 64 threads x 4 inputs. A software device (lavapipe) runs a workgroup's threads
// as SIMD lanes of one core, where a thread per output is 3x faster and the split's reduction only costs, so
// there the split starts where a thread per output would have too long a row.
inline uint32_t default_split_min_k(const DeviceInfo& d) { return d.software ? 2048 : 256; }

// The grid for N outputs, K inputs and M rows: groups of outputs along x (wrapping to z past 65535), row tiles
// along y.
inline MatmulGrid matmul_grid(uint32_t N, uint32_t K, uint32_t M, uint32_t split_min_k, MatrixMath math = MatrixMath::Fma) {
  MatmulGrid g;
  g.tiles = math != MatrixMath::Fma;
  g.serial = !g.tiles && K < split_min_k;
  const uint32_t per_group = g.tiles ? kTileOutputs : g.serial ? kSerialOutputs : kSplitOutputs;
  const uint32_t rows = g.tiles ? kTileRows : kMatmulRows;
  const uint32_t groups = (N + per_group - 1) / per_group;
  g.x = std::min<uint32_t>(groups, 65535);
  g.z = (groups + g.x - 1) / g.x;
  g.y = (M + rows - 1) / rows;
  return g;
}

// The kernel name prefix of a grid ("matmul_serial_", ...): the weight type's name follows.
inline const char* matmul_kernel_prefix(const MatmulGrid& g, MatrixMath math) {
  if (g.tiles) return math == MatrixMath::MatrixUnits ? "matmul_units_" : "matmul_tiles_";
  return g.serial ? "matmul_serial_" : "matmul_split_";
}

}  // namespace jf::vulkan
