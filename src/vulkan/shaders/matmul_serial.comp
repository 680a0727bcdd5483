#version 450
// Y[m][n] (+)= sum_k X[m][k] W[n][k] for matrices of fewer than WG units of 32 inputs, where splitting K over a
// workgroup would leave most threads idle: one thread per output feature n and tile of R rows, summing the
// units in order. Which variant a matrix uses depends on K alone, so each Y[m][n] sees the same operations
// whatever M (batch invariance).
#include "common.glsl"
#define W_BINDING 2
#include "dequant.glsl"

layout(local_size_x = WG) in;
#include "matmul_io.glsl"

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
  UNROLL for (uint r = 0; r < R; r++) acc[r] = 0.0;
  const uint units = (p.K + 31) / 32;
  for (uint u = 0; u < units; u++) {
    float w[32];
    load_unit(n, u, p.K, w);
    const uint k0 = 32 * u, kn = min(32, p.K - k0);
    float g[32];
    UNROLL for (uint i = 0; i < 32; i++) g[i] = gain(k0 + i);
    UNROLL for (uint r = 0; r < R; r++) {
      if (m0 + r >= p.M) break;
      const uint x = p.x_off + (m0 + r) * p.x_stride + k0;
      float s = 0.0;
      for (uint i = 0; i < kn; i++) s = fma(input_at(x + i) * g[i], w[i], s);
      acc[r] += s;
    }
  }
  UNROLL for (uint r = 0; r < R && m0 + r < p.M; r++) store_output(m0 + r, n, acc[r], norm_scale[r]);
}
