// The scratch of the K-sliced matrix members (matmul_family.h's `slices`, shaders/k_slices.glsl): a product's
// partial sums, one a slice for each (tile of outputs and rows, output, row), and a counter a tile that the
// last of its slices to finish reads and sets back to zero. Three regions, taken in turn: the up to three
// products recorded without a barrier between them (q, k and v apart; gate and up) never share one.
#pragma once
#include <array>
#include <utility>
#include <vector>

#include "vulkan/buffer.h"
#include "vulkan/matmul_grid.h"
#include "vulkan/recorder.h"

namespace jf::vulkan {

class KSliceScratch {
 public:
  explicit KSliceScratch(Context& ctx) : ctx_(ctx) {}
  // The views (partial sums, counters) a dispatch of the K-sliced member k over grid g binds, grown if need be.
  // Counters start at zero: a grown buffer's are zeroed in `rec`'s recording first (in key mode, in the next
  // recording, which is the one the key is for).
  std::pair<View, View> take(Recorder& rec, const MatmulKernel& k, const MatmulGrid& g);
  // From the first region again: at the start of each recording, so a recording and its key take the same.
  void restart() { next_ = 0; }
  // Frees the buffers a growth replaced, once the recordings that bound them have completed.
  void release_retired() { retired_.clear(); }

 private:
  static constexpr uint64_t kRegions = 3;
  Context& ctx_;
  Buffer part_, done_;
  std::vector<Buffer> retired_;
  uint64_t part_bytes_ = 0, done_bytes_ = 0;  // a region's
  bool zero_ = false;
  uint64_t next_ = 0;
};

// Records one product of member `run` under `math` (its pipeline `kernel`) over grid g: the product's bindings
// `views`, and for a K-sliced member the scratch it takes from `scratch`.
void dispatch_product(Recorder& rec, const Kernel& kernel, const MatmulKernel& run, MatrixMath math, const std::array<View, kMatmulBindings>& views,
                      const MatmulParams& p, const MatmulGrid& g, KSliceScratch& scratch);

}  // namespace jf::vulkan
