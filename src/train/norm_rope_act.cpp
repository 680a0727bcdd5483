// Row-wise operations — RMSNorm, RoPE, SwiGLU — forward and backward side by side.
#include <algorithm>
#include <cmath>

#include "kernels/parallel.h"
#include "train/layers.h"
#include "train/train_math.h"

namespace jf {
namespace {

constexpr int64_t kColumnChunk = 64;
bool worth_parallel(int64_t work) { return work >= (1 << 15); }

}  // namespace

// ---------------------------------------------------------------- RMSNorm

void rmsnorm_forward(float* out, float* rstd, const float* x, const float* g, int64_t T, int64_t C, float eps) {
  parallel_for(T, worth_parallel(T * C), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const float* xt = x + t * C;
      float* ot = out + t * C;
      // Same expression as kernels/ops.cpp scalar::rmsnorm.
      float ss = 0.0f;
      for (int64_t i = 0; i < C; i++) ss += xt[i] * xt[i];
      const float r = 1.0f / std::sqrt(ss / static_cast<float>(C) + eps);
      for (int64_t i = 0; i < C; i++) ot[i] = g[i] * (r * xt[i]);
      rstd[t] = r;
    }
  });
}

void rmsnorm_backward(float* dx, float* dg, const float* dout, const float* x, const float* g, const float* rstd,
                      int64_t T, int64_t C) {
  // y_i = g_i r x_i with r = (sum x^2 / C + eps)^-1/2, dr/dx_j = -r^3 x_j / C:
  // dx_j = r g_j dy_j - (r^3 / C) x_j sum_i dy_i g_i x_i.
  parallel_for(T, worth_parallel(T * C), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const float *xt = x + t * C, *dy = dout + t * C;
      const float r = rstd[t];
      float dot = 0.0f;
      for (int64_t i = 0; i < C; i++) dot += dy[i] * g[i] * xt[i];
      const float c = r * r * r * dot / static_cast<float>(C);
      float* dxt = dx + t * C;
      for (int64_t i = 0; i < C; i++) dxt[i] += r * (g[i] * dy[i]) - c * xt[i];
    }
  });
  // dg_i = sum_t dy_i r x_i: threads own column ranges, rows summed in order.
  if (!dg) return;
  const int64_t chunks = (C + kColumnChunk - 1) / kColumnChunk;
  parallel_for(chunks, worth_parallel(T * C), [&](int64_t c0, int64_t c1) {
    const int64_t lo = c0 * kColumnChunk, hi = std::min(C, c1 * kColumnChunk);
    for (int64_t t = 0; t < T; t++) {
      const float *xt = x + t * C, *dy = dout + t * C;
      const float r = rstd[t];
      for (int64_t i = lo; i < hi; i++) dg[i] += dy[i] * (r * xt[i]);
    }
  });
}

// ---------------------------------------------------------------- RoPE

namespace {

// Rotates each pair (a, b) of every head by the row's angle, times `sign` (+1 forward, -1 backward).
void rotate_rows(float* x, int64_t T, const RopeShape& s, const float* cos, const float* sin, float sign) {
  const int half = s.rope_dim / 2;
  const int64_t width = static_cast<int64_t>(s.n_heads) * s.head_dim;
  parallel_for(T, worth_parallel(T * width), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      const float *ct = cos + t * half, *st = sin + t * half;
      for (int h = 0; h < s.n_heads; h++) {
        float* v = x + t * width + static_cast<int64_t>(h) * s.head_dim;
        for (int i = 0; i < half; i++) {
          const int a = s.style == RopeStyle::Interleaved ? 2 * i : i;
          const int b = s.style == RopeStyle::Interleaved ? 2 * i + 1 : i + half;
          const float c = ct[i], sn = sign * st[i];
          const float x0 = v[a], x1 = v[b];
          // Same expression as kernels/ops.cpp rope().
          v[a] = x0 * c - x1 * sn;
          v[b] = x0 * sn + x1 * c;
        }
      }
    }
  });
}

}  // namespace

void rope_forward(float* x, int64_t T, const RopeShape& s, const float* cos, const float* sin) {
  rotate_rows(x, T, s, cos, sin, 1.0f);
}

void rope_backward(float* dx, int64_t T, const RopeShape& s, const float* cos, const float* sin) {
  rotate_rows(dx, T, s, cos, sin, -1.0f);
}

// ---------------------------------------------------------------- SwiGLU

void swiglu_forward(float* h, const float* gate, const float* up, int64_t n) {
  parallel_for((n + 1023) / 1024, worth_parallel(n), [&](int64_t b0, int64_t b1) {
    const int64_t lo = b0 * 1024, hi = std::min(n, b1 * 1024);
    for (int64_t i = lo; i < hi; i++) {
      const float v = gate[i];
      h[i] = v * train_math::sigmoid(v) * up[i];  // kernels/ops.cpp silu_mul: v * (1 / (1 + exp(-v))) * up
    }
  });
}

void swiglu_backward(float* dgate, float* dup, const float* dh, const float* gate, const float* up, int64_t n) {
  parallel_for((n + 1023) / 1024, worth_parallel(n), [&](int64_t b0, int64_t b1) {
    const int64_t lo = b0 * 1024, hi = std::min(n, b1 * 1024);
    for (int64_t i = lo; i < hi; i++) {
      const float v = gate[i], s = train_math::sigmoid(v);
      dgate[i] += dh[i] * up[i] * (s * (1.0f + v * (1.0f - s)));
      dup[i] += dh[i] * (v * s);
    }
  });
}

}  // namespace jf
