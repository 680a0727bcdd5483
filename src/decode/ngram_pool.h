// N-gram pool for lookahead decoding: continuations of N-1 tokens keyed by the token before them, at most
// `per_key` per key with least-recently-used eviction (inserting an existing n-gram refreshes it).
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace jf {

class NgramPool {
 public:
  NgramPool(int length, int per_key) : len_(length), per_key_(per_key) {}
  int length() const { return len_; }
  void insert(int32_t key, std::span<const int32_t> continuation);  // continuation.size() == length()
  // Up to `max` continuations for `key`, most recently used first.
  void lookup(int32_t key, int max, std::vector<std::span<const int32_t>>& out) const;
  // Adds every n-gram of `tokens` (key + length() following tokens) whose last token is at index >= from.
  void insert_all(std::span<const int32_t> tokens, size_t from = 0);
  size_t size() const { return count_; }

 private:
  int len_, per_key_;
  size_t count_ = 0;
  // Per key: entries oldest first, each `len_` tokens, stored flat.
  std::unordered_map<int32_t, std::vector<int32_t>> map_;
};

}  // namespace jf
