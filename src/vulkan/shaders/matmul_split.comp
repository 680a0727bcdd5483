#version 450
// Y[m][n] (+)= sum_k X[m][k] W[n][k] for matrices of at least WG units of 32 inputs (matmul_serial.comp below
// that): one workgroup per output feature n and tile of R rows. Thread t takes
// the 32-weight units t, t + WG, ... in order, then the WG partials go down one fixed tree: every Y[m][n]
// sees the same operations whatever M and whichever tile holds row m (batch invariance). The weights of a
// unit are dequantized once for the tile's R rows.
#include "common.glsl"
#define W_BINDING 2
#include "dequant.glsl"

layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Input { float X[]; };
layout(std430, binding = 1) buffer Output { float Y[]; };
layout(push_constant) uniform Params {
  uint M, N, K;
  uint x_off, x_stride;  // row m of X starts at x_off + m x_stride
  uint y_off, y_stride;
  uint accumulate;       // 1: Y += result (a residual add: the sum is complete before it is added)
} p;

const uint R = 8;
shared float red[R * WG];

void main() {
  const uint n = gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z;
  const uint m0 = gl_WorkGroupID.y * R, t = gl_LocalInvocationID.x;
  if (n >= p.N) return;  // uniform for the whole workgroup
  float acc[R];
  for (uint r = 0; r < R; r++) acc[r] = 0.0;
  const uint units = (p.K + 31) / 32;
  for (uint u = t; u < units; u += WG) {
    float w[32];
    load_unit(n, u, p.K, w);
    const uint k0 = 32 * u, kn = min(32, p.K - k0);
    for (uint r = 0; r < R; r++) {
      if (m0 + r >= p.M) break;
      const uint x = p.x_off + (m0 + r) * p.x_stride + k0;
      float s = 0.0;
      for (uint i = 0; i < kn; i++) s = fma(X[x + i], w[i], s);
      acc[r] += s;
    }
  }
  for (uint r = 0; r < R; r++) red[r * WG + t] = acc[r];
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s)
      for (uint r = 0; r < R; r++) red[r * WG + t] += red[r * WG + t + s];
    barrier();
  }
  if (t < R && m0 + t < p.M) {
    const uint y = p.y_off + (m0 + t) * p.y_stride + n;
    Y[y] = (p.accumulate != 0 ? Y[y] : 0.0) + red[t * WG];
  }
}
