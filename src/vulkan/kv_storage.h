// A KV cache's keys and values in device memory: one buffer, per layer the keys then the values, each
// [kv_head][slot][head_dim] in fp32 or fp16. The host-side KvCache keeps sizes and positions.
#pragma once
#include <memory>

#include "model/kv_cache.h"
#include "vulkan/buffer.h"
#include "vulkan/kernels.h"

namespace jf::vulkan {

class DeviceKvStore : public KvDeviceStore {
 public:
  DeviceKvStore(Context& ctx, Kernels& kernels, const ModelConfig& cfg, int capacity, DType type);
  void move_slots(std::span<const std::pair<int32_t, int32_t>> moves) override;
  void copy_prefix(const KvDeviceStore& other, int n) override;

  View keys(int layer) const { return buffer_.view(layer_offset(layer), part_bytes_); }
  View values(int layer) const { return buffer_.view(layer_offset(layer) + part_bytes_, part_bytes_); }
  const Context* context() const { return &ctx_; }
  bool f16() const { return f16_; }
  int capacity() const { return capacity_; }
  uint64_t serial() const { return buffer_.serial(); }

 private:
  size_t layer_offset(int layer) const { return static_cast<size_t>(layer) * 2 * part_bytes_; }
  Context& ctx_;
  Kernels& kernels_;
  int layers_, kv_heads_, head_dim_, capacity_;
  bool f16_;
  size_t part_bytes_;  // one layer's keys (or values), padded to the binding alignment
  Buffer buffer_;
  Buffer moves_;       // the (from, to) list of the last move_slots
};

// A KvCache whose keys and values live on the device.
KvCache make_device_cache(Context& ctx, Kernels& kernels, const ModelConfig& cfg, int capacity, DType type);

}  // namespace jf::vulkan
