// A KV cache's keys and values in device memory: one buffer, per layer the keys then the values, each
// [kv_head][slot][head_dim] in fp32 or fp16. The host-side KvCache keeps sizes and positions.
#pragma once
#include <memory>
#include <vector>

#include "model/kv_cache.h"
#include "vulkan/buffer.h"
#include "vulkan/kernels.h"
#include "vulkan/recorder.h"

namespace jf::vulkan {

class DeviceKvStore : public KvDeviceStore {
 public:
  DeviceKvStore(Context& ctx, Kernels& kernels, const ModelConfig& cfg, int capacity, DType type);
  // Keeps the moves for the next submission that uses this store (record_moves): no host call waits for the
  // device, and the moves of a decode step run in its next forward's submission.
  void move_slots(std::span<const std::pair<int32_t, int32_t>> moves) override;
  void copy_prefix(const KvDeviceStore& other, int n) override;
  // Records the kept moves into `rec` (independent dispatches: the caller's next barrier orders them before
  // what reads the cache) and forgets them; false when there were none.
  bool record_moves(Recorder& rec);
  bool has_moves() const { return !pending_.empty(); }

  View keys(int layer) const { return buffer_.view(layer_offset(layer), part_bytes_); }
  View values(int layer) const { return buffer_.view(layer_offset(layer) + part_bytes_, part_bytes_); }
  const Context* context() const { return &ctx_; }
  bool f16() const { return f16_; }
  int capacity() const { return capacity_; }

 private:
  size_t layer_offset(int layer) const { return static_cast<size_t>(layer) * 2 * part_bytes_; }
  Context& ctx_;
  Kernels& kernels_;
  int layers_, kv_heads_, head_dim_, capacity_;
  bool f16_;
  size_t part_bytes_;  // one layer's keys (or values), padded to the binding alignment
  Buffer buffer_;
  std::vector<int32_t> pending_;  // moves kept for the next submission, (from, to) pairs in order
  Buffer moves_;                   // their copy the device reads
};

// A KvCache whose keys and values live on the device.
KvCache make_device_cache(Context& ctx, Kernels& kernels, const ModelConfig& cfg, int capacity, DType type);

}  // namespace jf::vulkan
