#include "model/kv_cache.h"

#include <cstring>
#include <string>

#include "base/error.h"

namespace jf {

KvCache::KvCache(const ModelConfig& cfg, int capacity)
    : n_layers_(cfg.n_layers), capacity_(capacity), kv_dim_(cfg.kv_dim()) {
  if (capacity <= 0) throw Error("context size must be positive, got " + std::to_string(capacity));
  data_.assign(static_cast<size_t>(n_layers_) * 2 * capacity_ * kv_dim_, 0.0f);
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
    if (s == to) continue;
    for (int l = 0; l < n_layers_; l++) {
      std::memcpy(k(l, to), k(l, s), sizeof(float) * kv_dim_);
      std::memcpy(v(l, to), v(l, s), sizeof(float) * kv_dim_);
    }
  }
  size_ = dst + static_cast<int>(slots.size());
}

void KvCache::copy_prefix(const KvCache& other, int n) {
  JF_CHECK(other.n_layers_ == n_layers_ && other.kv_dim_ == kv_dim_, "copy_prefix: different models");
  JF_CHECK(n >= 0 && n <= other.size_, "copy_prefix: beyond source size");
  if (n > capacity_) throw Error("context is full: cannot copy " + std::to_string(n) + " tokens");
  for (int l = 0; l < n_layers_; l++) {
    std::memcpy(k(l, 0), other.k(l, 0), sizeof(float) * kv_dim_ * n);
    std::memcpy(v(l, 0), other.v(l, 0), sizeof(float) * kv_dim_ * n);
  }
  size_ = n;
}

}  // namespace jf
