#include "decode/ngram_pool.h"

#include <algorithm>

#include "base/error.h"

namespace jf {

void NgramPool::insert(int32_t key, std::span<const int32_t> cont) {
  JF_CHECK(static_cast<int>(cont.size()) == len_, "n-gram of the wrong length");
  if (per_key_ <= 0) return;
  std::vector<int32_t>& v = map_[key];
  const size_t n = v.size() / len_;
  for (size_t i = 0; i < n; i++) {
    if (std::equal(cont.begin(), cont.end(), v.begin() + i * len_)) {  // refresh: move to the newest end
      std::rotate(v.begin() + i * len_, v.begin() + (i + 1) * len_, v.end());
      return;
    }
  }
  if (static_cast<int>(n) >= per_key_) {
    v.erase(v.begin(), v.begin() + len_);  // evict the least recently used
    count_--;
  }
  v.insert(v.end(), cont.begin(), cont.end());
  count_++;
}

void NgramPool::lookup(int32_t key, int max, std::vector<std::span<const int32_t>>& out) const {
  out.clear();
  auto it = map_.find(key);
  if (it == map_.end()) return;
  const std::vector<int32_t>& v = it->second;
  for (int i = static_cast<int>(v.size() / len_) - 1; i >= 0 && static_cast<int>(out.size()) < max; i--)
    out.emplace_back(v.data() + i * len_, len_);
}

void NgramPool::insert_all(std::span<const int32_t> tokens, size_t from) {
  for (size_t end = std::max<size_t>(from, len_); end < tokens.size(); end++)
    insert(tokens[end - len_], tokens.subspan(end - len_ + 1, len_));
}

}  // namespace jf
