#include "vulkan/kernels.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <thread>
#include <vector>

#include "base/error.h"
#include "vulkan/shader_blobs.h"

namespace jf::vulkan {

namespace {
constexpr uint32_t kPushBytes = 128;  // every device offers at least this much push-constant space
}

Kernels::~Kernels() {
  Api& a = api();
  for (auto& [name, k] : kernels_) {
    a.vkDestroyPipeline(ctx_.device(), k.pipeline, nullptr);
    a.vkDestroyPipelineLayout(ctx_.device(), k.layout, nullptr);
    a.vkDestroyDescriptorSetLayout(ctx_.device(), k.set_layout, nullptr);
  }
}

namespace {
std::string key_of(const std::string& name, const std::vector<uint32_t>& constants) {
  std::string key = name;
  for (uint32_t c : constants) key.append(1, ' ').append(std::to_string(c));
  return key;
}
}  // namespace

const Kernel& Kernels::get(const std::string& name, uint32_t bindings, const std::vector<uint32_t>& constants, const std::string& label) {
  const std::string key = key_of(name, constants);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second;
  return kernels_.emplace(key, make({name, bindings, constants, label}, key)).first->second;
}

void Kernels::prepare(const std::vector<KernelSpec>& specs) {
  std::vector<std::pair<const KernelSpec*, std::string>> todo;
  for (const KernelSpec& s : specs) {
    std::string key = key_of(s.name, s.constants);
    if (!kernels_.count(key) && std::none_of(todo.begin(), todo.end(), [&](const auto& t) { return t.second == key; }))
      todo.emplace_back(&s, std::move(key));
  }
  std::vector<Kernel> made(todo.size());
  std::vector<std::exception_ptr> failed(todo.size());
  std::atomic<size_t> next{0};
  const auto work = [&] {  // (making pipelines and modules is thread-safe on one device)
    for (size_t i; (i = next++) < todo.size();) {
      try {
        made[i] = make(*todo[i].first, todo[i].second);
      } catch (...) {
        failed[i] = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  const size_t n = std::min<size_t>({todo.size(), std::max(1u, std::thread::hardware_concurrency()), 16});
  for (size_t t = 1; t < n; t++) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < todo.size(); i++)
    if (!failed[i]) kernels_.emplace(todo[i].second, made[i]);
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
}

Kernel Kernels::make(const KernelSpec& s, const std::string& key) const {
  const ShaderBlob* blob = nullptr;
  const std::string rolled = s.name + "_rolled";  // (a software device's twin, where the shader has one)
  for (size_t i = 0; i < kShaderCount; i++)
    if (s.name == kShaders[i].name || (ctx_.info().software && !unrolled_ && rolled == kShaders[i].name)) {
      blob = &kShaders[i];
      if (rolled == kShaders[i].name) break;
    }
  if (!blob) throw Error("Vulkan: no shader '" + s.name + "' in this build");
  const std::string& name = s.name;
  const uint32_t bindings = s.bindings;
  const std::vector<uint32_t>& constants = s.constants;
  Api& a = api();
  VkDevice dev = ctx_.device();
  Kernel k;
  k.bindings = bindings;
  k.shader = blob->name;
  k.name = s.label.empty() ? key : name + " " + s.label;
  std::vector<VkDescriptorSetLayoutBinding> b(bindings);
  for (uint32_t i = 0; i < bindings; i++)
    b[i] = VkDescriptorSetLayoutBinding{i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  li.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  li.bindingCount = bindings;
  li.pBindings = b.data();
  check(a.vkCreateDescriptorSetLayout(dev, &li, nullptr, &k.set_layout), "creating a descriptor set layout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes};
  VkPipelineLayoutCreateInfo pi{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pi.setLayoutCount = 1;
  pi.pSetLayouts = &k.set_layout;
  pi.pushConstantRangeCount = 1;
  pi.pPushConstantRanges = &range;
  check(a.vkCreatePipelineLayout(dev, &pi, nullptr, &k.layout), "creating a pipeline layout");
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = blob->count * 4;
  mi.pCode = blob->words;
  VkShaderModule module = VK_NULL_HANDLE;
  check(a.vkCreateShaderModule(dev, &mi, nullptr, &module), ("loading shader " + name).c_str());
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage = VkPipelineShaderStageCreateInfo{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  std::vector<VkSpecializationMapEntry> entries;
  for (uint32_t i = 0; i < constants.size(); i++) entries.push_back({i, 4 * i, 4});
  const VkSpecializationInfo spec{static_cast<uint32_t>(entries.size()), entries.data(), 4 * constants.size(), constants.data()};
  if (!constants.empty()) ci.stage.pSpecializationInfo = &spec;
  ci.layout = k.layout;
  if (capture_) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  k.captured = capture_;
  const VkResult r = a.vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &ci, nullptr, &k.pipeline);
  a.vkDestroyShaderModule(dev, module, nullptr);
  check(r, ("compiling shader " + name).c_str());
  return k;
}

namespace {
std::string statistic_value(const VkPipelineExecutableStatisticKHR& s) {
  switch (s.format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: return s.value.b32 ? "yes" : "no";
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: return std::to_string(s.value.i64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: return std::to_string(s.value.u64);
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR: {
      char v[32];
      std::snprintf(v, sizeof v, "%g", s.value.f64);
      return v;
    }
    default: return "?";
  }
}
}  // namespace

std::string Kernels::statistics(const Kernel& k) const {
  if (!k.captured) return "";
  Api& a = api();
  VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pi.pipeline = k.pipeline;
  uint32_t executables = 0;
  if (a.vkGetPipelineExecutablePropertiesKHR(ctx_.device(), &pi, &executables, nullptr) != VK_SUCCESS) return "";
  std::string out;
  for (uint32_t e = 0; e < executables; e++) {  // (a compute pipeline: one, or a driver's few stages)
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = k.pipeline;
    ei.executableIndex = e;
    uint32_t n = 0;
    if (a.vkGetPipelineExecutableStatisticsKHR(ctx_.device(), &ei, &n, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> stats(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    if (a.vkGetPipelineExecutableStatisticsKHR(ctx_.device(), &ei, &n, stats.data()) < 0) continue;
    for (uint32_t i = 0; i < n; i++) out += (out.empty() ? "" : ", ") + std::string(stats[i].name) + " " + statistic_value(stats[i]);
  }
  return out;
}

}  // namespace jf::vulkan
