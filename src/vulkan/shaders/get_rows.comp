#version 450
// OUT[r] = scale * row ROWS[r] of an embedding table in its file type (the token embeddings of a forward's rows).
#include "common.glsl"
#define W_BINDING 2
#include "dequant.glsl"

layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Rows { int ROWS[]; };
layout(std430, binding = 1) buffer Output { float OUT[]; };
layout(push_constant) uniform Params {
  uint n_rows, K, rows_off, out_off;
  float scale;
} p;

void main() {
  const uint r = gl_WorkGroupID.x;
  if (r >= p.n_rows) return;
  const uint row = uint(ROWS[p.rows_off + r]);
  for (uint u = gl_LocalInvocationID.x; u < (p.K + 31) / 32; u += WG) {
    float w[32];
    load_unit(row, u, p.K, w);
    for (uint i = 0; i < 32 && 32 * u + i < p.K; i++) {
      const float v = w[i];
      OUT[p.out_off + r * p.K + 32 * u + i] = p.scale == 1.0 ? v : v * p.scale;
    }
  }
}
