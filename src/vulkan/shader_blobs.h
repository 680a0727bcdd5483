// The compute shaders, compiled from src/vulkan/shaders to SPIR-V at build time and embedded in the binary.
#pragma once
#include <cstddef>
#include <cstdint>

namespace jf::vulkan {

struct ShaderBlob {
  const char* name;  // e.g. "matmul_q4_k", "attention_f16"
  const uint32_t* words;
  size_t count;
};
extern const ShaderBlob kShaders[];
extern const size_t kShaderCount;

}  // namespace jf::vulkan
