// Row operations that only some architectures use (qwen3's and gemma3's q/k norms, sliding windows): plain
// code over one row, so a row's result never depends on its batch. (Gemma's GeGLU and soft-caps are kernels:
// kernels/ops.h gelu_tanh_mul, softcap, and attend_group's cap.)
#pragma once
#include <cstdint>

#include "kernels/ops.h"

namespace jf {

// RMSNorm of each of n_heads vectors of head_dim values with the same head_dim weights, in place.
void head_rmsnorm(float* v, int n_heads, int head_dim, const float* weight, float eps);

// Whether a query at position query_pos sees a key at key_pos through a sliding window of `window`
// positions (0: no window): the key lies in (query_pos - window, query_pos]. Positions, not cache slots,
// decide, so speculative rows placed anywhere in the cache see what the same token sees in plain decoding.
inline bool in_sliding_window(int32_t query_pos, int32_t key_pos, int window) {
  return window <= 0 || query_pos - key_pos < window;
}

}  // namespace jf
