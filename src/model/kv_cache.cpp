#include "model/kv_cache.h"

#include <cstring>
#include <string>

#include "base/error.h"

namespace jf {

KvCache::KvCache(const ModelConfig& cfg, int capacity)
    : n_layers_(cfg.n_layers),
      n_kv_heads_(cfg.n_kv_heads),
      head_dim_(cfg.head_dim),
      capacity_(capacity) {
  if (capacity <= 0) throw Error("context size must be positive, got " + std::to_string(capacity));
  const size_t blocks = (static_cast<size_t>(capacity) + kKeyBlock - 1) / kKeyBlock;
  head_keys_ = blocks * kKeyBlock * static_cast<size_t>(head_dim_);
  k_.assign(static_cast<size_t>(n_layers_) * n_kv_heads_ * head_keys_, 0.0f);
  v_.assign(static_cast<size_t>(n_layers_) * n_kv_heads_ * capacity_ * head_dim_, 0.0f);
}

void KvCache::store_key(int layer, int slot, const float* key) {
  for (int h = 0; h < n_kv_heads_; h++) {
    float* dst = k_.data() + key_base(layer, h);
    for (int i = 0; i < head_dim_; i++) dst[key_offset(slot, i, head_dim_)] = key[h * head_dim_ + i];
  }
}

void KvCache::store_value(int layer, int slot, const float* value) {
  for (int h = 0; h < n_kv_heads_; h++)
    std::memcpy(v_.data() + value_base(layer, h) + static_cast<size_t>(slot) * head_dim_, value + h * head_dim_,
                sizeof(float) * head_dim_);
}

void KvCache::move_slot(int from, int to) {
  for (int l = 0; l < n_layers_; l++)
    for (int h = 0; h < n_kv_heads_; h++) {
      float* keys = k_.data() + key_base(l, h);
      for (int i = 0; i < head_dim_; i++) keys[key_offset(to, i, head_dim_)] = keys[key_offset(from, i, head_dim_)];
      float* values = v_.data() + value_base(l, h);
      std::memcpy(values + static_cast<size_t>(to) * head_dim_, values + static_cast<size_t>(from) * head_dim_,
                  sizeof(float) * head_dim_);
    }
}

int KvCache::append(int n) {
  JF_CHECK(n >= 0, "negative append");
  if (size_ + n > capacity_)
    throw Error("context is full: " + std::to_string(size_) + " + " + std::to_string(n) + " tokens exceed the context size " +
                std::to_string(capacity_));
  int first = size_;
  size_ += n;
  return first;
}

void KvCache::truncate(int n) {
  JF_CHECK(n >= 0 && n <= size_, "truncate beyond size");
  size_ = n;
}

void KvCache::keep(int dst, std::span<const int32_t> slots) {
  JF_CHECK(dst >= 0 && dst <= size_, "keep: bad destination");
  int prev = dst - 1;
  for (size_t i = 0; i < slots.size(); i++) {
    const int s = slots[i];
    JF_CHECK(s > prev && s < size_ && s >= dst + static_cast<int>(i), "keep: slots must increase and lie after dst");
    prev = s;
    const int to = dst + static_cast<int>(i);
    if (s != to) move_slot(s, to);
  }
  size_ = dst + static_cast<int>(slots.size());
}

void KvCache::copy_prefix(const KvCache& other, int n) {
  JF_CHECK(other.n_layers_ == n_layers_ && other.n_kv_heads_ == n_kv_heads_ && other.head_dim_ == head_dim_,
           "copy_prefix: different models");
  JF_CHECK(n >= 0 && n <= other.size_, "copy_prefix: beyond source size");
  if (n > capacity_) throw Error("context is full: cannot copy " + std::to_string(n) + " tokens");
  // Whole key blocks: lanes past n are copied too, and are overwritten before they are ever read.
  const size_t key_floats = (static_cast<size_t>(n) + kKeyBlock - 1) / kKeyBlock * kKeyBlock * head_dim_;
  for (int l = 0; l < n_layers_; l++)
    for (int h = 0; h < n_kv_heads_; h++) {
      std::memcpy(k_.data() + key_base(l, h), other.k_.data() + other.key_base(l, h), sizeof(float) * key_floats);
      std::memcpy(v_.data() + value_base(l, h), other.v_.data() + other.value_base(l, h),
                  sizeof(float) * head_dim_ * n);
    }
  size_ = n;
}

}  // namespace jf
