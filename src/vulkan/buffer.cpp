#include "vulkan/buffer.h"

#include <algorithm>
#include <atomic>
#include <cstring>

namespace jf::vulkan {

namespace {
std::atomic<uint64_t> next_serial{1};
}

Buffer::Buffer(Context& ctx, size_t bytes, Kind kind)
    : ctx_(&ctx), device_(ctx.device()), size_(std::max<size_t>(bytes, 16)), serial_(next_serial++) {
  Api& a = api();
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = size_;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(a.vkCreateBuffer(device_, &bi, nullptr, &buffer_), "creating a buffer");
  VkMemoryRequirements req;
  a.vkGetBufferMemoryRequirements(device_, buffer_, &req);
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = kind == Kind::Device
                           ? ctx.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
                           : ctx.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                                             VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
  const VkResult r = a.vkAllocateMemory(device_, &ai, nullptr, &memory_);
  if (r != VK_SUCCESS) {
    release();
    check(r, ("allocating " + std::to_string(req.size) + " bytes of device memory").c_str());
  }
  check(a.vkBindBufferMemory(device_, buffer_, memory_, 0), "binding buffer memory");
  if (kind == Kind::Host) check(a.vkMapMemory(device_, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "mapping memory");
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    ctx_ = o.ctx_, device_ = o.device_, buffer_ = o.buffer_, memory_ = o.memory_, size_ = o.size_, mapped_ = o.mapped_, serial_ = o.serial_;
    o.buffer_ = VK_NULL_HANDLE, o.memory_ = VK_NULL_HANDLE, o.mapped_ = nullptr, o.size_ = 0, o.serial_ = 0;
  }
  return *this;
}

void Buffer::release() {
  if (!device_) return;
  if (ctx_ && buffer_) ctx_->note_freed(serial_);
  Api& a = api();
  if (buffer_) a.vkDestroyBuffer(device_, buffer_, nullptr);
  if (memory_) a.vkFreeMemory(device_, memory_, nullptr);  // unmaps too
  buffer_ = VK_NULL_HANDLE, memory_ = VK_NULL_HANDLE, mapped_ = nullptr;
}

void upload(Context& ctx, const Buffer& dst, size_t offset, const void* src, size_t bytes) {
  constexpr size_t kPiece = size_t(64) << 20;
  Buffer staging(ctx, std::min(bytes, kPiece), Buffer::Kind::Host);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kPiece, bytes - done);
    std::memcpy(staging.mapped(), static_cast<const uint8_t*>(src) + done, n);
    ctx.run([&](VkCommandBuffer cmd) {
      VkBufferCopy region{0, offset + done, n};
      api().vkCmdCopyBuffer(cmd, staging.handle(), dst.handle(), 1, &region);
    });
    done += n;
  }
}

void ensure_size(Context& ctx, Buffer& b, size_t bytes, Buffer::Kind kind) {
  if (b && b.size() >= bytes) return;
  b = Buffer();  // free the old one first
  b = Buffer(ctx, bytes + bytes / 4, kind);
}

}  // namespace jf::vulkan
