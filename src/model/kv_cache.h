// Per-sequence key/value cache: a fixed-capacity array of slots per layer. Decoders append speculative
// tokens, then truncate to the accepted length or move an accepted candidate's entries into place.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/config.h"

namespace jf {

class KvCache {
 public:
  KvCache(const ModelConfig& cfg, int capacity);  // throws jf::Error if capacity is invalid

  int size() const { return size_; }  // number of filled slots (committed + appended speculative ones)
  int capacity() const { return capacity_; }
  int64_t row_stride() const { return kv_dim_; }  // floats per slot

  float* k(int layer, int slot) { return data_.data() + offset(layer, 0, slot); }
  float* v(int layer, int slot) { return data_.data() + offset(layer, 1, slot); }
  const float* k(int layer, int slot) const { return data_.data() + offset(layer, 0, slot); }
  const float* v(int layer, int slot) const { return data_.data() + offset(layer, 1, slot); }

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
  size_t offset(int layer, int kv, int slot) const {
    return ((static_cast<size_t>(layer) * 2 + kv) * capacity_ + slot) * kv_dim_;
  }
  int n_layers_, capacity_;
  int64_t kv_dim_;
  int size_ = 0;
  std::vector<float> data_;
};

}  // namespace jf
