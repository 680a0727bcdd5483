// Row operations that only some architectures use (qwen3's and gemma3's q/k norms, gemma2's soft-capped
// attention, sliding windows): plain code over one row, so a row's result never depends on its batch. (GeGLU and
// the soft-cap itself are vector kernels: kernels/ops.h gelu_tanh_mul, softcap.)
#pragma once
#include <cstdint>

#include "kernels/ops.h"

namespace jf {

// RMSNorm of each of n_heads vectors of head_dim values with the same head_dim weights, in place.
void head_rmsnorm(float* v, int n_heads, int head_dim, const float* weight, float eps);

// Attention of one query head whose scores are soft-capped (gemma2): s_j = softcap(q . k_j * scale, cap),
// out = sum_j softmax_j(s) v_j over the listed slots, in list order. keys / v as for attend_head in
// kernels/ops.h (keys in the blocked layout, values slot after slot), stored as E = float or uint16_t (fp16);
// scores: n floats of scratch. A slot's score depends only on q and its key, and the list is reduced
// in its order, so the same list gives the same bits.
template <class E>
void attend_softcapped(const float* q, const E* keys, const E* v, int head_dim, const int32_t* slots, int64_t n,
                       float scale, float cap, float* scores, float* out);

// Whether a query at position query_pos sees a key at key_pos through a sliding window of `window`
// positions (0: no window): the key lies in (query_pos - window, query_pos]. Positions, not cache slots,
// decide, so speculative rows placed anywhere in the cache see what the same token sees in plain decoding.
inline bool in_sliding_window(int32_t query_pos, int32_t key_pos, int window) {
  return window <= 0 || query_pos - key_pos < window;
}

}  // namespace jf
