#include "vulkan/profiler.h"

#include <algorithm>
#include <cstdio>

namespace jf::vulkan {

Profiler::Profiler(Context& ctx, uint32_t capacity) : ctx_(ctx), capacity_(capacity) {
  if (!ctx_.timestamps()) return;  // a device without compute timestamps: an empty report
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = capacity_;
  check(api().vkCreateQueryPool(ctx_.device(), &qi, nullptr, &pool_), "creating the profiler's timestamps");
}

Profiler::~Profiler() {
  if (pool_) api().vkDestroyQueryPool(ctx_.device(), pool_, nullptr);
}

void Profiler::begin(VkCommandBuffer cmd) {
  active_ = pool_ != VK_NULL_HANDLE;
  if (!active_) return;
  names_.clear();
  used_ = 1;
  api().vkCmdResetQueryPool(cmd, pool_, 0, capacity_);
  api().vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool_, 0);
}

void Profiler::after(VkCommandBuffer cmd, const std::string& what) {
  if (!active_ || used_ >= capacity_) return;
  api().vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool_, used_++);
  names_.push_back(what);
}

void Profiler::collect() {
  if (!active_) return;
  active_ = false;
  std::vector<uint64_t> ticks(used_);
  if (api().vkGetQueryPoolResults(ctx_.device(), pool_, 0, used_, ticks.size() * 8, ticks.data(), 8, VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
    return;
  const double tick = ctx_.timestamp_period_ns() * 1e-9;
  for (size_t i = 0; i < names_.size(); i++) {
    Total& t = totals_[names_[i]];
    t.count++;
    t.seconds += static_cast<double>(ticks[i + 1] - ticks[i]) * tick;
  }
  forwards_++;
}

std::string Profiler::take_report() {
  if (forwards_ == 0) return "";
  std::vector<std::pair<std::string, Total>> rows(totals_.begin(), totals_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  double all = 0;
  for (const auto& r : rows) all += r.second.seconds;
  std::string out = "| kernel | dispatches a forward | ms a forward | share |\n|---|---|---|---|\n";
  char line[256];
  for (const auto& [name, t] : rows) {
    std::snprintf(line, sizeof line, "| %s | %.1f | %.3f | %.1f%% |\n", name.c_str(), double(t.count) / double(forwards_),
                  t.seconds / double(forwards_) * 1e3, all > 0 ? 100.0 * t.seconds / all : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "| all (%llu forwards) | | %.3f | |\n", static_cast<unsigned long long>(forwards_),
                all / double(forwards_) * 1e3);
  out += line;
  totals_.clear();
  forwards_ = 0;
  return out;
}

}  // namespace jf::vulkan
