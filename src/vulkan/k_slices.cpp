#include "vulkan/k_slices.h"

#include <algorithm>

namespace jf::vulkan {

namespace {
uint64_t region_bytes(uint64_t need, uint64_t had) {
  const uint64_t grown = std::max(need, had + had / 4);
  return (grown + 255) / 256 * 256;  // (every device's storage-buffer offset alignment)
}
}  // namespace

std::pair<View, View> KSliceScratch::take(Recorder& rec, const MatmulKernel& k, const MatmulGrid& g) {
  const uint64_t tiles = uint64_t{g.x} * g.z * (g.y / k.slices);
  const uint64_t part = tiles * k.slices * (k.outputs + 1) * k.rows * 4, done = tiles * 4;
  if (part > part_bytes_ || done > done_bytes_) {
    part_bytes_ = region_bytes(part, part_bytes_), done_bytes_ = region_bytes(done, done_bytes_);
    if (part_) retired_.push_back(std::move(part_)), retired_.push_back(std::move(done_));
    part_ = Buffer(ctx_, kRegions * part_bytes_, Buffer::Kind::Device);
    done_ = Buffer(ctx_, kRegions * done_bytes_, Buffer::Kind::Device);
    zero_ = true;
  }
  if (zero_ && rec.cmd()) {
    api().vkCmdFillBuffer(rec.cmd(), done_.handle(), 0, VK_WHOLE_SIZE, 0);
    rec.barrier();
    zero_ = false;
  }
  const uint64_t r = next_++ % kRegions;
  return {part_.view(r * part_bytes_, part_bytes_), done_.view(r * done_bytes_, done_bytes_)};
}

void dispatch_product(Recorder& rec, const Kernel& kernel, const MatmulKernel& run, MatrixMath math, const std::array<View, kMatmulBindings>& v,
                      const MatmulParams& p, const MatmulGrid& g, KSliceScratch& scratch) {
  if (matmul_bindings(run, math) == kSlicedMatmulBindings) {
    const auto [part, done] = scratch.take(rec, run, g);
    rec.dispatch(kernel, {v[0], v[1], v[2], v[3], v[4], v[5], v[6], part, done}, p, g.x, g.y, g.z);
  } else {
    rec.dispatch(kernel, {v[0], v[1], v[2], v[3], v[4], v[5], v[6]}, p, g.x, g.y, g.z);
  }
}

}  // namespace jf::vulkan
