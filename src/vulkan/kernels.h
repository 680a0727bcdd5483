// Compute pipelines made from the embedded shaders on first use: each binds its buffers with push
// descriptors and takes its parameters as push constants.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "vulkan/context.h"

namespace jf::vulkan {

struct Kernel {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t bindings = 0;
  std::string name;  // the shader's, and its constants' (a profile's rows)
  bool captured = false;  // made with the driver's statistics kept (Kernels::statistics)
  std::string shader;     // the embedded shader it was made from (a software device's `_rolled` twin, where one is)
};

// A pipeline to make: Kernels::get's arguments.
struct KernelSpec {
  std::string name;
  uint32_t bindings = 0;
  std::vector<uint32_t> constants;
  std::string label;
};

class Kernels {
 public:
  // capture_statistics: pipelines keep what the driver compiled them to, where it says (a kernel sweep's own
  // pipelines; a forward's do without).
  explicit Kernels(Context& ctx, bool capture_statistics = false)
      : ctx_(ctx), capture_(capture_statistics && ctx.pipeline_statistics()) {}
  ~Kernels();
  Kernels(const Kernels&) = delete;
  Kernels& operator=(const Kernels&) = delete;
  // The pipeline of shader `name` (see shader_blobs.h) with `bindings` storage buffers and `constants` as its
  // specialization constants 0, 1, ... (32-bit each), named `label` in profiles; throws when the shader is
  // not embedded. A software device gets the shader's `_rolled` twin where one is embedded (common.glsl's UNROLL).
  const Kernel& get(const std::string& name, uint32_t bindings, const std::vector<uint32_t>& constants = {},
                    const std::string& label = "");
  // Makes the pipelines of `specs` not made yet, several at once (a GPU driver may take a tenth of a second
  // to compile one: a sweep of the matrix-kernel family makes hundreds), so that get() then finds them.
  void prepare(const std::vector<KernelSpec>& specs);
  // On a software device, make the GPUs' unrolled shaders from now on, not their `_rolled` twins (tests
  // compare the two).
  void run_unrolled() { unrolled_ = true; }
  // What the driver compiled `k` to, as "name value" pairs joined by ", " (its registers, spills,
  // instructions, ...: the names are the driver's own); "" where it does not say or `k` was not captured.
  std::string statistics(const Kernel& k) const;
  // The same, for a name that is a string literal: found by its address after the first call (recording a
  // forward, or writing its key, looks kernels up hundreds of times).
  const Kernel& get(const char* literal, uint32_t bindings) {
    for (const auto& [at, k] : by_address_)
      if (at == literal) return *k;
    const Kernel& k = get(std::string(literal), bindings);
    by_address_.emplace_back(literal, &k);
    return k;
  }

 private:
  Kernel make(const KernelSpec& s, const std::string& key) const;

  Context& ctx_;
  bool capture_ = false, unrolled_ = false;
  std::map<std::string, Kernel> kernels_;
  std::vector<std::pair<const char*, const Kernel*>> by_address_;
};

}  // namespace jf::vulkan
