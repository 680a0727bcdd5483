// Records a forward's dispatches into the context's command buffer: buffers bound by push descriptors,
// parameters as push constants, and a barrier after each dispatch so the next one sees its writes (except
// between dispatches the caller declares independent: skip_barriers). In key mode it records nothing and
// writes down everything a recording would hold instead (kernels, grids, push constants, every buffer bound
// or copied, by serial): the key a kept recording is found by (replay_cache.h).
#pragma once
#include <initializer_list>
#include <vector>

#include "vulkan/buffer.h"
#include "vulkan/kernels.h"
#include "vulkan/profiler.h"
#include "vulkan/replay_cache.h"

namespace jf::vulkan {

class Recorder {
 public:
  explicit Recorder(Context& ctx) : ctx_(ctx) {}
  void begin() { cmd_ = ctx_.begin(); }
  // Key mode: what the next recording calls would record goes into `key` (cleared first) until end_key().
  void begin_key(ShapeKey* key) {
    key_ = key;
    key_->clear();
  }
  void end_key() { key_ = nullptr, skip_ = 0; }
  bool keying() const { return key_ != nullptr; }
  // Records into `kept`, a command buffer that will be submitted again (replay_cache.h).
  void begin(VkCommandBuffer kept) {
    ctx_.begin(kept, false);
    cmd_ = kept;
  }
  // Runs `k` over groups (x, y, z) with `views` at bindings 0, 1, ... and `params` as push constants.
  template <class P>
  void dispatch(const Kernel& k, std::initializer_list<View> views, const P& params, uint32_t x, uint32_t y = 1, uint32_t z = 1) {
    static_assert(sizeof(P) <= 128, "push constants are limited to 128 bytes");
    dispatch_raw(k, views, &params, sizeof(P), x, y, z);
  }
  // The next `n` dispatches are independent of each other (they read what was written before them and write
  // apart): no barrier after them, only after the one that follows, which makes all their writes visible.
  void skip_barriers(int n) { skip_ = n; }
  // A barrier now: every dispatch and copy before it is visible to every dispatch and copy after it.
  void barrier();
  // Timestamps after every dispatch and copy (JF_VULKAN_PROFILE); null: none.
  void set_profiler(Profiler* p) { profiler_ = p; }
  // Copies bytes between buffers (after the dispatches before it), then a barrier so the dispatches after it
  // see them; copy_regions: several ranges of one buffer into another, in one command.
  void copy(View src, View dst);
  void copy_regions(const View& src, const View& dst, const std::vector<VkBufferCopy>& regions);
  // A 1D grid of WG-wide groups covering n threads (wrapping to y past 65535 groups; see elementwise.glsl).
  static void flat_grid(uint64_t n, uint32_t* x, uint32_t* y);
  // Dispatches and barriers recorded (not in key mode) since the recorder was made: what a layer costs in
  // launches and synchronisation (VulkanForward::layer_counts).
  uint64_t dispatches() const { return dispatches_; }
  uint64_t barriers() const { return barriers_; }
  // The command buffer being recorded; null in key mode.
  VkCommandBuffer cmd() const { return cmd_; }
  // Makes the device's writes visible to the host and ends the recording: the caller submits it.
  VkCommandBuffer end();
  // end(), then submits the recording alone and waits.
  void finish();

 private:
  void dispatch_raw(const Kernel& k, std::initializer_list<View> views, const void* params, size_t bytes, uint32_t x, uint32_t y, uint32_t z);
  Context& ctx_;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  ShapeKey* key_ = nullptr;
  uint64_t dispatches_ = 0, barriers_ = 0;
  int skip_ = 0;
  Profiler* profiler_ = nullptr;
};

inline constexpr uint32_t kWorkgroup = 64;  // WG in shaders/common.glsl
inline constexpr size_t kMaxBindings = 10;  // buffers one kernel binds, at most (push descriptors: 32 on any device)

}  // namespace jf::vulkan
