// The buffers behind VulkanForward, shared by its files (vulkan_forward.cpp, attention_record.cpp,
// draft_chain.cpp, ...), and small helpers they share.
#pragma once
#include "base/error.h"
#include "vulkan/kv_storage.h"
#include "vulkan/vulkan_forward.h"

namespace jf::vulkan {

inline uint32_t u32(int64_t v) { return static_cast<uint32_t>(v); }

// The cache's device store, which must be this device's.
inline const DeviceKvStore& device_store(const KvCache& cache, const Context* ctx) {
  const auto* s = dynamic_cast<const DeviceKvStore*>(cache.device_store());
  if (!s || s->context() != ctx)
    throw Error("forward: a KV cache that was not made by this device's forward pass (use ForwardPass::make_cache)");
  return *s;
}

// Device buffers of one forward's activations (rows x width, grown for the largest forward seen) and the
// host-visible ones it writes for the device (the arena) and reads back (logits).
struct VulkanForward::Activations {
  Buffer x, xb, q, k, v, att, hg, hu, head, greedy;  // device
  Buffer logits_dev, draft_logits_dev;                    // device: the heads' products, copied out to ...
  Buffer logits, draft_logits, tokens;                    // host-visible (tokens: a draft chain's)
  Buffer picks, draft_picks;                              // host-visible: each row's greedy token (argmax)
};

// The host-visible arena of one pass: its tokens, row table, slot list, logit rows and RoPE angles, at these
// element offsets (tokens at 0); `extra`: words a pass of its own uses (a draft chain's angle table).
struct VulkanForward::Inputs {
  Buffer arena;
  // Its device-local copy, made at the start of each submission (stage_inputs): the shaders read that, since
  // a GPU reads host memory over the bus (every attention workgroup reads its row's slot list).
  Buffer device;
  uint32_t info = 0, slots = 0, logit = 0, cos = 0, sin = 0, lcos = 0, lsin = 0, extra = 0;
};

}  // namespace jf::vulkan
