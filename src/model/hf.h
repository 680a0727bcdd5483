// Hugging Face model directories: config.json + *.safetensors (+ model.safetensors.index.json) +
// tokenizer.json, for the Llama, Qwen2, Qwen3, Phi-3, Gemma 2 and Gemma 3 architectures (of a multimodal
// Gemma 3 checkpoint, its text model); and the re-layout that turns such weights into what GGUF files of the
// same architecture expect.
#pragma once
#include <string>

#include "model/config.h"
#include "model/loader.h"
#include "model/weights.h"

namespace jf {

// Reads config.json, maps the safetensors weights (zero-copy; the files stay mapped for the model's
// lifetime) and loads tokenizer.json when present (tokenizer null otherwise), its vocabulary padded with
// unused tokens to the model's. The model keeps HF's rotate-half RoPE layout: config().rope_style ==
// RopeStyle::Neox. Notes say what was left out (a multimodal checkpoint's image encoder). Throws jf::Error
// naming file and key.
LoadedModel load_hf_model(const std::string& dir);

// Just the config.json part (exposed for tools and tests).
ModelConfig config_from_hf(const std::string& dir);

// Tensors laid out as GGUF's `cfg.arch` expects: GGUF `llama` rotates interleaved pairs, so Q/K rows (and
// biases) of a Neox-layout Llama are permuted per head, as llama.cpp's converter does; the other
// architectures are Neox. Unchanged tensors are shared with `ts`; permuted ones are owned by the result.
// Works for every DType (rows move whole). Adds rope_freqs.weight / rope_factors_{long,short}.weight when cfg
// has frequency factors. *out_cfg gets the new style.
TensorSet to_gguf_layout(const ModelConfig& cfg, const TensorSet& ts, ModelConfig* out_cfg);

}  // namespace jf
