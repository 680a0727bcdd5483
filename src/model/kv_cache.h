// Per-sequence key/value cache: a fixed-capacity array of slots per layer. Decoders append speculative
// tokens, then truncate to the accepted length or move an accepted candidate's entries into place.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "base/aligned.h"
#include "kernels/ops.h"
#include "model/config.h"

namespace jf {

class KvCache {
 public:
  KvCache(const ModelConfig& cfg, int capacity);  // throws jf::Error if capacity is invalid

  int size() const { return size_; }  // number of filled slots (committed + appended speculative ones)
  int capacity() const { return capacity_; }

  // Keys of one layer and kv head in the blocked layout of kernels/ops.h (key_offset), readable for whole
  // blocks of kKeyBlock slots.
  const float* keys(int layer, int kv_head) const { return k_.data() + key_base(layer, kv_head); }
  // Values of one layer and kv head: slot s's head_dim values at values(layer, kv_head) + s * head_dim, so
  // one head's values are contiguous (attention reads them slot after slot; with all heads side by side a
  // 128-wide head of a 32-head model sat 16 KB from the next slot's, a page per slot).
  const float* values(int layer, int kv_head) const { return v_.data() + value_base(layer, kv_head); }

  // Writes a slot's key (kv_dim values, heads side by side) into the blocked layout.
  void store_key(int layer, int slot, const float* key);
  // Element i (0 <= i < kv_dim) of a slot's key.
  float key(int layer, int slot, int i) const {
    return keys(layer, i / head_dim_)[key_offset(slot, i % head_dim_, head_dim_)];
  }
  // Writes a slot's value (kv_dim values, heads side by side) into the per-head layout.
  void store_value(int layer, int slot, const float* value);
  // Element i (0 <= i < kv_dim) of a slot's value.
  float value(int layer, int slot, int i) const {
    return values(layer, i / head_dim_)[static_cast<int64_t>(slot) * head_dim_ + i % head_dim_];
  }

  // Claims slots [size, size + n) for new tokens; throws jf::Error when the context would overflow.
  int append(int n);
  // Drops every slot at or after n.
  void truncate(int n);
  // Keeps `slots` (strictly increasing, all >= dst) as slots dst, dst+1, ..., and drops everything else
  // from dst on: the accepted path of a tree or one candidate of several moves into place.
  void keep(int dst, std::span<const int32_t> slots);
  // Copies the first n slots of `other` (same model) into this cache and sets size = n.
  void copy_prefix(const KvCache& other, int n);

 private:
  size_t key_base(int layer, int kv_head) const {
    return (static_cast<size_t>(layer) * n_kv_heads_ + kv_head) * head_keys_;
  }
  size_t value_base(int layer, int kv_head) const {
    return (static_cast<size_t>(layer) * n_kv_heads_ + kv_head) * capacity_ * head_dim_;
  }
  void move_slot(int from, int to);
  int n_layers_, n_kv_heads_, head_dim_, capacity_;
  size_t head_keys_;  // floats of one layer and head: capacity rounded up to whole blocks, times head_dim
  int size_ = 0;
  aligned_vector<float> k_, v_;
};

}  // namespace jf
