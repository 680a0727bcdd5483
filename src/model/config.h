// Model hyper-parameters, read from the model file (never hard-coded), validated in one place.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/ops.h"

namespace jf {

class GgufMetadata;

enum class Arch { Llama, Qwen2, Qwen3, Phi3, Gemma2, Gemma3 };
std::string arch_name(Arch a);
bool arch_from_name(const std::string& name, Arch* out);  // "llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"
std::string supported_arch_names();                         // "llama, qwen2, ..." for error messages

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
  bool draft_head = false;       // has jf's draft head ("draft_output.weight", decode/jacobi.h)
  // has jf's draft layer ("draft_blk.*" and "draft_output_norm.weight"): one more transformer layer on the
  // final residual stream, feeding the draft head only (needs draft_head; its keys and values take one more
  // layer in the KV cache)
  bool draft_layer = false;
  // Draft tokens after the draft layer's first that its file says it was trained to chain ("jf.draft_chain",
  // ForwardResult::chain): the layer run again on its own output and draft, one position further each.
  int draft_chain = 0;
  // LongRoPE (phi3): per-frequency divisors for a context up to rope_orig_context (short) and beyond it
  // (long), chosen by the KV cache's capacity as llama.cpp chooses by its context size; both empty: none.
  std::vector<float> rope_factors_short, rope_factors_long;
  int rope_orig_context = 0;
  float rope_attn_factor = 1.0f;  // multiplies every cos and sin (so q.k by its square), as llama.cpp does
  // YaRN (rope.scaling.type yarn): rope_freq_scale is 1 / factor for the low frequencies only, blended into
  // the unscaled high ones between the dims where rope_orig_context spans beta_fast and beta_slow turns.
  bool rope_yarn = false;
  float rope_yarn_beta_fast = 32.0f, rope_yarn_beta_slow = 1.0f;
  // Gemma: attention layers alternate between a sliding window and the whole context.
  int sliding_window = 0;        // a local layer's token sees positions p - sliding_window < q <= p; 0: none
  int sliding_period = 0;        // layer l is local when l % sliding_period != sliding_period - 1 (gemma2: 2)
  float rope_theta_local = 0.0f; // RoPE base of local layers, without scaling (gemma3: 10000); 0: rope_theta
  float attn_softcap = 0.0f;     // scores -> c * tanh(scores / c) before the softmax (gemma2); 0: none
  float final_softcap = 0.0f;    // the same on the output logits
  float query_scale = 0.0f;      // attention scale applied to q (gemma: 1 / sqrt(query_pre_attn_scalar)); 0: 1/sqrt(head_dim)

  int q_dim() const { return n_heads * head_dim; }
  int kv_dim() const { return n_kv_heads * head_dim; }
  int kv_layers() const { return n_layers + (draft_layer ? 1 : 0); }  // layers the KV cache holds
  int gqa_ratio() const { return n_kv_heads > 0 ? n_heads / n_kv_heads : 1; }  // query heads per key-value head
  // What the architecture computes differently from Llama (one place, read by the binder and the forward).
  bool qk_norm() const { return arch == Arch::Qwen3 || arch == Arch::Gemma3; }  // RMSNorm per head on q, k
  bool fused_qkv_ffn() const { return arch == Arch::Phi3; }  // attn_qkv and ffn_up = [gate; up] tensors
  bool gemma() const { return arch == Arch::Gemma2 || arch == Arch::Gemma3; }  // scaled embeddings, GeGLU, post norms
  bool local_layer(int l) const { return sliding_window > 0 && sliding_period > 0 && l % sliding_period != sliding_period - 1; }
  float attention_scale() const;
  // Throws jf::Error naming the first inconsistent value.
  void validate() const;
  std::string summary() const;  // one line for logs and `jf inspect`
};

// Reads `{arch}.*` keys (llama.cpp conventions). Tensor-dependent fields (vocab_size, tied_output,
// attn_bias) are filled by the weight binder.
ModelConfig config_from_gguf(const GgufMetadata& meta);
// Writes the same keys back (for conversion and checkpoints).
void config_to_gguf(const ModelConfig& cfg, GgufMetadata& meta);

// The RoPE style GGUF files of this architecture use (llama: interleaved pairs; the others: NEOX).
RopeStyle gguf_rope_style(Arch a);

// One table of rotary frequencies: what differs between a model's global and local layers (gemma3) and
// between LongRoPE's short and long factors (phi3).
struct RopeTable {
  float theta = 10000.0f;
  float freq_scale = 1.0f;            // linear position scaling
  const float* factors = nullptr;     // rope_dim / 2 divisors of the frequencies, or null
  float mscale = 1.0f;                // multiplies cos and sin
  // YaRN: dims i (of rope_dim / 2) below yarn_low keep the unscaled angle, above yarn_high take the scaled
  // one, a linear ramp between; mscale then also carries 1 + 0.1 ln(1 / freq_scale). Off when !yarn.
  bool yarn = false;
  float yarn_low = 0.0f, yarn_high = 0.0f;
};
// The table of global layers for a sequence whose cache holds `context` slots, and of local layers.
RopeTable rope_table(const ModelConfig& cfg, int context);
RopeTable local_rope_table(const ModelConfig& cfg);

// Angles for one position: cos/sin of pos * scale * freq_i for i < rope_dim / 2 (times mscale).
void rope_angles(const RopeTable& t, int rope_dim, int32_t pos, float* cos, float* sin);
// The global layers' table of a model without LongRoPE (training, tests).
void rope_angles(const ModelConfig& cfg, int32_t pos, float* cos, float* sin);

// Llama-3.1 ("rope_type": "llama3") per-frequency divisors for rope_dim / 2 frequencies.
std::vector<float> llama3_rope_freq_factors(float rope_theta, int rope_dim, double factor, double low_freq_factor,
                                            double high_freq_factor, double original_context);

}  // namespace jf
