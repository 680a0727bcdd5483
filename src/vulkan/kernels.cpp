#include "vulkan/kernels.h"

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

const Kernel& Kernels::get(const std::string& name, uint32_t bindings, const std::vector<uint32_t>& constants, const std::string& label) {
  std::string key = name;
  for (uint32_t c : constants) key.append(1, ' ').append(std::to_string(c));
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return it->second;
  const ShaderBlob* blob = nullptr;
  for (size_t i = 0; i < kShaderCount; i++)
    if (name == kShaders[i].name) blob = &kShaders[i];
  if (!blob) throw Error("Vulkan: no shader '" + name + "' in this build");
  Api& a = api();
  VkDevice dev = ctx_.device();
  Kernel k;
  k.bindings = bindings;
  k.name = label.empty() ? key : name + " " + label;
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
  const VkResult r = a.vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &ci, nullptr, &k.pipeline);
  a.vkDestroyShaderModule(dev, module, nullptr);
  check(r, ("compiling shader " + name).c_str());
  return kernels_.emplace(key, k).first->second;
}

}  // namespace jf::vulkan
