#include "vulkan/loader.h"

#include <dlfcn.h>

#include <string>

#include "base/error.h"

namespace jf::vulkan {

namespace {
PFN_vkGetInstanceProcAddr get_proc = nullptr;

const char* result_name(VkResult r) {
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "out of host memory";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "out of device memory";
    case VK_ERROR_INITIALIZATION_FAILED: return "initialization failed";
    case VK_ERROR_DEVICE_LOST: return "device lost";
    case VK_ERROR_MEMORY_MAP_FAILED: return "memory map failed";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "extension not present";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "feature not present";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "incompatible driver (no Vulkan driver installed?)";
    case VK_ERROR_TOO_MANY_OBJECTS: return "too many objects";
    case VK_TIMEOUT: return "timeout";
    default: return "error";
  }
}
}  // namespace

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) throw Error(std::string("Vulkan: ") + what + " failed (" + result_name(r) + ", " + std::to_string(r) + ")");
}

Api& api() {
  static Api a;
  static const bool loaded = [] {
    void* lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) return false;
    get_proc = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!get_proc) return false;
#define JF_VK_LOAD(name) a.name = reinterpret_cast<PFN_##name>(get_proc(nullptr, #name));
    JF_VK_GLOBAL_FUNCTIONS(JF_VK_LOAD)
#undef JF_VK_LOAD
    return a.vkCreateInstance != nullptr;
  }();
  if (!loaded)
    throw Error("Vulkan: no Vulkan loader (libvulkan.so.1) on this machine; install libvulkan1 and a driver "
                "(Debian: mesa-vulkan-drivers), or use --device cpu");
  return a;
}

void load_instance_functions(VkInstance instance) {
  Api& a = api();
  if (a.vkDestroyInstance) return;
#define JF_VK_LOAD(name) a.name = reinterpret_cast<PFN_##name>(get_proc(instance, #name));
  JF_VK_FUNCTIONS(JF_VK_LOAD)
#undef JF_VK_LOAD
}

}  // namespace jf::vulkan
