#version 450
// One sequence's rows after their q/k/v products: RoPE on q in place, and the keys (rotated) and values stored in
// the sequence's cache slots, in one dispatch (the CPU's qkv_rows does the same per row). Thread i of a row
// rotates one q pair, or writes one key element (rotating it with its pair partner, read as the product left
// it: k is never written back), or one value element. The rotation is rope.comp's, element for element.
// neox = 0: pairs (2i, 2i + 1); 1: pairs (i, i + half). Dims past rope_dim pass through.
#include "common.glsl"
#include "elementwise.glsl"
#include "kv.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Queries { float Q[]; };
layout(std430, binding = 1) readonly buffer Keys { float K[]; };
layout(std430, binding = 2) readonly buffer Values { float V[]; };
layout(std430, binding = 3) writeonly buffer CacheK { KV_T CK[]; };
layout(std430, binding = 4) writeonly buffer CacheV { KV_T CV[]; };
layout(std430, binding = 5) readonly buffer Arena { int INFO[]; };      // the row table
layout(std430, binding = 5) readonly buffer Angles { float A[]; };     // the same arena: cos table, sin table
layout(push_constant) uniform Params {
  uint row0, n_rows, n_heads, n_kv_heads, head_dim, half_dim, neox, capacity;
  uint info_off, cos_off, sin_off;
} p;

vec2 rotated(float x0, float x1, uint r, uint j) {
  const float c = A[p.cos_off + r * p.half_dim + j], s = A[p.sin_off + r * p.half_dim + j];
  return vec2(x0 * c - x1 * s, x0 * s + x1 * c);
}

void main() {
  const uint q_pairs = p.n_heads * p.half_dim, kv_dim = p.n_kv_heads * p.head_dim, per_row = q_pairs + 2 * kv_dim;
  const uint i = flat_index();
  if (i >= p.n_rows * per_row) return;
  const uint r = p.row0 + i / per_row, e = i % per_row;
  if (e < q_pairs) {
    const uint h = e / p.half_dim, j = e % p.half_dim, base = r * p.n_heads * p.head_dim + h * p.head_dim;
    const uint a = base + (p.neox != 0 ? j : 2 * j), b = base + (p.neox != 0 ? j + p.half_dim : 2 * j + 1);
    const vec2 v = rotated(Q[a], Q[b], r, j);
    Q[a] = v.x;
    Q[b] = v.y;
    return;
  }
  const uint c = (e - q_pairs) % kv_dim, d = c % p.head_dim, slot = uint(INFO[p.info_off + r * ROW_INFO]);
  const uint at = ((c / p.head_dim) * p.capacity + slot) * p.head_dim + d, x = r * kv_dim + c;
  if (e >= q_pairs + kv_dim) {
    CV[at] = KV_T(V[x]);
    return;
  }
  float k = K[x];
  if (d < 2 * p.half_dim) {  // a rotated dim: which pair, and which of its two
    const bool second = p.neox != 0 ? d >= p.half_dim : (d & 1u) != 0;
    const uint j = p.neox != 0 ? d % p.half_dim : d / 2, partner = p.neox != 0 ? (second ? x - p.half_dim : x + p.half_dim) : (x ^ 1u);
    const vec2 v = second ? rotated(K[partner], k, r, j) : rotated(k, K[partner], r, j);
    k = second ? v.y : v.x;
  }
  CK[at] = KV_T(k);
}
