// Whether the fp16 tiles (matmul_tiles.comp) give a row the same bits at every position of a tile, beside rows
// of huge, tiny, fp32-denormal and zero values: the assumption batch invariance rests on when the products run
// on a GPU's matrix units (whose internal order and rounding jf does not control). Checked on first use of the
// matrix units and by `jf devices`; a device that fails it does not get its matrix units used.
#pragma once
#include <string>

#include "vulkan/kernels.h"
#include "vulkan/matmul_grid.h"

namespace jf::vulkan {

struct TileProbe {
  bool invariant = true;  // the probe row's bits at every position equal its bits alone
  bool finite = true;     // a row of inputs past fp16's range still gives finite sums, near the fp64 reference
  std::string detail;     // what differed, where (empty when both hold)
  bool ok() const { return invariant && finite; }
};

// Runs the probe with `math` (Tiles or MatrixUnits) on a 32 x 512 Q8_0 matrix, the row at every position of
// a workgroup's tile_rows rows.
TileProbe probe_tile_positions(Context& ctx, Kernels& kernels, MatrixMath math, uint32_t tile_rows = kTileRows);

}  // namespace jf::vulkan
