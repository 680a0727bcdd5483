#include "model/kv_cache.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "base/error.h"

namespace jf {

namespace {
// An fp32 value as a cache element: itself, or rounded to fp16 (to nearest, ties to even).
template <class T>
T stored(float x) {
  if constexpr (std::is_same_v<T, float>)
    return x;
  else
    return f32_to_f16(x);
}
}  // namespace

KvCache::KvCache(const ModelConfig& cfg, int capacity, DType type, std::unique_ptr<KvDeviceStore> device)
    : n_layers_(cfg.kv_layers()),
      n_kv_heads_(cfg.n_kv_heads),
      head_dim_(cfg.head_dim),
      capacity_(capacity),
      type_(type),
      device_(std::move(device)) {
  if (capacity <= 0) throw Error("context size must be positive, got " + std::to_string(capacity));
  if (type != DType::F32 && type != DType::F16)
    throw Error("KV cache type must be f32 or f16, got " + dtype_name(type));
  JF_CHECK(device_, "a device KV cache without its store");
  pos_.assign(static_cast<size_t>(capacity), 0);
}

KvCache::KvCache(const ModelConfig& cfg, int capacity, DType type)
    : n_layers_(cfg.kv_layers()),
      n_kv_heads_(cfg.n_kv_heads),
      head_dim_(cfg.head_dim),
      capacity_(capacity),
      type_(type) {
  if (capacity <= 0) throw Error("context size must be positive, got " + std::to_string(capacity));
  if (type != DType::F32 && type != DType::F16)
    throw Error("KV cache type must be f32 or f16, got " + dtype_name(type));
  const size_t blocks = (static_cast<size_t>(capacity) + kKeyBlock - 1) / kKeyBlock;
  head_keys_ = blocks * kKeyBlock * static_cast<size_t>(head_dim_);
  const size_t keys = static_cast<size_t>(n_layers_) * n_kv_heads_ * head_keys_;
  const size_t values = static_cast<size_t>(n_layers_) * n_kv_heads_ * capacity_ * head_dim_;
  with_storage([&](auto& k, auto& v) {
    k.assign(keys, 0);
    v.assign(values, 0);
  });
  pos_.assign(static_cast<size_t>(capacity), 0);
}

void KvCache::store_key(int layer, int slot, const float* key) {
  JF_CHECK(!device_, "a device's KV cache written as host memory");
  with_storage([&](auto& k, auto&) {
    using T = typename std::decay_t<decltype(k)>::value_type;
    for (int h = 0; h < n_kv_heads_; h++) {
      T* dst = k.data() + key_base(layer, h);
      for (int i = 0; i < head_dim_; i++) dst[key_offset(slot, i, head_dim_)] = stored<T>(key[h * head_dim_ + i]);
    }
  });
}

void KvCache::store_value(int layer, int slot, const float* value) {
  JF_CHECK(!device_, "a device's KV cache written as host memory");
  with_storage([&](auto&, auto& v) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    for (int h = 0; h < n_kv_heads_; h++) {
      T* dst = v.data() + value_base(layer, h) + static_cast<size_t>(slot) * head_dim_;
      for (int i = 0; i < head_dim_; i++) dst[i] = stored<T>(value[h * head_dim_ + i]);
    }
  });
}

void KvCache::move_slot(int from, int to) {
  pos_[static_cast<size_t>(to)] = pos_[static_cast<size_t>(from)];
  with_storage([&](auto& k, auto& v) {
    for (int l = 0; l < n_layers_; l++)
      for (int h = 0; h < n_kv_heads_; h++) {
        auto* keys = k.data() + key_base(l, h);
        for (int i = 0; i < head_dim_; i++) keys[key_offset(to, i, head_dim_)] = keys[key_offset(from, i, head_dim_)];
        auto* values = v.data() + value_base(l, h);
        std::copy_n(values + static_cast<size_t>(from) * head_dim_, head_dim_, values + static_cast<size_t>(to) * head_dim_);
      }
  });
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
  if (follower_ && follower_->from >= 0) {
    if (n > follower_->from)
      follower_->cache->truncate(n - follower_->shift);
    else
      follower_->reset();
  }
}

void KvCache::set_follower(std::unique_ptr<KvCache> follower) {
  JF_CHECK(!follower_, "a KV cache's follower is set once");
  JF_CHECK(follower && follower->capacity_ == capacity_ && follower->size_ == 0, "a KV cache's follower must be empty, of its capacity");
  follower_ = std::make_unique<KvFollower>();
  follower_->cache = std::move(follower);
}

void KvCache::keep(int dst, std::span<const int32_t> slots) {
  JF_CHECK(dst >= 0 && dst <= size_, "keep: bad destination");
  if (follower_ && follower_->from >= 0)  // slots up to the follower's first stay where they are (or go)
    for (size_t i = 0; i < slots.size() && dst + static_cast<int>(i) <= follower_->from; i++)
      if (slots[i] != dst + static_cast<int>(i))
        throw Error("a guided sequence's slots up to its guidance anchor were moved (keep at slot " + std::to_string(dst) + ")");
  int prev = dst - 1;
  moves_.clear();
  for (size_t i = 0; i < slots.size(); i++) {
    const int s = slots[i];
    JF_CHECK(s > prev && s < size_ && s >= dst + static_cast<int>(i), "keep: slots must increase and lie after dst");
    prev = s;
    const int to = dst + static_cast<int>(i);
    if (s == to) continue;
    if (device_) {
      pos_[static_cast<size_t>(to)] = pos_[static_cast<size_t>(s)];
      moves_.emplace_back(s, to);
    } else {
      move_slot(s, to);
    }
  }
  if (device_ && !moves_.empty()) device_->move_slots(moves_);
  size_ = dst + static_cast<int>(slots.size());
  if (follower_ && follower_->from >= 0) {
    const int from = follower_->from;
    if (size_ <= from) {
      follower_->reset();
    } else {
      const size_t skip = dst < from ? static_cast<size_t>(from - dst) : 0;  // (kept in place, before the anchor)
      std::vector<int32_t> shifted(slots.begin() + static_cast<std::ptrdiff_t>(skip), slots.end());
      for (int32_t& s : shifted) s -= follower_->shift;
      follower_->cache->keep(std::max(dst, from) - follower_->shift, shifted);
    }
  }
}

void KvCache::copy_prefix(const KvCache& other, int n) {
  JF_CHECK(other.n_layers_ == n_layers_ && other.n_kv_heads_ == n_kv_heads_ && other.head_dim_ == head_dim_ &&
               other.type_ == type_,
           "copy_prefix: different models or cache types");
  JF_CHECK(n >= 0 && n <= other.size_, "copy_prefix: beyond source size");
  if (n > capacity_) throw Error("context is full: cannot copy " + std::to_string(n) + " tokens");
  JF_CHECK(!device_ == !other.device_, "copy_prefix: between a device's cache and a host one");
  if (follower_) {  // the twin takes the source twin's copy of those slots, where it has one
    const KvFollower* of = other.follower_.get();
    if (of && of->from >= 0 && n > of->from) {
      follower_->cache->copy_prefix(*of->cache, n - of->shift);
      follower_->from = of->from;
      follower_->shift = of->shift;
      follower_->pos_shift = of->pos_shift;
    } else {
      follower_->reset();
    }
  }
  if (device_) {
    device_->copy_prefix(*other.device_, n);
    std::copy_n(other.pos_.begin(), n, pos_.begin());
    size_ = n;
    return;
  }
  // Whole key blocks: lanes past n are copied too, and are overwritten before they are ever read.
  const size_t key_elements = (static_cast<size_t>(n) + kKeyBlock - 1) / kKeyBlock * kKeyBlock * head_dim_;
  const size_t value_elements = static_cast<size_t>(n) * head_dim_;
  auto copy = [&](auto& k, auto& v, const auto& ok, const auto& ov) {
    for (int l = 0; l < n_layers_; l++)
      for (int h = 0; h < n_kv_heads_; h++) {
        std::copy_n(ok.data() + other.key_base(l, h), key_elements, k.data() + key_base(l, h));
        std::copy_n(ov.data() + other.value_base(l, h), value_elements, v.data() + value_base(l, h));
      }
  };
  if (type_ == DType::F32)
    copy(k32_, v32_, other.k32_, other.v32_);
  else
    copy(k16_, v16_, other.k16_, other.v16_);
  std::copy_n(other.pos_.begin(), n, pos_.begin());
  size_ = n;
}

}  // namespace jf
