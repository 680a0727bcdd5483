// The weights of a decoder transformer (llama, qwen2/3, phi3, gemma2/3), bound by name (GGUF naming) from
// whatever file they came from.
#pragma once
#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "model/config.h"

namespace jf {

// A named tensor in memory (mapped file or owned buffer). dims in GGML order (dims[0] contiguous).
struct TensorRef {
  DType type = DType::F32;
  std::vector<int64_t> dims;
  const void* data = nullptr;
  int64_t n_elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  size_t nbytes() const { return dtype_row_bytes(type, n_elements()); }
};

// Name -> tensor, in GGUF naming ("token_embd.weight", "blk.0.attn_q.weight", ...), plus any buffers the
// loader had to create (e.g. converted or permuted tensors).
struct TensorSet {
  std::map<std::string, TensorRef> tensors;
  std::vector<std::shared_ptr<std::vector<uint8_t>>> owned;
  const TensorRef* find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  }
  // Copies `bytes` into an owned buffer and registers it under `name`.
  void add_owned(const std::string& name, DType type, std::vector<int64_t> dims, std::vector<uint8_t> bytes);
};

struct LayerWeights {
  const float* attn_norm = nullptr;
  WeightMatrix wq, wk, wv, wo;
  const float* bq = nullptr;  // biases (Qwen2), null when absent
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* q_norm = nullptr;  // per-head RMSNorm weights, head_dim values (qwen3, gemma3), null when absent
  const float* k_norm = nullptr;
  const float* post_attn_norm = nullptr;  // gemma: RMSNorm of the attention output before the residual add
  const float* ffn_norm = nullptr;
  const float* post_ffn_norm = nullptr;   // gemma: the same for the feed-forward output
  // phi3 stores attn_qkv and ffn_up = [gate; up] fused: wq/wk/wv and w_gate/w_up are then row ranges of
  // those tensors (no copy), so every matrix still goes through the same kernels and panels.
  WeightMatrix w_gate, w_up, w_down;
  // All seven matrices, for code that treats them alike (packing, byte counts).
  std::array<WeightMatrix*, 7> matrices() { return {&wq, &wk, &wv, &wo, &w_gate, &w_up, &w_down}; }
  std::array<const WeightMatrix*, 7> matrices() const { return {&wq, &wk, &wv, &wo, &w_gate, &w_up, &w_down}; }
};

struct ModelWeights {
  WeightMatrix tok_embd;  // vocab x dim (rows are embeddings)
  const float* output_norm = nullptr;
  WeightMatrix output;  // vocab x dim (may alias tok_embd)
  // Optional second head on the same final hidden state ("draft_output.weight", vocab x dim; data null when
  // absent): Jacobi decoders take their next drafts from it and verify them with `output`, so the output
  // stays the model's own (docs/TRAINING.md, "A draft head").
  WeightMatrix draft_output;
  // Optional draft layer ("draft_blk.*"): a transformer layer on the final residual stream plus
  // draft_token_scale * the embedding of the model's greedy next token there; its output, normalised by
  // draft_output_norm, feeds the draft head, which then predicts the token after that greedy one
  // (ForwardPass::draft_shift). It keeps its keys and values in the KV cache's last layer
  // (ModelConfig::kv_layers). Null norm: absent.
  LayerWeights draft_layer;
  const float* draft_token_scale = nullptr;
  const float* draft_output_norm = nullptr;
  std::vector<LayerWeights> layers;
  std::vector<std::vector<float>> f32_vectors;  // norms and biases converted to fp32
  std::vector<PageBuffer> packed;               // panel copies of matrices (see pack_matrices)
};

// Checks every tensor's presence, type and shape against `cfg`, completes cfg (vocab_size, tied_output,
// attn_bias, rope_freq_factors, LongRoPE factors) and returns the bound weights. Throws jf::Error naming the tensor.
ModelWeights bind_weights(const TensorSet& ts, ModelConfig& cfg);

// Gives the layer and output matrices a second copy in the panel layout of kernels/matmul.h, which the
// SIMD kernels use instead of the row-major weights:
//   - Q8_0 matrices: Q8_0 panels, whose kernels multiply int8-quantized activations (kernels/matmul.h
//     Q8Rows); 1.3-2.5x faster than fp32 panels even for small matrices (docs/BENCHMARKS.md);
//   - other matrices with at most kPackMaxCols input features: fp32 panels (up to 32 MB in all), 1.3-3x
//     faster than the row-major kernels at these sizes;
//   - the rest: panels in the matrix's own type (same size), 1.3-2.2x faster on AVX2 and AVX-512 up to
//     8-16 rows.
// The weights' values are unchanged; only the summation order of the SIMD kernels differs (still the same
// for every row, so batch invariance holds), and Q8_0 matrices multiply int8 activations.
// `packed(m)` is called after each matrix gets its copy (the caller may release the original's memory).
// build = false only records each matrix's panel type (for the scalar kernels, which read the row-major
// weights but must compute what the SIMD ones do: int8 activations for the Q8_0 ones).
void pack_matrices(ModelWeights& w, const std::function<void(const WeightMatrix&)>& packed = {}, bool build = true);

// Names of the tensors a model with this config has, in canonical order (used by writers).
std::vector<std::string> tensor_names(const ModelConfig& cfg);

}  // namespace jf
