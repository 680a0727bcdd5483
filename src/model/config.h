// Model hyper-parameters, read from the model file (never hard-coded), validated in one place.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace jf {

class GgufMetadata;

enum class Arch { Llama, Qwen2 };
std::string arch_name(Arch a);
bool arch_from_name(const std::string& name, Arch* out);  // "llama", "qwen2"

struct ModelConfig {
  Arch arch = Arch::Llama;
  std::string name;
  int vocab_size = 0;
  int dim = 0;         // embedding width
  int n_layers = 0;
  int n_heads = 0;
  int n_kv_heads = 0;  // GQA: n_heads % n_kv_heads == 0
  int head_dim = 0;
  int ffn_dim = 0;
  int context_length = 0;  // trained context
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  int rope_dim = 0;              // rotated dims per head (<= head_dim)
  RopeStyle rope_style = RopeStyle::Interleaved;
  float rope_freq_scale = 1.0f;  // linear position scaling (1 / factor)
  std::vector<float> rope_freq_factors;  // Llama-3.1 style per-frequency divisors (empty: none)
  bool attn_bias = false;        // q/k/v projections carry biases (Qwen2)
  bool tied_output = false;      // output head shares the token embedding

  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
  // Throws jf::Error naming the first inconsistent value.
  void validate() const;
  std::string summary() const;  // one line for logs and `jf inspect`
};

// Reads `{arch}.*` keys (llama.cpp conventions). Tensor-dependent fields (vocab_size, tied_output,
// attn_bias) are filled by the weight binder.
ModelConfig config_from_gguf(const GgufMetadata& meta);
// Writes the same keys back (for conversion and checkpoints).
void config_to_gguf(const ModelConfig& cfg, GgufMetadata& meta);

// Angles for one position: cos/sin of pos * scale * freq_i for i < rope_dim / 2.
void rope_angles(const ModelConfig& cfg, int32_t pos, float* cos, float* sin);

}  // namespace jf
