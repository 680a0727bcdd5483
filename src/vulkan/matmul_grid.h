// Which matrix kernel a weight matrix uses and the grid it runs on: decided by the device and K, never by the
// row count, so each output sees the same operations in a forward of any size (batch invariance).
#pragma once
#include <algorithm>
#include <cstdint>

#include "vulkan/context.h"

namespace jf::vulkan {

struct MatmulGrid {
  bool serial = false;  // matmul_serial (a thread per output) rather than matmul_split (a workgroup per 4 outputs)
  uint32_t x = 1, y = 1, z = 1;
};

inline constexpr uint32_t kSplitOutputs = 4;   // NO in matmul_split.comp
inline constexpr uint32_t kMatmulRows = 8;     // R in both shaders
inline constexpr uint32_t kSerialOutputs = 64; // WG in matmul_serial.comp

// The smallest K that matmul_split takes on `d`. A GPU reads a weight row coalesced only when a workgroup
// shares it, so from one step of 64 threads x 4 inputs. A software device (lavapipe) runs a workgroup's threads
// as SIMD lanes of one core, where a thread per output is 3x faster and the split's reduction only costs, so
// there the split starts where a thread per output would have too long a row.
inline uint32_t default_split_min_k(const DeviceInfo& d) { return d.software ? 2048 : 256; }

// The grid for N outputs, K inputs and M rows: groups of outputs along x (wrapping to z past 65535), row tiles
// along y.
inline MatmulGrid matmul_grid(uint32_t N, uint32_t K, uint32_t M, uint32_t split_min_k) {
  MatmulGrid g;
  g.serial = K < split_min_k;
  const uint32_t per_group = g.serial ? kSerialOutputs : kSplitOutputs;
  const uint32_t groups = (N + per_group - 1) / per_group;
  g.x = std::min<uint32_t>(groups, 65535);
  g.z = (groups + g.x - 1) / g.x;
  g.y = (M + kMatmulRows - 1) / kMatmulRows;
  return g;
}

}  // namespace jf::vulkan
