// Changing a model's weight type and writing models as GGUF (conversion, quantization, checkpoints).
#pragma once
#include <string>

#include "formats/gguf.h"
#include "model/config.h"
#include "model/quant_mix.h"
#include "model/weights.h"

namespace jf {

// Converts every 2-D weight matrix to `type` (1-D norms/biases stay fp32). Q8_0 needs rows that are a
// multiple of 32 elements; matrices that are not are kept in F16 (noted in `*kept`, if given).
TensorSet convert_tensors(const TensorSet& src, DType type, std::vector<std::string>* kept = nullptr);
// Converts every 2-D matrix to the scheme's type for it (scheme_tensor_type for the model `cfg`: its layers,
// query heads per key-value head, the reference's 70B class); `notes` (if given) gets a line for each matrix
// that took a fallback type because of its row length.
TensorSet convert_tensors(const TensorSet& src, const WeightScheme& scheme, const ModelConfig& cfg,
                          std::vector<std::string>* notes = nullptr);

// Writes config + tensors (+ extra metadata such as the tokenizer's keys) as a GGUF v3 file, atomically.
void write_model_gguf(const std::string& path, const ModelConfig& cfg, const TensorSet& tensors,
                      const GgufMetadata& extra_meta);

}  // namespace jf
