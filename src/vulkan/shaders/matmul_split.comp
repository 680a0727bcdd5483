#version 450
// Y[m][n] (+)= sum_k X[m][k] W[n][k] for matrices of at least 256 inputs (matmul_serial.comp below that): one
// workgroup per NO output features and tile of R rows. Step s covers inputs 256 s .. 256 s + 255, and thread t
// takes the four at 256 s + 4 t: a warp reads consecutive bytes of each input row and of each weight row, and
// the weights are dequantized once for the tile's rows. Each thread adds its steps in order; then each
// output's 64 partials are added in a fixed tree (eight runs of eight threads, then the eight run sums).
// Every Y[m][n] sees the same operations whatever M and whichever tile holds row m (batch invariance).
#include "common.glsl"
#define W_BINDING 2
#include "dequant.glsl"
#include "dequant4.glsl"

layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Input { float X[]; };
layout(std430, binding = 0) readonly buffer Input4 { vec4 X4[]; };  // the same buffer, 16 bytes a load
layout(std430, binding = 1) buffer Output { float Y[]; };
layout(std430, binding = 3) readonly buffer Gain { float G[]; };  // the folded norm's gain (norm_fold.glsl)
layout(push_constant) uniform Params {
  uint M, N, K;
  uint x_off, x_stride;  // row m of X starts at x_off + m x_stride
  uint y_off, y_stride;
  uint accumulate;       // 1: Y += result (a residual add: the sum is complete before it is added)
  uint norm;             // 1: X's rows RMS-normalised by G first (norm_fold.glsl)
  float eps;
} p;

const uint NO = 4, R = 8, STEP = 4 * WG, RUNS = 8;
#define NORM_THREADS WG
#define NORM_ROWS R
#include "norm_fold.glsl"
shared float partial[NO * R][WG + 1];  // +1: threads reading a column hit different banks
shared float runs[NO * R][RUNS];

vec4 input4(uint x, bool aligned) {
  if (aligned) return X4[x / 4];
  return vec4(X[x], X[x + 1], X[x + 2], X[x + 3]);
}

void main() {
  const uint n0 = (gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z) * NO;
  const uint m0 = gl_WorkGroupID.y * R, t = gl_LocalInvocationID.x;
  if (n0 >= p.N) return;  // uniform for the whole workgroup
  const uint rows = min(R, p.M - m0), outs = min(NO, p.N - n0);
  const bool aligned = p.x_off % 4 == 0 && p.x_stride % 4 == 0;
  norm_scales(m0, rows);
  float acc[NO][R];
  for (uint o = 0; o < NO; o++)
    for (uint r = 0; r < R; r++) acc[o][r] = 0.0;
  for (uint k = 4 * t; k < p.K; k += STEP) {
    vec4 w[NO];
    for (uint o = 0; o < NO; o++) w[o] = o < outs ? load4(n0 + o, k, p.K) : vec4(0.0);
    const bool whole = k + 4 <= p.K;
    const vec4 g = gain4(k);
    for (uint r = 0; r < R; r++) {
      if (r >= rows) break;
      const uint x = p.x_off + (m0 + r) * p.x_stride + k;
      vec4 v;
      if (whole) v = input4(x, aligned);
      else v = vec4(X[x], k + 1 < p.K ? X[x + 1] : 0.0, k + 2 < p.K ? X[x + 2] : 0.0, 0.0);
      v *= g;
      for (uint o = 0; o < NO; o++) {
        float a = acc[o][r];
        a = fma(v.x, w[o].x, a);
        a = fma(v.y, w[o].y, a);
        a = fma(v.z, w[o].z, a);
        a = fma(v.w, w[o].w, a);
        acc[o][r] = a;
      }
    }
  }
  for (uint o = 0; o < NO; o++)
    for (uint r = 0; r < R; r++) partial[o * R + r][t] = acc[o][r];
  barrier();
  // Tasks (output, run): a run is eight consecutive threads' partials, added in thread order.
  for (uint task = t; task < NO * R * RUNS; task += WG) {
    const uint slot = task / RUNS, run = task % RUNS;
    if (slot % R >= rows || slot / R >= outs) continue;
    precise float s = partial[slot][run * 8];
    for (uint i = 1; i < 8; i++) s += partial[slot][run * 8 + i];
    runs[slot][run] = s;
  }
  barrier();
  if (t < NO * R) {
    const uint o = t / R, r = t % R;
    if (r < rows && o < outs) {
      precise float s = runs[t][0];
      for (uint i = 1; i < RUNS; i++) s += runs[t][i];
      const uint y = p.y_off + (m0 + r) * p.y_stride + n0 + o;
      Y[y] = (p.accumulate != 0 ? Y[y] : 0.0) + s * norm_scale[r];
    }
  }
}
