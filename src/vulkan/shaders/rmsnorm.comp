#version 450
// OUT[r] (+)= G * X[src(r)] / sqrt(mean(X[src(r)]^2) + eps): one workgroup per row, the sum of squares in the
// fixed order of reduce.glsl. src(r) = r, or GATHER[r] (the forward's logit rows). In place when OUT = X
// (each thread writes only the elements it read).
#include "common.glsl"

layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Input { float X[]; };
layout(std430, binding = 1) buffer Output { float OUT[]; };
layout(std430, binding = 2) readonly buffer Gain { float G[]; };
layout(std430, binding = 3) readonly buffer Gather { int GATHER[]; };
layout(push_constant) uniform Params {
  uint n_rows, n;                  // rows of n values
  uint x_off, x_stride, out_off, out_stride, g_off;
  uint gather;                     // 1: row r reads X row GATHER[gather_off + r]
  uint gather_off, accumulate;     // accumulate 1: OUT += the normalised row (gemma's post-norms)
  float eps;
} p;

shared float red[WG];
#include "reduce.glsl"

void main() {
  const uint r = gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.y;
  if (r >= p.n_rows) return;
  const uint src = p.gather != 0 ? uint(GATHER[p.gather_off + r]) : r;
  const uint x = p.x_off + src * p.x_stride, o = p.out_off + r * p.out_stride;
  float ss = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < p.n; i += WG) ss = fma(X[x + i], X[x + i], ss);
  const float scale = 1.0 / sqrt(workgroup_sum(ss) / float(p.n) + p.eps);
  for (uint i = gl_LocalInvocationID.x; i < p.n; i += WG) {
    const float v = G[p.g_off + i] * (scale * X[x + i]);
    OUT[o + i] = p.accumulate != 0 ? OUT[o + i] + v : v;
  }
}
