#include "vulkan/bandwidth.h"

#include <algorithm>

#include "base/error.h"
#include "vulkan/buffer.h"
#include "vulkan/kernels.h"
#include "vulkan/recorder.h"

namespace jf::vulkan {

ReadBandwidth measure_read_bandwidth(Context& ctx, size_t bytes, int reads) {
  if (!ctx.timestamps()) throw Error("Vulkan: " + ctx.info().name + " has no compute timestamps to time a read with");
  bytes = std::min<uint64_t>(bytes, ctx.info().max_binding_bytes) / 16 * 16;
  bytes = std::min<size_t>(bytes, size_t{UINT32_MAX} * 16);
  // Enough threads to keep every memory channel busy (a few per shader core on any GPU).
  constexpr uint32_t kGroups = 4096;
  Buffer src(ctx, bytes, Buffer::Kind::Device), sums(ctx, size_t{kGroups} * kWorkgroup * 4, Buffer::Kind::Device);
  Kernels kernels(ctx);
  const Kernel& k = kernels.get("read_sum", 2);
  struct {
    uint32_t words;
  } params{static_cast<uint32_t>(bytes / 16)};
  VkQueryPool pool = VK_NULL_HANDLE;
  VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
  qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
  qi.queryCount = 2;
  Api& vk = api();
  check(vk.vkCreateQueryPool(ctx.device(), &qi, nullptr, &pool), "creating a timer");
  ReadBandwidth r;
  r.bytes = bytes;
  double best = 0;
  Recorder rec(ctx);
  for (int i = 0; i <= reads; i++) {  // the first read is not timed: clocks and caches warm up
    rec.begin();
    vk.vkCmdResetQueryPool(rec.cmd(), pool, 0, 2);
    vk.vkCmdWriteTimestamp(rec.cmd(), VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, 0);
    rec.dispatch(k, {src.view(), sums.view()}, params, kGroups);
    vk.vkCmdWriteTimestamp(rec.cmd(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 1);
    rec.finish();
    uint64_t ticks[2] = {0, 0};
    if (vk.vkGetQueryPoolResults(ctx.device(), pool, 0, 2, sizeof ticks, ticks, 8, VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
      continue;
    const double seconds = static_cast<double>(ticks[1] - ticks[0]) * ctx.timestamp_period_ns() * 1e-9;
    if (i > 0 && seconds > 0) best = std::max(best, static_cast<double>(bytes) / seconds), r.reads++;
  }
  vk.vkDestroyQueryPool(ctx.device(), pool, nullptr);
  if (r.reads == 0) throw Error("Vulkan: the read-bandwidth timer returned no result");
  r.bytes_per_second = best;
  return r;
}

}  // namespace jf::vulkan
