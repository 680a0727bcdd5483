#version 450
// Attention in fixed context chunks, pass 2: one workgroup per (row, query head) folds the row's chunks from
// attention_split.comp in chunk order (their maxima first, then the rescaled sums and outputs): the result's
// order a function of the row's own visible slots alone.
#include "common.glsl"
#include "kv.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Part { float PART[]; };
layout(std430, binding = 1) readonly buffer Info { int INFO[]; };
layout(std430, binding = 2) writeonly buffer Output { float OUT[]; };
layout(push_constant) uniform Params { uint row0, n_heads, head_dim, info_off, local, chunk, max_chunks; } p;

void main() {
  const uint r = p.row0 + gl_WorkGroupID.x, h = gl_WorkGroupID.y, t = gl_LocalInvocationID.x, hd = p.head_dim;
  const uint info = p.info_off + r * ROW_INFO;
  const uint nv = uint(INFO[info + (p.local != 0 ? 4 : 2)]) - uint(INFO[info + (p.local != 0 ? 3 : 1)]);
  const uint chunks = (nv + p.chunk - 1) / p.chunk, base = (r * p.n_heads + h) * p.max_chunks;
  float m = -1.0 / 0.0;
  for (uint c = 0; c < chunks; c++) m = max(m, PART[(base + c) * (hd + 2)]);
  float l = 0.0;
  for (uint c = 0; c < chunks; c++) {
    const uint o = (base + c) * (hd + 2);
    l += PART[o + 1] * exp(PART[o] - m);
  }
  for (uint d = t; d < hd; d += WG) {
    float acc = 0.0;
    for (uint c = 0; c < chunks; c++) {
      const uint o = (base + c) * (hd + 2);
      acc += PART[o + 2 + d] * exp(PART[o] - m);
    }
    OUT[(r * p.n_heads + h) * hd + d] = acc / l;
  }
}
