// Forward and backward of every operation of a Llama/Qwen2 transformer, on fp32 row-major buffers, for training.
//
// Conventions (llm.c style):
//  - A sequence is T rows; row t of an [T x C] buffer starts at t * C.
//  - Every *_backward ADDS into the gradient buffers it is given (dx += ..., dW += ...), so a tensor used in
//    several places just receives several contributions; zero a buffer first when it has a single source.
//    Exceptions, documented at the function: rope_backward transforms its gradient in place and the losses
//    write dlogits.
//  - Every output element is computed by one thread with a fixed operation order, so results are bit-identical
//    for the same inputs whatever the thread count (kernels/parallel.h splits independent outputs only).
//  - Row ops (RMSNorm, RoPE, SwiGLU) use the float expressions of kernels/ops.cpp's scalar versions; matrix
//    products go through train/gemm.h, whose summation order differs from kernels/matmul.h, so logits agree
//    with the inference forward to ~1e-6 relative, not bit for bit.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/ops.h"
#include "model/batch.h"

namespace jf {

// ---- embedding: out[t] = table[tokens[t]]   (table: vocab x C)
void embedding_forward(float* out, const int32_t* tokens, int64_t T, const float* table, int64_t C);
// dtable[tokens[t]] += dout[t] (scatter-add; repeated tokens sum in row order).
void embedding_backward(float* dtable, const float* dout, const int32_t* tokens, int64_t T, int64_t C);

// ---- linear: out = inp W^T + b   (inp: T x K, W: N x K row-major as in GGUF, b: N or null, out: T x N)
// The products of every linear layer, forward and backward: fp32 (default), or bfloat16 operands with fp32
// sums (gemm_accumulate_bf16: about twice as fast where the CPU has AVX512-BF16). A process-wide setting,
// made once before training (jf train --matmul); attention and everything else stay fp32.
enum class LinearPrecision { F32, Bf16 };
void set_linear_precision(LinearPrecision p);
LinearPrecision linear_precision();
// out must not alias inp. The forward transposes W into a per-thread buffer (kept, grown to the largest W) so
// that the product runs in the gemm's vectorised outer-product form.
void linear_forward(float* out, const float* inp, const float* weight, const float* bias, int64_t T, int64_t K,
                    int64_t N);
// dinp += dout W;  dweight += dout^T inp;  dbias += sum_t dout[t]. dinp / dweight / dbias may be null (skipped).
void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                     const float* weight, int64_t T, int64_t K, int64_t N);

// ---- RMSNorm: out[t] = g * (rstd[t] * x[t]),  rstd[t] = 1 / sqrt(mean(x[t]^2) + eps)   (saves rstd: T floats)
void rmsnorm_forward(float* out, float* rstd, const float* x, const float* g, int64_t T, int64_t C, float eps);
// dx += ..., dg += sum_t dout[t] * rstd[t] * x[t].
void rmsnorm_backward(float* dx, float* dg, const float* dout, const float* x, const float* g, const float* rstd,
                      int64_t T, int64_t C);

// ---- RoPE on rows of n_heads vectors of head_dim (the first rope_dim dims of each are rotated).
// cos/sin: T x rope_dim/2 angles (model/config.h rope_angles for each row's position).
struct RopeShape {
  int n_heads = 0, head_dim = 0, rope_dim = 0;
  RopeStyle style = RopeStyle::Interleaved;
};
// Rotates x (T x n_heads*head_dim) in place by each row's angles.
void rope_forward(float* x, int64_t T, const RopeShape& s, const float* cos, const float* sin);
// The backward of a rotation is the rotation by the negative angle: turns dL/d(rotated) into dL/d(input) in place.
void rope_backward(float* dx, int64_t T, const RopeShape& s, const float* cos, const float* sin);

// ---- SwiGLU: h = silu(gate) * up elementwise (n values), silu(v) = v * sigmoid(v).
void swiglu_forward(float* h, const float* gate, const float* up, int64_t n);
// dgate += dh * up * silu'(gate), dup += dh * silu(gate);  silu'(v) = s * (1 + v * (1 - s)), s = sigmoid(v).
void swiglu_backward(float* dgate, float* dup, const float* dh, const float* gate, const float* up, int64_t n);

// ---- multi-head attention with GQA over one packed sequence of T tokens.
// q: T x (n_heads*head_dim), k, v: T x (n_kv_heads*head_dim), all after RoPE; head h reads kv head
// h / (n_heads / n_kv_heads). Query i attends to key j iff mask.get(i, j) (T x T, diagonal set; any DAG).
// probs: n_heads x T x T, row (h, i) = softmax_j(q_i . k_j / sqrt(head_dim)) over visible j, 0 elsewhere.
struct AttentionShape {
  int64_t T = 0;
  int n_heads = 0, n_kv_heads = 0, head_dim = 0;
};
// Workspace reused between calls (grows to the largest shape seen; no allocation once warmed up).
struct AttentionScratch {
  std::vector<float> kt, vt;          // keys / values transposed per kv head: head_dim x T
  std::vector<float> dscores;         // n_heads x T x T: dL/d(score), backward only
  std::vector<int32_t> row_begin, row_end;  // visible keys of query i lie in [row_begin[i], row_end[i])
  std::vector<int32_t> col_begin, col_end;  // queries that see key j lie in [col_begin[j], col_end[j])
  std::vector<uint8_t> row_has_holes;       // some key inside row i's range is masked
};
// out (T x n_heads*head_dim) = sum_j probs[h][i][j] v_j; writes out and probs.
void attention_forward(float* out, float* probs, const float* q, const float* k, const float* v,
                       const VisibilityMask& mask, const AttentionShape& s, AttentionScratch& scratch);
// dq += ..., dk += ..., dv += ... from dout, given the forward's inputs and probs.
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                        const float* v, const float* probs, const VisibilityMask& mask, const AttentionShape& s,
                        AttentionScratch& scratch);

// ---- losses on one row of V logits. dlogits (may be null) is WRITTEN, already multiplied by `weight`.
// Cross-entropy against a target id: returns -log softmax(logits)[target];
// dlogits = weight * (softmax(logits) - onehot(target)).
float cross_entropy(const float* logits, int64_t V, int32_t target, float weight, float* dlogits);
// Against a teacher distribution p (V probabilities, treated as constants):
// returns the soft cross-entropy -sum_v p_v log softmax(logits)_v (= KL(p || softmax) + H(p)), and the KL
// itself in *kl when kl is not null; dlogits = weight * (softmax(logits) - p) (the gradient of both).
float soft_cross_entropy(const float* logits, const float* p_teacher, int64_t V, float weight, float* dlogits,
                         float* kl = nullptr);
// Mean cross-entropy over the rows whose target is >= 0 (targets < 0 are ignored and get dlogits = 0), each
// counted row weighted 1 / n_counted, rows in parallel. dlogits: T x V or null. Returns 0 when no row counts.
float cross_entropy_mean(const float* logits, int64_t T, int64_t V, const int32_t* targets, float* dlogits);

}  // namespace jf
