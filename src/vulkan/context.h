// A Vulkan instance, the devices it offers (`jf devices`), and one opened device with a compute queue.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "vulkan/loader.h"

namespace jf::vulkan {

struct DeviceInfo {
  int index = 0;
  std::string name, type;  // type: "discrete GPU", "integrated GPU", "virtual GPU", "CPU (software)", "other"
  bool software = false;   // a CPU implementation (lavapipe, SwiftShader): never chosen by --device auto
  std::string api_version, driver;
  uint64_t memory_bytes = 0;  // device-local heap
  uint32_t subgroup_size = 0, shared_memory = 0;
  bool subgroup_shuffle = false;  // compute shaders' subgroupShuffleXor (matmul_family.h's "-sg" members)
  uint64_t max_binding_bytes = 0;  // maxStorageBufferRange: the largest tensor one binding can hold
  // fp16 matrix units jf's tiles can use: VK_NV_cooperative_matrix with 16x16x16 fp16 products into fp32 on
  // subgroups of 32 (matmul_grid.h, MatrixMath::MatrixUnits)
  bool matrix_units = false;
  // int8 matrix units for the qmm members (matmul_family.h, "-mu"): 16x16x32 int8 products into int32 on
  // subgroups of 32; exact, so no tile-position probe is needed
  bool int8_matrix_units = false;
  // OpSDot on four packed int8s (VK_KHR_shader_integer_dot_product, core in 1.3): matmul_family.h's "-dot"
  // members, which take their inputs as int8s as the CPU's int8 panels do
  bool int_dot = false;
  std::vector<std::string> features;  // what jf uses that the device has
  std::string missing;                // what jf needs that it lacks ("" = usable)
};

// Every physical device the Vulkan loader reports; throws jf::Error without a loader or an instance.
std::vector<DeviceInfo> list_devices();

// One opened device: a compute queue, a command pool and a fence for one submission at a time.
class Context {
 public:
  explicit Context(int device_index);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const DeviceInfo& info() const { return info_; }
  VkDevice device() const { return device_; }
  uint64_t offset_alignment() const { return offset_alignment_; }
  float timestamp_period_ns() const { return timestamp_period_; }
  bool timestamps() const { return timestamps_; }
  // Whether the driver reports what it compiled a pipeline to (VK_KHR_pipeline_executable_properties:
  // registers, spills, instructions; Kernels::statistics)
  bool pipeline_statistics() const { return pipeline_statistics_; }
  // A memory type with `want` (and, where one exists, `prefer` too); throws when none has `want`.
  uint32_t memory_type(uint32_t allowed, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer = 0) const;
  VkMemoryPropertyFlags memory_flags(uint32_t type) const;
  // Device-local bytes still free (VK_EXT_memory_budget where present, else the heap's size).
  uint64_t free_device_memory() const;

  // Records into the context's command buffer, submits and waits.
  void run(const std::function<void(VkCommandBuffer)>& record);
  VkCommandBuffer begin();
  void submit_and_wait();
  // A command buffer of the context's pool (freed with it), recorded once and submitted many times.
  VkCommandBuffer new_command_buffer();
  // Resets and begins `cmd` for one submission (once) or for several.
  void begin(VkCommandBuffer cmd, bool once);
  // Submits recorded (ended) command buffers, in order, as one submission and waits for them.
  void submit_and_wait(VkCommandBuffer cmd) { submit_and_wait(std::span<const VkCommandBuffer>(&cmd, 1)); }
  void submit_and_wait(std::span<const VkCommandBuffer> cmds);
  // Submissions made (each waited for: one host wait each), since the device was opened.
  uint64_t submissions() const { return submissions_; }
  // The buffers each command buffer's recording binds (the Recorder notes them; begin forgets them). A buffer
  // freed while a recording binds it is a use after free when that recording runs, which lavapipe does not
  // fault on and a GPU may: submit_and_wait refuses such a command buffer with an error (a jf bug), so the
  // tests catch it here (a buffer grown in the middle of a recording, say).
  void note_binding(VkCommandBuffer cmd, uint64_t serial) { bound_[cmd].insert(serial); }
  void note_freed(uint64_t serial);

 private:
  DeviceInfo info_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory_{};
  uint64_t offset_alignment_ = 256;
  float timestamp_period_ = 1.0f;
  bool timestamps_ = false, memory_budget_ = false, pipeline_statistics_ = false;
  uint64_t submissions_ = 0;
  std::unordered_map<VkCommandBuffer, std::unordered_set<uint64_t>> bound_;
  std::unordered_set<VkCommandBuffer> lost_binding_;  // recordings that bind a freed buffer
};

}  // namespace jf::vulkan
