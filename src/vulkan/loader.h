// The Vulkan API, loaded at run time from the system's loader (libvulkan.so.1) rather than linked: a jf built
// with the backend still starts on a machine without Vulkan, and --device vulkan then says why it cannot run.
#pragma once
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

namespace jf::vulkan {

#define JF_VK_GLOBAL_FUNCTIONS(X) X(vkCreateInstance) X(vkEnumerateInstanceVersion)
#define JF_VK_FUNCTIONS(X)                                                                                       \
  X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)                             \
  X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceFeatures2) X(vkGetPhysicalDeviceMemoryProperties)        \
  X(vkGetPhysicalDeviceMemoryProperties2) X(vkGetPhysicalDeviceQueueFamilyProperties)                             \
  X(vkEnumerateDeviceExtensionProperties) X(vkCreateDevice) X(vkDestroyDevice) X(vkGetDeviceQueue)                \
  X(vkCreateBuffer) X(vkDestroyBuffer) X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory)       \
  X(vkBindBufferMemory) X(vkMapMemory) X(vkUnmapMemory) X(vkCreateShaderModule) X(vkDestroyShaderModule)          \
  X(vkCreateDescriptorSetLayout) X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout)                        \
  X(vkDestroyPipelineLayout) X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreateCommandPool)              \
  X(vkDestroyCommandPool) X(vkAllocateCommandBuffers) X(vkBeginCommandBuffer) X(vkEndCommandBuffer)               \
  X(vkResetCommandBuffer) X(vkCmdBindPipeline) X(vkCmdPushConstants) X(vkCmdPushDescriptorSetKHR)                 \
  X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCmdFillBuffer) X(vkQueueSubmit) X(vkCreateFence)                   \
  X(vkDestroyFence) X(vkWaitForFences) X(vkResetFences) X(vkDeviceWaitIdle) X(vkCreateQueryPool)                  \
  X(vkDestroyQueryPool) X(vkCmdWriteTimestamp) X(vkCmdResetQueryPool) X(vkGetQueryPoolResults)                  \
  X(vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) /* null where the loader lacks it */                       \
  X(vkGetPipelineExecutablePropertiesKHR) X(vkGetPipelineExecutableStatisticsKHR) /* likewise */

struct Api {
#define JF_VK_MEMBER(name) PFN_##name name = nullptr;
  JF_VK_GLOBAL_FUNCTIONS(JF_VK_MEMBER)
  JF_VK_FUNCTIONS(JF_VK_MEMBER)
#undef JF_VK_MEMBER
};

// The loaded API (global functions only until load_instance_functions); throws jf::Error when no Vulkan
// loader is installed.
Api& api();
void load_instance_functions(VkInstance instance);

// Throws jf::Error "Vulkan: <what> failed (<code>)" unless r is VK_SUCCESS.
void check(VkResult r, const char* what);

}  // namespace jf::vulkan
