#version 450
// Y[m][n] (+)= sum_k X[m][k] W[n][k] for matrices of fewer than WG units of 32 inputs, where splitting K over a
// workgroup would leave most threads idle: one thread per output feature n and tile of R rows, summing the
// units in order. Which variant a matrix uses depends on K alone, so each Y[m][n] sees the same operations
// whatever M (batch invariance).
#include "common.glsl"
#define W_BINDING 2
#include "dequant.glsl"

layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Input { float X[]; };
layout(std430, binding = 1) buffer Output { float Y[]; };
layout(std430, binding = 3) readonly buffer Gain { float G[]; };  // the folded norm's gain (norm_fold.glsl)
layout(push_constant) uniform Params {
  uint M, N, K;
  uint x_off, x_stride;
  uint y_off, y_stride;
  uint accumulate;
  uint norm;  // 1: X's rows RMS-normalised by G first (norm_fold.glsl)
  float eps;
} p;

const uint R = 8;
#define NORM_THREADS WG
#define NORM_ROWS R
#include "norm_fold.glsl"

void main() {
  const uint n = (gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z) * WG + gl_LocalInvocationID.x;
  const uint m0 = gl_WorkGroupID.y * R;
  norm_scales(m0, min(R, p.M - m0));  // (before any thread leaves: its barriers need them all)
  if (n >= p.N) return;
  float acc[R];
  for (uint r = 0; r < R; r++) acc[r] = 0.0;
  const uint units = (p.K + 31) / 32;
  for (uint u = 0; u < units; u++) {
    float w[32];
    load_unit(n, u, p.K, w);
    const uint k0 = 32 * u, kn = min(32, p.K - k0);
    float g[32];
    for (uint i = 0; i < 32; i++) g[i] = gain(k0 + i);
    for (uint r = 0; r < R; r++) {
      if (m0 + r >= p.M) break;
      const uint x = p.x_off + (m0 + r) * p.x_stride + k0;
      float s = 0.0;
      for (uint i = 0; i < kn; i++) s = fma(X[x + i] * g[i], w[i], s);
      acc[r] += s;
    }
  }
  for (uint r = 0; r < R && m0 + r < p.M; r++) {
    const uint y = p.y_off + (m0 + r) * p.y_stride + n;
    Y[y] = (p.accumulate != 0 ? Y[y] : 0.0) + acc[r] * norm_scale[r];
  }
}
