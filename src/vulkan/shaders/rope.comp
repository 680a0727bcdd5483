#version 450
// Rotary embedding of n_heads heads per row, in place, with each row's cos / sin table (half = rope_dim / 2
// angles, computed on the host exactly as the CPU forward computes them). neox = 0: pairs (2i, 2i + 1);
// 1: pairs (i, i + half).
#include "common.glsl"
#include "elementwise.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Vectors { float V[]; };
layout(std430, binding = 1) readonly buffer Angles { float A[]; };  // cos table, then sin table
layout(push_constant) uniform Params {
  uint n_rows, n_heads, head_dim, half_dim, neox;
  uint v_off, v_stride, cos_off, sin_off;
} p;
void main() {
  const uint i = flat_index();
  if (i >= p.n_rows * p.n_heads * p.half_dim) return;
  const uint r = i / (p.n_heads * p.half_dim), h = (i / p.half_dim) % p.n_heads, j = i % p.half_dim;
  const uint base = p.v_off + r * p.v_stride + h * p.head_dim;
  const uint a = base + (p.neox != 0 ? j : 2 * j), b = base + (p.neox != 0 ? j + p.half_dim : 2 * j + 1);
  const float c = A[p.cos_off + r * p.half_dim + j], s = A[p.sin_off + r * p.half_dim + j];
  const float x0 = V[a], x1 = V[b];
  V[a] = x0 * c - x1 * s;
  V[b] = x0 * s + x1 * c;
}
