#include "vulkan/context.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace jf::vulkan {

namespace {

VkInstance instance() {
  static VkInstance inst = [] {
    Api& a = api();
    uint32_t version = VK_API_VERSION_1_0;
    if (a.vkEnumerateInstanceVersion) a.vkEnumerateInstanceVersion(&version);
    if (version < VK_API_VERSION_1_2)
      throw Error("Vulkan: the loader offers Vulkan " + std::to_string(VK_API_VERSION_MAJOR(version)) + "." +
                  std::to_string(VK_API_VERSION_MINOR(version)) + "; jf needs 1.2");
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "jf";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    VkInstance i = VK_NULL_HANDLE;
    const VkResult r = a.vkCreateInstance(&ci, nullptr, &i);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)  // the loader found no driver at all
      throw Error("Vulkan: no Vulkan device on this machine (the loader found no driver: install one, e.g. Debian's "
                  "mesa-vulkan-drivers or NVIDIA's), or use --device cpu");
    check(r, "creating an instance");
    load_instance_functions(i);
    return i;
  }();
  return inst;
}

std::vector<VkPhysicalDevice> physical_devices() {
  VkInstance inst = instance();
  uint32_t n = 0;
  check(api().vkEnumeratePhysicalDevices(inst, &n, nullptr), "listing devices");
  std::vector<VkPhysicalDevice> out(n);
  check(api().vkEnumeratePhysicalDevices(inst, &n, out.data()), "listing devices");
  out.resize(n);
  return out;
}

bool has_extension(VkPhysicalDevice d, const char* name) {
  uint32_t n = 0;
  api().vkEnumerateDeviceExtensionProperties(d, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  api().vkEnumerateDeviceExtensionProperties(d, nullptr, &n, ext.data());
  return std::any_of(ext.begin(), ext.end(), [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// The features jf's shaders use, as one chain to query and to enable.
struct Features {
  VkPhysicalDeviceFeatures2 base{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  Features() {
    base.pNext = &v11;
    v11.pNext = &v12;
  }
  Features(const Features&) = delete;
};

// Whether `d` multiplies 16 x k_size by k_size x 16 matrices of `in` into `out` on its matrix units: the
// extension and its feature, that subgroup product, and subgroups of 32 (the shaders' four subgroups per
// workgroup); the caller checks the memory model feature their SPIR-V declares. matmul_tiles.comp's COOPMAT
// variant takes fp16 x fp16 -> fp32 (k 16), matmul_qmm.comp's INT_UNITS int8 x int8 -> int32 (k 32).
bool has_matrix_units(VkPhysicalDevice d, uint32_t subgroup_size, uint32_t k_size, VkComponentTypeNV in, VkComponentTypeNV out) {
  Api& a = api();
  if (subgroup_size != 32 || !has_extension(d, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) || !a.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)
    return false;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV cm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f.pNext = &cm;
  a.vkGetPhysicalDeviceFeatures2(d, &f);
  if (!cm.cooperativeMatrix) return false;
  uint32_t n = 0;
  if (a.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(d, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> props(n, VkCooperativeMatrixPropertiesNV{VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (a.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(d, &n, props.data()) != VK_SUCCESS) return false;
  return std::any_of(props.begin(), props.begin() + n, [&](const VkCooperativeMatrixPropertiesNV& p) {
    return p.MSize == 16 && p.NSize == 16 && p.KSize == k_size && p.AType == in && p.BType == in && p.CType == out &&
           p.DType == out && p.scope == VK_SCOPE_SUBGROUP_NV;
  });
}

// Whether `d` says what it compiled a pipeline to (VK_KHR_pipeline_executable_properties and its feature).
bool has_pipeline_statistics(VkPhysicalDevice d) {
  Api& a = api();
  if (!has_extension(d, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME) || !a.vkGetPipelineExecutableStatisticsKHR ||
      !a.vkGetPipelineExecutablePropertiesKHR)
    return false;
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR has{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f.pNext = &has;
  a.vkGetPhysicalDeviceFeatures2(d, &f);
  return has.pipelineExecutableInfo;
}

// Whether `d` runs OpSDot on packed int8s: VK_KHR_shader_integer_dot_product and its feature (the extension
// enabled even where Vulkan 1.3 made it core: the instance asks for 1.2).
bool has_integer_dot_product(VkPhysicalDevice d) {
  if (!has_extension(d, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME)) return false;
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f.pNext = &dot;
  api().vkGetPhysicalDeviceFeatures2(d, &f);
  return dot.shaderIntegerDotProduct;
}

DeviceInfo describe(VkPhysicalDevice d, int index) {
  Api& a = api();
  DeviceInfo info;
  info.index = index;
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  sub.pNext = &drv;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &sub;
  a.vkGetPhysicalDeviceProperties2(d, &props);
  const VkPhysicalDeviceProperties& p = props.properties;
  info.name = p.deviceName;
  switch (p.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: info.type = "discrete GPU"; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: info.type = "integrated GPU"; break;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: info.type = "virtual GPU"; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: info.type = "CPU (software)"; break;
    default: info.type = "other"; break;
  }
  info.software = p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  info.api_version = std::to_string(VK_API_VERSION_MAJOR(p.apiVersion)) + "." + std::to_string(VK_API_VERSION_MINOR(p.apiVersion)) +
                     "." + std::to_string(VK_API_VERSION_PATCH(p.apiVersion));
  info.driver = std::string(drv.driverName) + " " + drv.driverInfo;
  info.subgroup_size = sub.subgroupSize;
  info.subgroup_shuffle = (sub.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) && (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
  info.shared_memory = p.limits.maxComputeSharedMemorySize;
  info.max_binding_bytes = p.limits.maxStorageBufferRange;
  VkPhysicalDeviceMemoryProperties mem;
  a.vkGetPhysicalDeviceMemoryProperties(d, &mem);
  for (uint32_t h = 0; h < mem.memoryHeapCount; h++)
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) info.memory_bytes = std::max<uint64_t>(info.memory_bytes, mem.memoryHeaps[h].size);
  Features f;
  a.vkGetPhysicalDeviceFeatures2(d, &f.base);
  auto need = [&](bool have, const char* name) {
    if (have)
      info.features.push_back(name);
    else
      info.missing += std::string(info.missing.empty() ? "" : ", ") + name;
  };
  need(p.apiVersion >= VK_API_VERSION_1_2, "Vulkan 1.2");
  need(f.v12.storageBuffer8BitAccess, "8-bit storage");
  need(f.v11.storageBuffer16BitAccess, "16-bit storage");
  need(f.v12.shaderInt8, "int8");
  need(f.base.features.shaderInt16, "int16");
  need(f.v12.shaderFloat16, "fp16");
  need(has_extension(d, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME), "push descriptors");
  need(p.limits.maxComputeSharedMemorySize >= 16384, "16 KiB shared memory");
  if (f.v12.vulkanMemoryModel) info.features.push_back("memory model");
  info.matrix_units = f.v12.vulkanMemoryModel && has_matrix_units(d, info.subgroup_size, 16, VK_COMPONENT_TYPE_FLOAT16_NV, VK_COMPONENT_TYPE_FLOAT32_NV);
  if (info.matrix_units) info.features.push_back("fp16 matrix units");
  info.int8_matrix_units = f.v12.vulkanMemoryModel && has_matrix_units(d, info.subgroup_size, 32, VK_COMPONENT_TYPE_SINT8_NV, VK_COMPONENT_TYPE_SINT32_NV);
  if (info.int8_matrix_units) info.features.push_back("int8 matrix units");
  info.int_dot = has_integer_dot_product(d);
  if (info.int_dot) info.features.push_back("integer dot product");
  if (info.subgroup_shuffle) info.features.push_back("subgroup shuffles");
  if (has_pipeline_statistics(d)) info.features.push_back("pipeline statistics");
  return info;
}

}  // namespace

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out;
  const std::vector<VkPhysicalDevice> devs = physical_devices();
  for (size_t i = 0; i < devs.size(); i++) out.push_back(describe(devs[i], static_cast<int>(i)));
  return out;
}

Context::Context(int device_index) {
  const std::vector<VkPhysicalDevice> devs = physical_devices();
  if (devs.empty()) throw Error("Vulkan: no Vulkan device on this machine (is a driver installed? Debian: mesa-vulkan-drivers)");
  if (device_index < 0 || device_index >= static_cast<int>(devs.size()))
    throw Error("Vulkan: no device " + std::to_string(device_index) + " (this machine has " + std::to_string(devs.size()) +
                "; see jf devices)");
  Api& a = api();
  physical_ = devs[static_cast<size_t>(device_index)];
  info_ = describe(physical_, device_index);
  if (!info_.missing.empty()) throw Error("Vulkan: device " + std::to_string(device_index) + " (" + info_.name + ") lacks " + info_.missing);
  VkPhysicalDeviceProperties p;
  a.vkGetPhysicalDeviceProperties(physical_, &p);
  offset_alignment_ = std::max<uint64_t>(p.limits.minStorageBufferOffsetAlignment, 16);
  timestamp_period_ = p.limits.timestampPeriod;
  a.vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);

  uint32_t nq = 0;
  a.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> families(nq);
  a.vkGetPhysicalDeviceQueueFamilyProperties(physical_, &nq, families.data());
  uint32_t family = UINT32_MAX;
  for (uint32_t i = 0; i < nq && family == UINT32_MAX; i++)
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = i;
  if (family == UINT32_MAX) throw Error("Vulkan: device " + info_.name + " has no compute queue");
  timestamps_ = families[family].timestampValidBits > 0 && p.limits.timestampComputeAndGraphics;

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  Features f;  // enable exactly what the shaders use
  f.base.features.shaderInt16 = VK_TRUE;
  f.v11.storageBuffer16BitAccess = VK_TRUE;
  f.v12.storageBuffer8BitAccess = VK_TRUE;
  f.v12.shaderInt8 = VK_TRUE;
  f.v12.shaderFloat16 = VK_TRUE;
  std::vector<const char*> extensions{VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  memory_budget_ = has_extension(physical_, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  if (memory_budget_) extensions.push_back(VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  VkPhysicalDeviceCooperativeMatrixFeaturesNV matrix_units{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  if (info_.matrix_units || info_.int8_matrix_units) {  // chained and enabled only where the device has them
    matrix_units.cooperativeMatrix = VK_TRUE;
    f.v12.pNext = &matrix_units;
    f.v12.vulkanMemoryModel = VK_TRUE;  // GL_KHR_memory_scope_semantics, which the cooperative-matrix shader uses
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  VkPhysicalDeviceShaderIntegerDotProductFeatures int_dot{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  if (info_.int_dot) {  // (the "-dot" members' OpSDot)
    int_dot.shaderIntegerDotProduct = VK_TRUE;
    int_dot.pNext = f.v12.pNext;
    f.v12.pNext = &int_dot;
    extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  }
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executables{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (has_pipeline_statistics(physical_)) {  // (read by a kernel sweep only: what each member compiled to)
    pipeline_statistics_ = true;
    executables.pipelineExecutableInfo = VK_TRUE;
    executables.pNext = f.v12.pNext;
    f.v12.pNext = &executables;
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  }
  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  ci.pNext = &f.base;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qi;
  ci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  check(a.vkCreateDevice(physical_, &ci, nullptr, &device_), "opening the device");
  a.vkGetDeviceQueue(device_, family, 0, &queue_);
  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = family;
  check(a.vkCreateCommandPool(device_, &pi, nullptr, &pool_), "creating a command pool");
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  check(a.vkAllocateCommandBuffers(device_, &ai, &cmd_), "allocating a command buffer");
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(a.vkCreateFence(device_, &fi, nullptr, &fence_), "creating a fence");
}

Context::~Context() {
  Api& a = api();
  if (!device_) return;
  a.vkDeviceWaitIdle(device_);
  a.vkDestroyFence(device_, fence_, nullptr);
  a.vkDestroyCommandPool(device_, pool_, nullptr);
  a.vkDestroyDevice(device_, nullptr);
}

uint32_t Context::memory_type(uint32_t allowed, VkMemoryPropertyFlags want, VkMemoryPropertyFlags prefer) const {
  for (int pass = 0; pass < 2; pass++) {
    const VkMemoryPropertyFlags need = pass == 0 ? want | prefer : want;
    for (uint32_t i = 0; i < memory_.memoryTypeCount; i++)
      if ((allowed >> i & 1) && (memory_.memoryTypes[i].propertyFlags & need) == need) return i;
  }
  throw Error("Vulkan: device " + info_.name + " has no suitable memory type");
}

VkMemoryPropertyFlags Context::memory_flags(uint32_t type) const { return memory_.memoryTypes[type].propertyFlags; }

uint64_t Context::free_device_memory() const {
  Api& a = api();
  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
  if (memory_budget_) props.pNext = &budget;
  a.vkGetPhysicalDeviceMemoryProperties2(physical_, &props);
  uint64_t best = 0;
  for (uint32_t h = 0; h < props.memoryProperties.memoryHeapCount; h++) {
    if (!(props.memoryProperties.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) continue;
    const uint64_t size = props.memoryProperties.memoryHeaps[h].size;
    const uint64_t free = memory_budget_ ? (budget.heapBudget[h] > budget.heapUsage[h] ? budget.heapBudget[h] - budget.heapUsage[h] : 0) : size;
    best = std::max(best, free);
  }
  return best;
}

VkCommandBuffer Context::begin() {
  begin(cmd_, true);
  return cmd_;
}

void Context::submit_and_wait() {
  check(api().vkEndCommandBuffer(cmd_), "recording commands");
  submit_and_wait(cmd_);
}

VkCommandBuffer Context::new_command_buffer() {
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  check(api().vkAllocateCommandBuffers(device_, &ai, &cmd), "allocating a command buffer");
  return cmd;
}

void Context::begin(VkCommandBuffer cmd, bool once) {
  Api& a = api();
  check(a.vkResetCommandBuffer(cmd, 0), "resetting a command buffer");
  bound_[cmd].clear();
  lost_binding_.erase(cmd);
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = once ? VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT : 0;
  check(a.vkBeginCommandBuffer(cmd, &bi), "beginning a command buffer");
}

void Context::note_freed(uint64_t serial) {
  for (const auto& [cmd, serials] : bound_)
    if (serials.count(serial)) lost_binding_.insert(cmd);
}
void Context::submit_and_wait(std::span<const VkCommandBuffer> cmds) {
  for (VkCommandBuffer cmd : cmds)
    if (lost_binding_.count(cmd))
      throw Error("Vulkan: a recording binds a buffer that was freed before it ran (a jf bug: a buffer replaced while "
                  "a recording used it); not submitted");
  Api& a = api();
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = static_cast<uint32_t>(cmds.size());
  si.pCommandBuffers = cmds.data();
  submissions_++;
  check(a.vkQueueSubmit(queue_, 1, &si, fence_), "submitting work");
  check(a.vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), "waiting for the device");
  check(a.vkResetFences(device_, 1, &fence_), "resetting a fence");
}

void Context::run(const std::function<void(VkCommandBuffer)>& record) {
  record(begin());
  submit_and_wait();
}

}  // namespace jf::vulkan
