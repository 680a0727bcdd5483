// Timestamps written into a command buffer after dispatches, read back as seconds since the first: how the
// kernel sweep and the read probe time a dispatch as a forward would see it (one after another, a barrier
// between them, launch included).
#pragma once
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "vulkan/context.h"
#include "vulkan/loader.h"

namespace jf::vulkan {

class Timer {
 public:
  Timer(Context& ctx, uint32_t queries) : ctx_(ctx), queries_(queries) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = queries;
    check(api().vkCreateQueryPool(ctx.device(), &qi, nullptr, &pool_), "creating a timer");
  }
  ~Timer() { api().vkDestroyQueryPool(ctx_.device(), pool_, nullptr); }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  void reset(VkCommandBuffer cmd) { api().vkCmdResetQueryPool(cmd, pool_, 0, queries_); }
  void stamp(VkCommandBuffer cmd, uint32_t i) { api().vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, i); }
  std::vector<double> seconds() {  // each query's time since query 0 (after the submission finished)
    std::vector<uint64_t> ticks(queries_);
    if (api().vkGetQueryPoolResults(ctx_.device(), pool_, 0, queries_, ticks.size() * 8, ticks.data(), 8,
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS)
      throw Error("Vulkan: the kernel timer returned no result");
    std::vector<double> s(queries_);
    for (uint32_t i = 0; i < queries_; i++) s[i] = static_cast<double>(ticks[i] - ticks[0]) * ctx_.timestamp_period_ns() * 1e-9;
    return s;
  }

 private:
  Context& ctx_;
  uint32_t queries_;
  VkQueryPool pool_ = VK_NULL_HANDLE;
};

}  // namespace jf::vulkan
