#include "vulkan/kv_storage.h"

#include <cstring>
#include <vector>

#include "base/error.h"
#include "vulkan/recorder.h"

namespace jf::vulkan {

DeviceKvStore::DeviceKvStore(Context& ctx, Kernels& kernels, const ModelConfig& cfg, int capacity, DType type)
    : ctx_(ctx),
      kernels_(kernels),
      layers_(cfg.kv_layers()),
      kv_heads_(cfg.n_kv_heads),
      head_dim_(cfg.head_dim),
      capacity_(capacity),
      f16_(type == DType::F16) {
  const size_t element = f16_ ? 2 : 4, align = ctx.offset_alignment();
  part_bytes_ = (static_cast<size_t>(kv_heads_) * capacity * head_dim_ * element + align - 1) / align * align;
  if (part_bytes_ > ctx.info().max_binding_bytes)
    throw Error("Vulkan: a KV cache layer of " + std::to_string(capacity) + " slots is " + std::to_string(part_bytes_) +
                " bytes, more than the device binds at once (" + std::to_string(ctx.info().max_binding_bytes) + "); use a smaller --ctx");
  const size_t total = part_bytes_ * 2 * layers_;
  const uint64_t free = ctx.free_device_memory();
  if (total > free)
    throw Error("Vulkan: a KV cache of " + std::to_string(capacity) + " slots needs " + std::to_string(total) +
                " bytes of device memory; " + std::to_string(free) + " are free (use a smaller --ctx or --kv-type f16)");
  buffer_ = Buffer(ctx, total, Buffer::Kind::Device);
}

void DeviceKvStore::move_slots(std::span<const std::pair<int32_t, int32_t>> moves) {
  for (const auto& [from, to] : moves) pending_.insert(pending_.end(), {from, to});
}

bool DeviceKvStore::record_moves(Recorder& rec) {
  if (pending_.empty()) return false;
  ensure_size(ctx_, moves_, pending_.size() * sizeof(int32_t), Buffer::Kind::Host);
  std::copy(pending_.begin(), pending_.end(), static_cast<int32_t*>(moves_.mapped()));
  const Kernel& k = kernels_.get(f16_ ? "kv_move_f16" : "kv_move_f32", 2);
  struct {
    uint32_t columns, head_dim, capacity, n_moves, moves_off;
  } p{static_cast<uint32_t>(kv_heads_ * head_dim_), static_cast<uint32_t>(head_dim_), static_cast<uint32_t>(capacity_),
      static_cast<uint32_t>(pending_.size() / 2), 0};
  uint32_t gx, gy;
  Recorder::flat_grid(p.columns, &gx, &gy);
  for (int l = 0; l < layers_; l++) {  // (each layer's keys and values apart: no barrier between them)
    rec.skip_barriers(2);
    rec.dispatch(k, {keys(l), moves_.view()}, p, gx, gy);
    rec.dispatch(k, {values(l), moves_.view()}, p, gx, gy);
  }
  pending_.clear();
  return true;
}

void DeviceKvStore::copy_prefix(const KvDeviceStore& other, int n) {
  const auto* o = dynamic_cast<const DeviceKvStore*>(&other);
  JF_CHECK(o && o->context() == &ctx_ && o->layers_ == layers_ && o->kv_heads_ == kv_heads_ && o->head_dim_ == head_dim_ &&
               o->f16_ == f16_,
           "copy_prefix: KV caches of different devices or shapes");
  Recorder rec(ctx_);  // the moves either cache still has pending, then the copy
  rec.begin();
  const_cast<DeviceKvStore*>(o)->record_moves(rec);
  record_moves(rec);
  rec.barrier();
  if (n == 0) return rec.finish();
  const size_t element = f16_ ? 2 : 4, slot_bytes = head_dim_ * element;
  std::vector<VkBufferCopy> regions;
  for (int l = 0; l < layers_; l++)
    for (int part = 0; part < 2; part++)
      for (int h = 0; h < kv_heads_; h++) {
        const size_t head = static_cast<size_t>(h) * capacity_ * slot_bytes, other_head = static_cast<size_t>(h) * o->capacity_ * slot_bytes;
        const size_t base = layer_offset(l) + part * part_bytes_, other_base = o->layer_offset(l) + part * o->part_bytes_;
        regions.push_back(VkBufferCopy{other_base + other_head, base + head, n * slot_bytes});
      }
  rec.copy_regions(o->buffer_.view(), buffer_.view(), regions);
  rec.finish();
}

KvCache make_device_cache(Context& ctx, Kernels& kernels, const ModelConfig& cfg, int capacity, DType type) {
  if (capacity <= 0) throw Error("context size must be positive, got " + std::to_string(capacity));
  return KvCache(cfg, capacity, type, std::make_unique<DeviceKvStore>(ctx, kernels, cfg, capacity, type));
}

}  // namespace jf::vulkan
