// Row-wise transformer operations: RMSNorm, RoPE, SwiGLU, softmax, argmax. Each function handles one
// row, so a row's result never depends on what else is in the batch.
#pragma once
#include <cstdint>

namespace jf {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * g[i]. out may alias x.
void rmsnorm(const float* x, const float* g, int64_t n, float eps, float* out);

// gate[i] = silu(gate[i]) * up[i], silu(v) = v / (1 + exp(-v)).
void silu_mul(float* gate, const float* up, int64_t n);

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

// Attention of one query head over a compacted list of cache slots.
//   q: head_dim values (already RoPE'd); k/v: cache rows of this layer, slot s at k + s * stride (+ head offset
//   applied by the caller); slots: the n visible slots in order; scores: scratch of n floats.
// out = sum_j softmax_j(q . k_j * scale) v_j. The visible slots are processed in the given order with a fixed
// reduction order, so the same slot sequence always gives the same bits.
void attend_head(const float* q, const float* k, const float* v, int64_t stride, int head_dim, const int32_t* slots,
                 int64_t n, float scale, float* scores, float* out);

namespace scalar {
void rmsnorm(const float* x, const float* g, int64_t n, float eps, float* out);
void silu_mul(float* gate, const float* up, int64_t n);
void attend_head(const float* q, const float* k, const float* v, int64_t stride, int head_dim, const int32_t* slots,
                 int64_t n, float scale, float* scores, float* out);
}  // namespace scalar
namespace avx2 {
void rmsnorm(const float* x, const float* g, int64_t n, float eps, float* out);
void silu_mul(float* gate, const float* up, int64_t n);
void attend_head(const float* q, const float* k, const float* v, int64_t stride, int head_dim, const int32_t* slots,
                 int64_t n, float scale, float* scores, float* out);
}  // namespace avx2

}  // namespace jf
