#include "vulkan/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

#include "base/error.h"
#include "vulkan/buffer.h"
#include "vulkan/kernels.h"
#include "vulkan/recorder.h"
#include "vulkan/timer.h"

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

WarmUp warm_up(Context& ctx, double seconds) {
  if (!ctx.timestamps()) throw Error("Vulkan: " + ctx.info().name + " has no compute timestamps to time a read with");
  constexpr uint32_t kGroups = 4096;
  constexpr int kReads = 8;
  // (64 MB: ~15 us a read on an H200, far past a launch's cost; a software device reads 4 MB)
  const size_t bytes = std::min<uint64_t>(size_t{ctx.info().software ? 4u : 64u} << 20, ctx.info().max_binding_bytes) / 16 * 16;
  Buffer src(ctx, bytes, Buffer::Kind::Device), sums(ctx, size_t{kGroups} * kWorkgroup * 4, Buffer::Kind::Device);
  Kernels kernels(ctx);
  const Kernel& k = kernels.get("read_sum", 2);
  const struct {
    uint32_t words;
  } params{static_cast<uint32_t>(bytes / 16)};
  Timer timer(ctx, kReads + 1);
  WarmUp w;
  const auto start = std::chrono::steady_clock::now();
  for (double previous = 0;;) {
    Recorder rec(ctx);
    rec.begin();
    timer.reset(rec.cmd());
    timer.stamp(rec.cmd(), 0);
    for (int i = 0; i < kReads; i++) {
      rec.dispatch(k, {src.view(), sums.view()}, params, kGroups);
      timer.stamp(rec.cmd(), static_cast<uint32_t>(i + 1));
    }
    rec.finish();
    const double rate = static_cast<double>(bytes) * kReads / timer.seconds()[kReads];
    if (w.reads == 0) w.first_bytes_per_second = rate;
    w.reads += kReads, w.last_bytes_per_second = rate;
    w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const bool steady = previous > 0 && std::abs(rate - previous) <= 0.02 * previous;
    if ((w.seconds >= seconds && steady) || w.seconds >= 4 * seconds) return w;
    previous = rate;
  }
}

namespace {

constexpr uint32_t kMarker = 0x5eed1e55u;
constexpr uint32_t kMaxGroupsX = 65535;

// Times `reps` dispatches of read_probe over `words` 16-byte words with `loads` a thread (one command buffer,
// a barrier between them as between a forward's products) and checks the marker's thread found it.
double time_one_shot(Context& ctx, Kernels& kernels, const Buffer& src, const Buffer& found, uint32_t words, int loads, int reps) {
  const Kernel& k = kernels.get("read_probe", 2, {static_cast<uint32_t>(loads)}, "read_probe loads " + std::to_string(loads));
  const uint32_t per_group = kWorkgroup * static_cast<uint32_t>(loads), groups = (words + per_group - 1) / per_group;
  const uint32_t gx = std::min(groups, kMaxGroupsX), gy = (groups + gx - 1) / gx;
  struct {
    uint32_t words, marker;
  } params{words, kMarker};
  Timer timer(ctx, static_cast<uint32_t>(reps + 1));
  std::memset(found.mapped(), 0xff, 4);  // (host-coherent: seen by the submission below)
  Recorder rec(ctx);
  rec.begin();
  timer.reset(rec.cmd());
  rec.dispatch(k, {src.view(), found.view()}, params, gx, gy);  // (untimed: the pipeline and clocks warm up)
  timer.stamp(rec.cmd(), 0);
  for (int r = 0; r < reps; r++) {
    rec.dispatch(k, {src.view(), found.view()}, params, gx, gy);
    timer.stamp(rec.cmd(), static_cast<uint32_t>(r + 1));
  }
  rec.finish();
  const std::vector<double> s = timer.seconds();
  // The marker sits in the last word: the thread that loads it, by the shader's layout.
  const uint32_t last = words - 1, expected = last / per_group * kWorkgroup + last % kWorkgroup;
  uint32_t thread = 0;
  std::memcpy(&thread, found.mapped(), 4);
  if (thread != expected)
    throw Error("Vulkan: the read probe's loads did not run as laid out (thread " + std::to_string(thread) + " found the marker, not " +
                std::to_string(expected) + ")");
  double best = s[1];
  for (int r = 1; r < reps; r++) best = std::min(best, s[r + 1] - s[r]);
  return best;
}

}  // namespace

std::vector<OneShotRead> probe_one_shot_reads(Context& ctx, const std::vector<size_t>& sizes, const std::vector<int>& loads, int reps) {
  if (!ctx.timestamps()) throw Error("Vulkan: " + ctx.info().name + " has no compute timestamps to time a read with");
  if (reps < 1) throw Error("the read probe needs at least one timed read");
  size_t largest = 16;
  for (size_t s : sizes) largest = std::max(largest, s / 16 * 16);
  largest = std::min<uint64_t>({largest, ctx.info().max_binding_bytes / 16 * 16, size_t{UINT32_MAX} * 16});
  Buffer src(ctx, largest, Buffer::Kind::Device), found(ctx, 4, Buffer::Kind::Host);
  Kernels kernels(ctx);
  std::vector<OneShotRead> out;
  for (size_t size : sizes) {
    const size_t bytes = std::clamp<size_t>(size / 16 * 16, 16, largest);
    const uint32_t words = static_cast<uint32_t>(bytes / 16);
    const uint32_t marker[4] = {kMarker, 0, 0, 0};
    ctx.run([&](VkCommandBuffer cmd) { api().vkCmdFillBuffer(cmd, src.handle(), 0, bytes, 0); });
    upload(ctx, src, bytes - 16, marker, 16);
    for (int l : loads) {
      if (l < 1 || l > 8) throw Error("the read probe takes 1 to 8 loads a thread, not " + std::to_string(l));
      out.push_back({bytes, l, time_one_shot(ctx, kernels, src, found, words, l, reps)});
    }
  }
  return out;
}

}  // namespace jf::vulkan
