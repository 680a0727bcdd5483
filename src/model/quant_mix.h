// Which weight type each tensor of a model gets when converting or generating one: a single type for every
// matrix, or one of GGML's file types ("q4_k_m", ...) with the reference quantizer's per-tensor mix, so a
// file jf writes has the tensor types of the file the reference tools write from the same weights.
#pragma once
#include <string>

#include "kernels/dtype.h"

namespace jf {

struct WeightScheme {
  enum class Mix { Pure, File, Q4KM, Q4KS, Q5KM };
  std::string name;
  DType base = DType::F16;
  Mix mix = Mix::Pure;  // Pure: every matrix in `base`; File: `base` with the output in Q6_K; the K mixes
};

// "f32", "f16", "bf16", "q8_0", "q4_0", "q2_k", "q3_k", "q4_k", "q5_k" (every matrix that type; q2_k and q3_k
// are not GGML's file types of those names, whose mixes are not implemented), "q4_k_m", "q4_k_s", "q5_k_m",
// "q6_k", "q4_1", "q5_0", "q5_1" (GGML's file types). Any case. False for anything else.
bool weight_scheme_from_name(const std::string& name, WeightScheme* out);
WeightScheme pure_scheme(DType t);
// The accepted names, for help texts and errors.
const char* weight_scheme_names();

// The type of 2-D tensor `name` with rows of `cols` values in a model of n_layers layers (has_output:
// whether output.weight exists; without it the tied token_embd takes the output's type):
//   output (or tied token_embd): Q6_K for the file types; attn_v and ffn_down of the layers where
//   i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2: Q6_K (q4_k_m, q5_k_m); q4_k_s: Q5_K for attn_v of layers
//   0-3 and ffn_down of layers below n/8; attn_qkv (fused): Q5_K (q4_k_m) / Q6_K (q5_k_m); the rest `base`.
// Then the reference's fallbacks for rows that do not fit the type's blocks (see fallback_for_width).
DType scheme_tensor_type(const WeightScheme& s, const std::string& name, int64_t cols, int n_layers, bool has_output);

// A type whose blocks do not divide `cols`: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, then F16 when even 32
// does not divide it. Others unchanged.
DType fallback_for_width(DType t, int64_t cols);

}  // namespace jf
