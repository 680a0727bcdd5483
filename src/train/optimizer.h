// AdamW with a cosine learning-rate schedule (linear warm-up) and global gradient-norm clipping.
// Plain arrays in, deterministic arithmetic (fixed summation order) so training resumes exactly.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace jf {

struct AdamWOptions {
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
  float weight_decay = 0.0f;  // decoupled; applied to matrices only (caller passes which)
  // Decoupled L2 pull toward anchor weights (the base model), on every tensor: p -= lr * anchor_decay * (p - p0).
  // Keeps a fine-tune near the model it started from; needs set_anchor.
  float anchor_decay = 0.0f;
};

// lr(step) for step = 0 .. total-1: linear warm-up over `warmup` steps to `peak`, then cosine to `floor`.
float cosine_lr(int64_t step, int64_t total, int64_t warmup, float peak, float floor);

// Scales the gradients so their global L2 norm is at most max_norm (no-op if max_norm <= 0). Returns the
// norm before clipping.
double clip_grad_norm(std::span<float* const> grads, std::span<const int64_t> sizes, float max_norm);

class AdamW {
 public:
  AdamW(std::span<const int64_t> sizes, const AdamWOptions& o);
  // One update of every parameter tensor i (decay[i]: apply weight decay to it).
  void step(std::span<float* const> params, std::span<float* const> grads, std::span<const bool> decay, float lr);
  int64_t steps() const { return t_; }
  // Optimizer state for checkpoints: first and second moments per tensor, and the step count.
  std::vector<std::vector<float>>& m() { return m_; }
  std::vector<std::vector<float>>& v() { return v_; }
  void set_steps(int64_t t) { t_ = t; }
  // Anchor weights per tensor (same sizes as the parameters); checkpoints carry them.
  void set_anchor(std::vector<std::vector<float>> anchor);
  std::vector<std::vector<float>>& anchor() { return anchor_; }

 private:
  AdamWOptions o_;
  int64_t t_ = 0;
  std::vector<std::vector<float>> m_, v_, anchor_;
};

}  // namespace jf
