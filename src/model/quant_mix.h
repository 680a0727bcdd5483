// Which weight type each tensor of a model gets when converting or generating one: a single type for every
// matrix, or one of GGML's file types ("q4_k_m", ...) with the reference quantizer's per-tensor mix, so a
// file jf writes has the tensor types of the file the reference tools write from the same weights.
#pragma once
#include <string>

#include "kernels/dtype.h"
#include "model/config.h"

namespace jf {

struct WeightScheme {
  enum class Mix { Pure, File, Q2K, Q3KS, Q3KM, Q3KL, Q4KM, Q4KS, Q5KM, IQ4 };
  std::string name;
  DType base = DType::F16;
  Mix mix = Mix::Pure;  // Pure: every matrix in `base`; File: `base` with the output in Q6_K; the K mixes
  int file_type = -1;   // GGUF's general.file_type, -1 if none
};

// "f32", "f16", "bf16", "q8_0", "q3_k", "q4_k", "q5_k" (every matrix that type), "q4_0", "q4_1", "q5_0", "q5_1",
// "q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m", "q6_k", "iq4_nl", "iq4_xs" (GGML's
// file types, as llama.cpp's quantizer mixes them). Any case. False for anything else.
bool weight_scheme_from_name(const std::string& name, WeightScheme* out);
WeightScheme pure_scheme(DType t);
// The accepted names, for help texts and errors.
const char* weight_scheme_names();

// The type of 2-D tensor `name` with rows of `cols` values in a model of n_layers layers (has_output:
// whether output.weight exists; without it the tied token_embd takes the output's type; n_gqa: query heads
// per key-value head), the reference quantizer's rules for a non-Falcon model without experts:
//   output (or tied token_embd): Q6_K for the file types.
//   attn_v: q2_k Q4_K when n_gqa >= 4, else Q3_K; q3_k_m Q5_K on the first two layers, then Q4_K; q3_k_l Q5_K;
//     q4_k_m / q5_k_m Q6_K on the "more bits" layers (i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2); q4_k_s Q5_K
//     on layers 0-3; iq4_nl / iq4_xs Q5_K when n_gqa >= 4.
//   ffn_down: q2_k Q3_K; q3_k_m Q5_K below n/16, then Q4_K; q3_k_l Q5_K; q4_k_m / q5_k_m Q6_K on the "more
//     bits" layers; q4_k_s and iq4_nl / iq4_xs Q5_K below n/8.
//     In the reference's 70B class (class_70b) an attn_v that would be Q3_K or Q4_K is Q5_K.
//   attn_qkv (fused): attn_v's rules (current llama.cpp sorts it with attn_v).
//   attn_output: q2_k Q3_K, q3_k_m Q4_K, q3_k_l Q5_K.  The rest `base`.
// Then the fallbacks for rows that do not fit the type's blocks (see fallback_for_width).
DType scheme_tensor_type(const WeightScheme& s, const std::string& name, int64_t cols, int n_layers, bool has_output,
                         int n_gqa = 1, bool class_70b = false);

// The models the reference quantizer gives a 70B's attn_v bonus: 80 layers, llama with grouped keys and values,
// or qwen2.
bool reference_70b_class(const ModelConfig& cfg);

// A type whose blocks do not divide `cols` (the reference's): Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K /
// Q3_K -> Q4_0, IQ4_XS -> IQ4_NL, then F16 when even 32 does not divide it. Others unchanged.
DType fallback_for_width(DType t, int64_t cols);

}  // namespace jf
