#version 450
// Stores the keys and values of one sequence's rows in their cache slots (converted to the cache's type).
#include "common.glsl"
#include "elementwise.glsl"
#include "kv.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Keys { float K[]; };
layout(std430, binding = 1) readonly buffer Values { float V[]; };
layout(std430, binding = 2) writeonly buffer CacheK { KV_T CK[]; };
layout(std430, binding = 3) writeonly buffer CacheV { KV_T CV[]; };
layout(std430, binding = 4) readonly buffer Info { int INFO[]; };
layout(push_constant) uniform Params { uint row0, n_rows, kv_dim, head_dim, capacity, info_off; } p;
void main() {
  const uint i = flat_index();
  if (i >= p.n_rows * p.kv_dim) return;
  const uint r = p.row0 + i / p.kv_dim, c = i % p.kv_dim;
  const uint slot = uint(INFO[p.info_off + r * ROW_INFO]);
  const uint at = ((c / p.head_dim) * p.capacity + slot) * p.head_dim + c % p.head_dim;
  CK[at] = KV_T(K[r * p.kv_dim + c]);
  CV[at] = KV_T(V[r * p.kv_dim + c]);
}
