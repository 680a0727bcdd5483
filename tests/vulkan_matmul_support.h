// What the Vulkan matrix-kernel tests share: a device's context and kernels, random inputs, and one matrix
// product run on the device with any family member (or the tiles) on host-visible buffers.
#pragma once
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "kernels/dtype.h"
#include "vulkan/buffer.h"
#include "vulkan/k_slices.h"
#include "vulkan/kernels.h"
#include "vulkan/matmul_grid.h"
#include "vulkan/recorder.h"

namespace jf::test {

struct Fixture {
  explicit Fixture(int device) : ctx(device), kernels(ctx) {}
  vulkan::Context ctx;
  vulkan::Kernels kernels;
};

// Uniform in [-scale, scale).
inline std::vector<float> random_floats(size_t n, uint64_t seed, float scale = 1.0f) {
  Rng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = (r.uniform() * 2.0f - 1.0f) * scale;
  return v;
}

inline float round_f16(float v) { return f16_to_f32(f32_to_f16(v)); }

// y = x W^T on the device for the M rows of x starting at row `first` (a Host buffer, so no staging), with
// member `kernel` under `math` (its one-row twin for one row, as a forward runs it); with a gain, x's rows RMS-normalised by it first (the norm folded in).
inline std::vector<float> device_matmul(Fixture& f, DType t, const std::vector<uint8_t>& w, int64_t N, int64_t K, const std::vector<float>& x,
                                        uint32_t first, uint32_t M, const vulkan::MatmulKernel& kernel, vulkan::MatrixMath math,
                                        const std::vector<float>* gain = nullptr) {
  using vulkan::Buffer;
  Buffer wb(f.ctx, (w.size() + 3) / 4 * 4, Buffer::Kind::Host), xb(f.ctx, x.size() * 4, Buffer::Kind::Host), yb(f.ctx, M * N * 4, Buffer::Kind::Host);
  Buffer gb(f.ctx, gain ? gain->size() * 4 : 16, Buffer::Kind::Host);
  std::memcpy(wb.mapped(), w.data(), w.size());
  std::memcpy(xb.mapped(), x.data(), x.size() * 4);
  if (gain) std::memcpy(gb.mapped(), gain->data(), gain->size() * 4);
  const vulkan::MatmulKernel run = vulkan::dispatched_member(kernel, math, M);
  const vulkan::MatmulGrid g = vulkan::matmul_grid(run, math, uint32_t(N), M);
  vulkan::MatmulParams p = vulkan::MatmulParams::plain(M, uint32_t(N), uint32_t(K));
  p.x_off = uint32_t(first * K), p.norm = gain ? 1u : 0u;
  vulkan::Recorder rec(f.ctx);
  vulkan::KSliceScratch k_slices(f.ctx);
  rec.begin();
  const vulkan::Kernel& k = f.kernels.get(vulkan::matmul_shader(run, math, t), vulkan::matmul_bindings(run, math), vulkan::matmul_constants(run, math));
  vulkan::dispatch_product(rec, k, run, math, {xb.view(), yb.view(), wb.view(), gb.view(), xb.view(), yb.view(), yb.view()}, p, g, k_slices);
  rec.finish();
  const float* y = static_cast<const float*>(yb.mapped());
  return std::vector<float>(y, y + M * N);
}

}  // namespace jf::test
