// Row-wise transformer operations: RMSNorm, RoPE, SwiGLU, softmax, argmax. Each function handles one
// row, so a row's result never depends on what else is in the batch.
#pragma once
#include <cstdint>

namespace jf {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * g[i]. out may alias x.
void rmsnorm(const float* x, const float* g, int64_t n, float eps, float* out);

// gate[i] = silu(gate[i]) * up[i], silu(v) = v / (1 + exp(-v)).
void silu_mul(float* gate, const float* up, int64_t n);

// gate[i] = gelu(gate[i]) * up[i], with the tanh approximation (gemma's GeGLU)
// gelu(x) = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
void gelu_tanh_mul(float* gate, const float* up, int64_t n);

// x[i] = cap * tanh(x[i] / cap): squashes values smoothly into (-cap, cap) (gemma2's soft-caps).
void softcap(float* x, int64_t n, float cap);

// y[i] += x[i]
void add_inplace(float* y, const float* x, int64_t n);

enum class RopeStyle {
  Interleaved,  // rotates pairs (2i, 2i+1): Meta / llama2.c / GGML "normal" layout
  Neox,         // rotates pairs (i, i + d/2): Hugging Face rotate_half / GGML "neox"
};

// Rotates the first rope_dim dims of each of n_heads vectors of size head_dim, in place.
// cos/sin hold rope_dim/2 angles for this token's position.
void rope(float* v, int n_heads, int head_dim, int rope_dim, const float* cos, const float* sin, RopeStyle style);

// Index of the largest value (lowest index on ties; NaN never wins).
int64_t argmax(const float* x, int64_t n);

// The k largest entries of softmax(x) over n values (k <= n), largest first, the lower index first among
// equals: their indices and probabilities. NaN counts as the smallest.
void softmax_top_k(const float* x, int64_t n, int k, int32_t* ids, float* probs);

// Keys of one attention head are stored in blocks of kKeyBlock slots, transposed within a block: element i of
// slot s's key is at keys[key_offset(s, i, head_dim)]. A vector load then holds dimension i of 8 (AVX2) or 16
// (AVX-512) consecutive slots, so a block's scores are head_dim FMAs with no horizontal sums
// (model/kv_cache.h owns the storage).
inline constexpr int kKeyBlock = 16;
inline int64_t key_offset(int64_t slot, int i, int head_dim) {
  return (slot / kKeyBlock) * kKeyBlock * head_dim + i * kKeyBlock + slot % kKeyBlock;
}

// Scratch floats attention needs for `heads` query heads over n slots: each head's scores start on a
// 16-float boundary (a cache line when the scratch is cache-aligned), so its vector loads never straddle two.
inline int64_t score_stride(int64_t n) { return (n + 15) / 16 * 16; }
inline int64_t attention_scratch(int heads, int64_t n) { return heads * score_stride(n); }

// Attention of one query head over a compacted list of cache slots.
//   q: head_dim values (already RoPE'd); keys: this head's keys in the blocked layout above (readable for
//   whole blocks); v: value rows, slot s at v + s * v_stride; slots: the n visible slots; scores: scratch of
//   attention_scratch(1, n) floats.
// out = sum_j softmax_j(q . k_j * scale) v_j. A slot's score depends only on q and its key, and the list is
// reduced in the given order with a fixed tree, so the same slot sequence always gives the same bits.
void attend_head(const float* q, const float* keys, const float* v, int64_t v_stride, int head_dim,
                 const int32_t* slots, int64_t n, float scale, float* scores, float* out);

// The same for `heads` (<= kMaxGroup) query heads that share one kv head (a GQA group) and one slot list:
// q and out hold heads x head_dim values, scores is scratch of attention_scratch(heads, n) floats. Each head
// gets exactly attend_head's bits; the list is walked, and each key and value row read, once for the group.
// Keys and values are stored as E: float, or uint16_t holding fp16 (a KV cache of type F16), each element
// converted exactly on load, so the result is the float version's on the same values. The attention
// functions below that take E are instantiated for these two. cap > 0: each score s is soft-capped first,
// cap * tanh(s / cap) (gemma2), by `softcap`.
inline constexpr int kMaxGroup = 64;
template <class E>
void attend_group(const float* q, int heads, const E* keys, const E* v, int64_t v_stride, int head_dim,
                  const int32_t* slots, int64_t n, float scale, float* scores, float* out, float cap = 0.0f);

namespace scalar {
void rmsnorm(const float* x, const float* g, int64_t n, float eps, float* out);
void silu_mul(float* gate, const float* up, int64_t n);
void gelu_tanh_mul(float* gate, const float* up, int64_t n);
void softcap(float* x, int64_t n, float cap);
template <class E>
void attend_head(const float* q, const E* keys, const E* v, int64_t v_stride, int head_dim, const int32_t* slots,
                 int64_t n, float scale, float* scores, float* out, float cap = 0.0f);
int64_t argmax(const float* x, int64_t n);
}  // namespace scalar
namespace avx2 {
void rmsnorm(const float* x, const float* g, int64_t n, float eps, float* out);
void silu_mul(float* gate, const float* up, int64_t n);
// With avx2::tanh (kernels/simd_avx2.h): these and the AVX-512 kernel sets give the same bits.
void gelu_tanh_mul(float* gate, const float* up, int64_t n);
void softcap(float* x, int64_t n, float cap);
template <class E>
void attend_group(const float* q, int heads, const E* keys, const E* v, int64_t v_stride, int head_dim,
                  const int32_t* slots, int64_t n, float scale, float* scores, float* out, float cap = 0.0f);
int64_t argmax(const float* x, int64_t n);
// The last step of attend_group, shared with the AVX-512 version: out_h = sum_j p_h[j] v[slots[j]] / sum_h,
// where p_h = p + h * score_stride(n) and sum16 + 16 * h holds the 16 lane sums of head h's exponentials
// (lane l: list positions j = l mod 16, in list order).
template <class E>
void attend_values(const E* v, int64_t v_stride, int head_dim, const int32_t* slots, int64_t n, int heads,
                   const float* p, const float* sum16, float* out);
// inv[h] = 1 / (the sum of head h's 16 lane sums, in a fixed order): the softmax denominators.
void softmax_inverses(const float* sum16, int heads, float* inv);
// How many calls of attend_values (AVX2's, or AVX-512's through it) took the scalar loop kept for head
// sizes without a vector kernel: tests check that the models' head sizes never do.
int64_t attend_values_scalar_calls();
}  // namespace avx2
namespace avx512 {
// Scores, exponentials and (head_dim 16, 32, 64, 96, 128, 256) the weighted sum 16 lanes wide; the same bits
// as avx2::attend_group.
template <class E>
void attend_group(const float* q, int heads, const E* keys, const E* v, int64_t v_stride, int head_dim,
                  const int32_t* slots, int64_t n, float scale, float* scores, float* out, float cap = 0.0f);
}  // namespace avx512

}  // namespace jf
