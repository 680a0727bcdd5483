// Per-sequence key/value cache: a fixed-capacity array of slots per layer. Decoders append speculative
// tokens, then truncate to the accepted length or move an accepted candidate's entries into place.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <utility>
#include <type_traits>
#include <vector>

#include "base/aligned.h"
#include "base/error.h"
#include "kernels/dtype.h"
#include "kernels/ops.h"
#include "model/config.h"

namespace jf {

struct KvFollower;

// Keys and values kept in a device's memory (a GPU backend's), not in the KvCache's host arrays: the cache
// then keeps sizes and positions on the host and hands slot moves and copies to its device store.
class KvDeviceStore {
 public:
  virtual ~KvDeviceStore() = default;
  // Applies (from, to) slot moves in order, as KvCache::keep does on the host.
  virtual void move_slots(std::span<const std::pair<int32_t, int32_t>> moves) = 0;
  // Copies slots [0, n) of `other` (a store of the same device and shape) into this one.
  virtual void copy_prefix(const KvDeviceStore& other, int n) = 0;
};

class KvCache {
 public:
  // type: F32 (exact), or F16 (half the memory and the attention reads of long contexts; every key and value
  // rounded to fp16, so results differ slightly from F32, identically for every batch). Throws jf::Error if
  // capacity or type is invalid.
  KvCache(const ModelConfig& cfg, int capacity, DType type = DType::F32);
  // A cache whose keys and values live in `device` (made by a GPU backend's ForwardPass::make_cache).
  KvCache(const ModelConfig& cfg, int capacity, DType type, std::unique_ptr<KvDeviceStore> device);
  KvCache(KvCache&&) = default;
  KvCache& operator=(KvCache&&) = default;

  // The device store, or null for a cache in host memory (which keys(), values(), store_* and key() read).
  KvDeviceStore* device_store() const { return device_.get(); }

  int size() const { return size_; }  // number of filled slots (committed + appended speculative ones)
  int capacity() const { return capacity_; }
  DType type() const { return type_; }

  // Keys of one layer and kv head in the blocked layout of kernels/ops.h (key_offset), readable for whole
  // blocks of kKeyBlock slots, as stored: E = float in an F32 cache, uint16_t (fp16) in an F16 one.
  template <class E>
  const E* keys(int layer, int kv_head) const { return storage<E>(k32_, k16_) + key_base(layer, kv_head); }
  // Values of one layer and kv head: slot s's head_dim values at values(layer, kv_head) + s * head_dim, so
  // one head's values are contiguous (attention reads them slot after slot; with all heads side by side a
  // 128-wide head of a 32-head model sat 16 KB from the next slot's, a page per slot). E as for keys().
  template <class E>
  const E* values(int layer, int kv_head) const { return storage<E>(v32_, v16_) + value_base(layer, kv_head); }

  // Writes a slot's key (kv_dim values, heads side by side) into the blocked layout.
  void store_key(int layer, int slot, const float* key);
  // Element i (0 <= i < kv_dim) of a slot's key, as stored.
  float key(int layer, int slot, int i) const {
    return element(k32_, k16_, key_base(layer, i / head_dim_) + key_offset(slot, i % head_dim_, head_dim_));
  }
  // Writes a slot's value (kv_dim values, heads side by side) into the per-head layout.
  void store_value(int layer, int slot, const float* value);
  // Element i (0 <= i < kv_dim) of a slot's value, as stored.
  float value(int layer, int slot, int i) const {
    return element(v32_, v16_, value_base(layer, i / head_dim_) + static_cast<size_t>(slot) * head_dim_ + i % head_dim_);
  }

  // The RoPE position of the token in a slot (sliding windows compare positions, not slots). Set by the
  // forward for every new slot; moved by keep() and copied by copy_prefix() with the keys and values.
  void set_position(int slot, int32_t pos) { pos_[static_cast<size_t>(slot)] = pos; }
  int32_t position(int slot) const { return pos_[static_cast<size_t>(slot)]; }

  // Claims slots [size, size + n) for new tokens; throws jf::Error when the context would overflow.
  int append(int n);
  // Drops every slot at or after n.
  void truncate(int n);
  // Keeps `slots` (strictly increasing, all >= dst) as slots dst, dst+1, ..., and drops everything else
  // from dst on: the accepted path of a tree or one candidate of several moves into place.
  void keep(int dst, std::span<const int32_t> slots);
  // Copies the first n slots of `other` (same model) into this cache and sets size = n.
  void copy_prefix(const KvCache& other, int n);

  // A second cache that follows this one (KvFollower), or null. Set once, by the forward pass that made the
  // cache (model/guided_forward.h); the follower must have this cache's capacity.
  void set_follower(std::unique_ptr<KvCache> follower);
  KvFollower* follower() const { return follower_.get(); }

 private:
  size_t key_base(int layer, int kv_head) const {
    return (static_cast<size_t>(layer) * n_kv_heads_ + kv_head) * head_keys_;
  }
  size_t value_base(int layer, int kv_head) const {
    return (static_cast<size_t>(layer) * n_kv_heads_ + kv_head) * capacity_ * head_dim_;
  }
  // Calls f(keys, values) on the storage of this cache's type.
  template <class F>
  void with_storage(F&& f) {
    if (type_ == DType::F32)
      f(k32_, v32_);
    else
      f(k16_, v16_);
  }
  template <class E>
  const E* storage(const aligned_vector<float>& f32, const aligned_vector<uint16_t>& f16) const {
    JF_CHECK(type_ == (std::is_same_v<E, float> ? DType::F32 : DType::F16), "KV cache read as the wrong type");
    JF_CHECK(!device_, "a device's KV cache read as host memory");
    if constexpr (std::is_same_v<E, float>)
      return f32.data();
    else
      return f16.data();
  }
  float element(const aligned_vector<float>& f32, const aligned_vector<uint16_t>& f16, size_t at) const {
    JF_CHECK(!device_, "a device's KV cache read as host memory");
    return type_ == DType::F32 ? f32[at] : f16_to_f32(f16[at]);
  }
  void move_slot(int from, int to);
  int n_layers_, n_kv_heads_, head_dim_, capacity_;
  DType type_;
  size_t head_keys_;  // elements of one layer and head: capacity rounded up to whole blocks, times head_dim
  int size_ = 0;
  aligned_vector<float> k32_, v32_;      // an F32 cache
  aligned_vector<uint16_t> k16_, v16_;   // an F16 cache
  std::vector<int32_t> pos_;             // position of each slot
  std::unique_ptr<KvDeviceStore> device_;  // keys and values elsewhere (then the arrays above stay empty)
  std::vector<std::pair<int32_t, int32_t>> moves_;  // keep()'s moves for the device store
  std::unique_ptr<KvFollower> follower_;
};

// A cache that follows another from one of its slots on: the unconditional twin of a guided sequence
// (model/guided_forward.h), which holds its own prefix and then the same tokens. Once `from` >= 0, slot s >=
// from of the followed cache is slot s - shift here (its position, position - pos_shift), and the followed
// cache's truncate, keep and copy_prefix are applied here too, so a decoder's rollbacks reach the twin
// without the decoder knowing of it. Truncating to `from` or below empties the follower (from = -1).
struct KvFollower {
  std::unique_ptr<KvCache> cache;
  int from = -1;
  int shift = 0;
  int32_t pos_shift = 0;
  void reset() {
    cache->truncate(0);
    from = -1;
  }
};

}  // namespace jf
