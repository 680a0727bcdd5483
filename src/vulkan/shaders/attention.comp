#version 450
// Attention of one sequence's rows, with RoPE and the KV store of those rows folded in: one workgroup per
// (row, query head). The row's q is rotated as it is read. Its visible slots go in chunks of WG, a score per
// thread; the softmax runs online across chunks (running max and sum), and each thread accumulates its own
// output dimensions over a chunk's slots in slot order. A slot the forward's own rows write is -(row + 2) in
// the list: its key is read from this forward's keys, rotated and rounded as the cache would hold it, and its
// value likewise, so no row waits for another's store; the first query head of each key-value group stores
// its row's key and value in the cache for later forwards. The order depends only on the row's own visible
// slots, never on the other rows of the forward (batch invariance), and a key gives the same bits read either
// way (kv.glsl's rope_pair). Loads come in batches of LOADS independent reads ahead of the FMAs that use them
// (in the same order), so a thread waits for memory once a batch, not once a key dimension or a value.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "kv.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Query { float Q[]; };  // as the product left it
layout(std430, binding = 1) buffer CacheK { KV_T CK[]; };
layout(std430, binding = 2) buffer CacheV { KV_T CV[]; };
layout(std430, binding = 3) readonly buffer Info { int INFO[]; };     // the arena: the row table ...
layout(std430, binding = 3) readonly buffer Angles { float A[]; };    // ... and the RoPE angles
layout(std430, binding = 4) readonly buffer Slots { int SLOTS[]; };
layout(std430, binding = 5) writeonly buffer Output { float OUT[]; };
layout(std430, binding = 6) readonly buffer Keys { float K[]; };      // this forward's keys, unrotated
layout(std430, binding = 7) readonly buffer Values { float V[]; };    // and values
layout(push_constant) uniform Params {
  uint row0, n_heads, n_kv_heads, head_dim, capacity;
  uint info_off, slots_off, local;
  float scale, cap;
  uint half_dim, neox, cos_off, sin_off;
} p;

const uint MAX_DIMS = 256, PER_THREAD = MAX_DIMS / WG, LOADS = 8;
shared float red[WG];
shared float q[MAX_DIMS];
shared float prob[WG];
shared int slot_of[WG];
#include "reduce.glsl"

// Element d of a head vector starting at x in `buf` (Q or K) after RoPE with row r's angles.
#define ROPED(buf, x, d, r)                                                                                  \
  {                                                                                                          \
    if (d >= 2 * p.half_dim) return buf[x + d];                                                             \
    const bool second = p.neox != 0 ? d >= p.half_dim : (d & 1u) != 0;                                      \
    const uint j = p.neox != 0 ? d % p.half_dim : d / 2;                                                    \
    const uint partner = p.neox != 0 ? (second ? d - p.half_dim : d + p.half_dim) : (d ^ 1u);              \
    const float c = A[p.cos_off + r * p.half_dim + j], s = A[p.sin_off + r * p.half_dim + j];               \
    const vec2 v = second ? rope_pair(buf[x + partner], buf[x + d], c, s) : rope_pair(buf[x + d], buf[x + partner], c, s); \
    return second ? v.y : v.x;                                                                               \
  }
float query_at(uint x, uint d, uint r) ROPED(Q, x, d, r)
float key_rotated(uint x, uint d, uint r) ROPED(K, x, d, r)

// Row r's key and value element d of key-value head kvh, as the cache holds them.
float key_now(uint r, uint kvh, uint d) { return as_cached(key_rotated((r * p.n_kv_heads + kvh) * p.head_dim, d, r)); }
float value_now(uint r, uint kvh, uint d) { return as_cached(V[(r * p.n_kv_heads + kvh) * p.head_dim + d]); }

void main() {
  const uint r = p.row0 + gl_WorkGroupID.x, h = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
  const uint hd = p.head_dim, group = p.n_heads / p.n_kv_heads, kvh = h / group;
  const uint info = p.info_off + r * ROW_INFO;
  const uint first = uint(INFO[info + (p.local != 0 ? 3 : 1)]), end = uint(INFO[info + (p.local != 0 ? 4 : 2)]);
  const uint nv = end - first, qd = p.n_heads * hd;
  for (uint d = t; d < hd; d += WG) q[d] = query_at(r * qd + h * hd, d, r);
  if (h % group == 0) {  // the row's key and value, for later forwards (this one reads them from K and V)
    const uint at = (kvh * p.capacity + uint(INFO[info])) * hd;
    for (uint d = t; d < hd; d += WG) CK[at + d] = KV_T(key_now(r, kvh, d)), CV[at + d] = KV_T(value_now(r, kvh, d));
  }
  barrier();
  const uint head = kvh * p.capacity * hd;
  float m = -1.0 / 0.0, l = 0.0, acc[PER_THREAD];
  for (uint i = 0; i < PER_THREAD; i++) acc[i] = 0.0;
  for (uint c0 = 0; c0 < nv; c0 += WG) {
    const uint j = c0 + t;
    float s = -1.0 / 0.0;
    int e = 0;
    if (j < nv) {
      e = SLOTS[p.slots_off + first + j];
      float dot = 0.0;
      const uint key = head + uint(max(e, 0)) * hd;
      for (uint d0 = 0; d0 < hd; d0 += LOADS) {  // (dimensions past head_dim read its last and are not summed)
        float kd[LOADS];
        [[unroll]] for (uint u = 0; u < LOADS; u++) kd[u] = float(CK[key + min(d0 + u, hd - 1)]);
        if (e < 0) [[unroll]] for (uint u = 0; u < LOADS; u++) kd[u] = key_now(uint(-e - 2), kvh, min(d0 + u, hd - 1));
        [[unroll]] for (uint u = 0; u < LOADS; u++)
          if (d0 + u < hd) dot = fma(q[d0 + u], kd[u], dot);
      }
      s = dot * p.scale;
      if (p.cap > 0.0) s = p.cap * tanh(s / p.cap);
    }
    const float m_new = max(m, workgroup_max(s));
    const float pj = j < nv ? exp(s - m_new) : 0.0;
    prob[t] = pj, slot_of[t] = e;
    const float sum = workgroup_sum(pj);  // its barriers publish prob and slot_of too
    const float alpha = exp(m - m_new);
    l = l * alpha + sum;
    const uint n = min(WG, nv - c0);
    [[unroll]] for (uint i = 0; i < PER_THREAD; i++) {
      const uint d = t + i * WG;
      if (d >= hd) break;
      float a = 0.0;
      for (uint k0 = 0; k0 < n; k0 += LOADS) {
        float vd[LOADS];  // (slots past n read slot 0's value and are not summed)
        [[unroll]] for (uint u = 0; u < LOADS; u++) {
          const int ek = k0 + u < n ? slot_of[k0 + u] : 0;
          vd[u] = float(CV[head + uint(max(ek, 0)) * hd + d]);
        }
        [[unroll]] for (uint u = 0; u < LOADS; u++) {
          const int ek = k0 + u < n ? slot_of[k0 + u] : 0;
          if (ek < 0) vd[u] = value_now(uint(-ek - 2), kvh, d);
        }
        [[unroll]] for (uint u = 0; u < LOADS; u++)
          if (k0 + u < n) a = fma(prob[k0 + u], vd[u], a);
      }
      acc[i] = acc[i] * alpha + a;
    }
    m = m_new;
    barrier();
  }
  for (uint i = 0; i < PER_THREAD; i++) {
    const uint d = t + i * WG;
    if (d < hd) OUT[r * qd + h * hd + d] = acc[i] / l;
  }
}
