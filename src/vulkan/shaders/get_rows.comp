#version 450
// Rows of an embedding table in its file type, by index: OUT[r] = scale * row ROWS[rows_off + r] (mode 0: a
// forward's token embeddings), or the draft layer's input, a hidden state plus S times that row, in one pass:
// OUT[r] += S * the row (mode 1: the hidden state already in OUT), or OUT[r] = row FROM_ROWS[from_off + r] of
// FROM + S * the row (mode 2: a draft pass's hidden states gathered from its parents'). Every draft path adds
// the embedding here, with the same operations (precise: no contraction a build could choose), so a node's
// input is the same bits whichever path computes it.
#include "common.glsl"
#define W_BINDING 2
#include "dequant.glsl"

layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Rows { int ROWS[]; };
layout(std430, binding = 1) buffer Output { float OUT[]; };
layout(std430, binding = 3) readonly buffer Scale { float S[]; };
layout(std430, binding = 4) readonly buffer From { float FROM[]; };
layout(std430, binding = 5) readonly buffer FromRows { int FROM_ROWS[]; };
layout(push_constant) uniform Params {
  uint n_rows, K, rows_off, out_off;
  float scale;
  uint mode, from_off;
} p;

void main() {
  const uint r = gl_WorkGroupID.x;
  if (r >= p.n_rows) return;
  const uint row = uint(ROWS[p.rows_off + r]), from = p.mode == 2 ? uint(FROM_ROWS[p.from_off + r]) * p.K : 0;
  for (uint u = gl_LocalInvocationID.x; u < (p.K + 31) / 32; u += WG) {
    float w[32];
    load_unit(row, u, p.K, w);
    UNROLL for (uint i = 0; i < 32; i++) {
      const uint k = 32 * u + i, o = p.out_off + r * p.K + k;
      if (k < p.K && p.mode == 0) OUT[o] = p.scale == 1.0 ? w[i] : w[i] * p.scale;
      if (k < p.K && p.mode != 0) {
        precise float e = S[k] * w[i];
        precise float x = (p.mode == 1 ? OUT[o] : FROM[from + k]) + e;
        OUT[o] = x;
      }
    }
  }
}
