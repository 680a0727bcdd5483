#include "vulkan/replay_cache.h"

#include <algorithm>

namespace jf::vulkan {

VkCommandBuffer ReplayCache::find(const ShapeKey& key) {
  for (Entry& e : entries_)
    if (!e.key.empty() && e.key == key) {
      e.last_used = ++clock_;
      replays_++;
      return e.cmd;
    }
  return VK_NULL_HANDLE;
}

VkCommandBuffer ReplayCache::take() {
  if (entries_.size() < capacity_) {
    entries_.push_back(Entry{{}, ctx_.new_command_buffer(), 0});
    return entries_.back().cmd;
  }
  Entry& oldest = *std::min_element(entries_.begin(), entries_.end(),
                                    [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
  oldest.key.clear();
  return oldest.cmd;
}

void ReplayCache::keep(const ShapeKey& key, VkCommandBuffer cmd) {
  for (Entry& e : entries_)
    if (e.cmd == cmd) {
      e.key = key;
      e.last_used = ++clock_;
    }
}

}  // namespace jf::vulkan
