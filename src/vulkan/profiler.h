// JF_VULKAN_PROFILE=1: a timestamp after every dispatch and copy of a forward, summed per kernel, to see where
// a forward's device time goes (ForwardPass::take_profile; bench/forward_cost prints it by row count). Each
// dispatch costs a query, and forwards are recorded every time (no replay) while it is on.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vulkan/context.h"

namespace jf::vulkan {

class Profiler {
 public:
  explicit Profiler(Context& ctx, uint32_t capacity = 16384);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;
  void begin(VkCommandBuffer cmd);                            // a forward's recording starts: the first timestamp
  void after(VkCommandBuffer cmd, const std::string& what);   // one timestamp, the time since the last one is what's
  void collect();                                              // after the submission: durations into the totals
  // Per kernel, the dispatches and milliseconds a forward, over the forwards since the last call; "" when none.
  std::string take_report();

 private:
  Context& ctx_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
  uint32_t capacity_, used_ = 0;
  bool active_ = false;
  std::vector<std::string> names_;  // what ended at timestamp i + 1
  struct Total {
    uint64_t count = 0;
    double seconds = 0;
  };
  std::map<std::string, Total> totals_;
  uint64_t forwards_ = 0;
};

}  // namespace jf::vulkan
