// Device memory: buffers, views of them for a binding, and copies to and from the host.
#pragma once
#include <cstddef>
#include <cstdint>

#include "vulkan/context.h"

namespace jf::vulkan {

// A range of a buffer as one shader binding sees it.
struct View {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0, range = 0;
  uint64_t serial = 0;  // its Buffer's (Buffer::serial): what a recording's key holds
};

class Buffer {
 public:
  // Device: device-local (weights, activations, KV caches). Host: host-visible and coherent, mapped (what the
  // host writes for a forward and reads back), cached where the device offers it.
  enum class Kind { Device, Host };
  Buffer() = default;
  Buffer(Context& ctx, size_t bytes, Kind kind);
  ~Buffer() { release(); }
  Buffer(Buffer&& o) noexcept { *this = static_cast<Buffer&&>(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  // Unique to this allocation in the process (a handle value can come back for a later buffer): what a
  // recorded command buffer's bindings are checked against (replay_cache.h).
  uint64_t serial() const { return serial_; }
  size_t size() const { return size_; }
  void* mapped() const { return mapped_; }  // Host buffers only
  View view(size_t offset = 0, size_t range = 0) const { return View{buffer_, offset, range ? range : size_ - offset, serial_}; }
  explicit operator bool() const { return buffer_ != VK_NULL_HANDLE; }

 private:
  void release();
  Context* ctx_ = nullptr;  // told when the buffer is freed (Context::note_freed)
  VkDevice device_ = VK_NULL_HANDLE;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  size_t size_ = 0;
  void* mapped_ = nullptr;
  uint64_t serial_ = 0;
};

// Copies host bytes into a device buffer through a staging buffer (in pieces of at most 64 MiB).
void upload(Context& ctx, const Buffer& dst, size_t offset, const void* src, size_t bytes);

// Grows `b` to at least `bytes` (contents are lost); keeps it when large enough.
void ensure_size(Context& ctx, Buffer& b, size_t bytes, Buffer::Kind kind);

}  // namespace jf::vulkan
