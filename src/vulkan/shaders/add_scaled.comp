#version 450
// X[r][i] += S[i] * E[r][i]: the draft layer's input, the final hidden state plus the scaled embedding of
// the model's greedy next token.
#include "common.glsl"
#include "elementwise.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Output { float X[]; };
layout(std430, binding = 1) readonly buffer Embedding { float E[]; };
layout(std430, binding = 2) readonly buffer Scale { float S[]; };
layout(push_constant) uniform Params { uint n_rows, n, x_off, e_off; } p;
void main() {
  const uint i = flat_index();
  if (i >= p.n_rows * p.n) return;
  const uint c = i % p.n;
  const float e = S[c] * E[p.e_off + i];
  X[p.x_off + i] += e;
}
