// Forwards of one shape record the same commands: the same rows and logit rows, the same sequences' caches
// at the same rows, the same buffers (everything that varies, tokens, positions, slot lists and RoPE angles,
// is read from the host-visible arena at run time). So the command buffers of the last few shapes are kept
// and submitted again: a decode step, one shape token after token, records nothing, which takes the host's
// ~15 recorded dispatches a layer off a launch-bound forward's critical path. A recording is found by what it
// holds: the Recorder writes its key in key mode from the very kernels, grids, push constants and buffers the
// commands use (recorder.h), so no list of what a recording depends on is kept by hand.
#pragma once
#include <cstdint>
#include <vector>

#include "vulkan/context.h"

namespace jf::vulkan {

// What a recording holds: each command's kernel, grid and push constants, and the serials (Buffer::serial),
// offsets and ranges of every buffer it binds or copies, so a buffer freed and allocated again never matches a
// recording of the old one.
using ShapeKey = std::vector<uint64_t>;

class ReplayCache {
 public:
  explicit ReplayCache(Context& ctx, size_t capacity = 8) : ctx_(ctx), capacity_(capacity) {}
  // The command buffer recorded for `key`, or VK_NULL_HANDLE.
  VkCommandBuffer find(const ShapeKey& key);
  // A command buffer to record `key` into: a new one, or the least recently used (its recording dropped).
  // It replays only once keep() says the recording finished.
  VkCommandBuffer take();
  void keep(const ShapeKey& key, VkCommandBuffer cmd);
  uint64_t replays() const { return replays_; }

 private:
  struct Entry {
    ShapeKey key;  // empty: nothing recorded (or a recording that did not finish)
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    uint64_t last_used = 0;
  };
  Context& ctx_;
  size_t capacity_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0, replays_ = 0;
};

}  // namespace jf::vulkan
