// Randomly initialised models of any shape and weight type: the test oracles for batch invariance and the
// realistic-size models for speed measurements (a forward's cost does not depend on the weights' values).
#pragma once
#include <memory>
#include <string>

#include "model/model.h"
#include "model/quant_mix.h"

namespace jf {

// Tensors for `cfg` (tied_output / attn_bias / rope_freq_factors / draft_head decide which exist), matrices of type
// `type`, norms and biases fp32. Values uniform with variance 1/fan_in, so activations stay in a realistic range.
TensorSet random_tensors(const ModelConfig& cfg, DType type, uint64_t seed);
// The same with each matrix's type from a scheme (scheme_tensor_type): GGML's file types' mixes. row_pool > 0:
// each matrix draws and quantizes that many rows and repeats them in a scrambled order (a forward costs the
// same, and an 8B file is written in seconds rather than minutes: speed files only).
TensorSet random_tensors(const ModelConfig& cfg, const WeightScheme& scheme, uint64_t seed, int64_t row_pool = 0);
std::unique_ptr<Model> random_model(const ModelConfig& cfg, DType type, uint64_t seed);

// Named shapes: "tiny" (tests), "llama-1b" (TinyLlama-1.1B shape), "llama-8b" (Llama 3.1 8B's layers), "qwen2-0.5b" (Qwen2.5-0.5B shape), and for
// the other architectures tiny test shapes ("<arch>-tiny": qwen2, qwen3, phi3 with partial rotary and LongRoPE,
// gemma2 / gemma3 with windows of 8) and real ones ("qwen3-0.6b", "phi3-mini", "gemma3-1b"). Throws jf::Error
// for an unknown name.
ModelConfig preset_config(const std::string& name);

}  // namespace jf
