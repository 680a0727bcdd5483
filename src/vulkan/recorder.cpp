#include "vulkan/recorder.h"

#include <algorithm>
#include <array>
#include <utility>

#include "base/error.h"

namespace jf::vulkan {

void Recorder::dispatch_raw(const Kernel& k, std::initializer_list<View> views, const void* params, size_t bytes, uint32_t x,
                            uint32_t y, uint32_t z) {
  JF_CHECK(views.size() == k.bindings && views.size() <= kMaxBindings, "Vulkan: wrong number of buffers for a kernel");
  if (x == 0 || y == 0 || z == 0) {
    if (skip_ > 0) skip_--;
    return;
  }
  if (key_) {
    key_->insert(key_->end(), {reinterpret_cast<uint64_t>(k.pipeline), x, y, z, static_cast<uint64_t>(skip_)});
    for (const View& v : views) key_->insert(key_->end(), {v.serial, v.offset, v.range});
    const auto* words = static_cast<const uint32_t*>(params);
    for (size_t i = 0; i < bytes / 4; i++) key_->push_back(words[i]);
    if (skip_ > 0) skip_--;
    return;
  }
  Api& a = api();
  std::array<VkDescriptorBufferInfo, kMaxBindings> infos;
  std::array<VkWriteDescriptorSet, kMaxBindings> writes;
  size_t n = 0;
  for (const View& v : views) {
    infos[n++] = VkDescriptorBufferInfo{v.buffer, v.offset, v.range};
    ctx_.note_binding(cmd_, v.serial);
  }
  for (size_t i = 0; i < n; i++) {
    writes[i] = VkWriteDescriptorSet{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstBinding = static_cast<uint32_t>(i);
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
  }
  a.vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
  a.vkCmdPushDescriptorSetKHR(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, k.layout, 0, static_cast<uint32_t>(n), writes.data());
  a.vkCmdPushConstants(cmd_, k.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, static_cast<uint32_t>(bytes), params);
  a.vkCmdDispatch(cmd_, x, y, z);
  dispatches_++;
  if (profiler_) profiler_->after(cmd_, k.name);
  if (skip_ > 0) {
    skip_--;
    return;
  }
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  a.vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0,
                         nullptr, 0, nullptr);
  barriers_++;
}

void Recorder::barrier() {
  skip_ = 0;
  if (key_) return key_->push_back(0xba44);
  VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  b.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  b.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  api().vkCmdPipelineBarrier(cmd_, stages, stages, 0, 1, &b, 0, nullptr, 0, nullptr);
  barriers_++;
}

void Recorder::copy(View src, View dst) { copy_regions(src, dst, {VkBufferCopy{src.offset, dst.offset, std::min(src.range, dst.range)}}); }

void Recorder::copy_regions(const View& src, const View& dst, const std::vector<VkBufferCopy>& regions) {
  if (regions.empty()) return;
  if (key_) {
    key_->insert(key_->end(), {0xc0b1, src.serial, dst.serial});
    for (const VkBufferCopy& r : regions) key_->insert(key_->end(), {r.srcOffset, r.dstOffset, r.size});
    return;
  }
  ctx_.note_binding(cmd_, src.serial), ctx_.note_binding(cmd_, dst.serial);
  Api& a = api();
  VkMemoryBarrier before{VK_STRUCTURE_TYPE_MEMORY_BARRIER};  // the dispatches' writes, read by the copy
  before.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  before.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  a.vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, nullptr, 0,
                         nullptr);
  a.vkCmdCopyBuffer(cmd_, src.buffer, dst.buffer, static_cast<uint32_t>(regions.size()), regions.data());
  barriers_ += 2;  // (the one before the copy and the one after)
  if (profiler_) profiler_->after(cmd_, "copy");
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  a.vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, nullptr, 0,
                         nullptr);
}

void Recorder::flat_grid(uint64_t n, uint32_t* x, uint32_t* y) {
  const uint64_t groups = (n + kWorkgroup - 1) / kWorkgroup;
  *x = static_cast<uint32_t>(groups < 65535 ? groups : 65535);
  *y = static_cast<uint32_t>(groups == 0 ? 0 : (groups + *x - 1) / *x);
}

void Recorder::finish() { ctx_.submit_and_wait(end()); }

VkCommandBuffer Recorder::end() {
  skip_ = 0;
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  api().vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                             0, 1, &barrier, 0, nullptr, 0, nullptr);
  check(api().vkEndCommandBuffer(cmd_), "recording commands");
  return std::exchange(cmd_, VK_NULL_HANDLE);
}

}  // namespace jf::vulkan
