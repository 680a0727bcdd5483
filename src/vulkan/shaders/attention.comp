#version 450
// Attention of one sequence's rows, with RoPE and the KV store of those rows folded in: one workgroup per
// (row, query head). The row's q is rotated as it is read. Its visible slots go in chunks of WG, a score per
// thread; the softmax runs online across chunks (a running max; each thread sums its own slots' exponentials,
// those sums added once at the end), and each thread accumulates its own output dimensions over a chunk's slots in slot order. A slot the forward's own rows write is -(row + 2) in
// the list: its key is read from this forward's keys, rotated and rounded as the cache would hold it, and its
// value likewise, so no row waits for another's store; the first query head of each key-value group stores
// its row's key and value in the cache for later forwards. The order depends only on the row's own visible
// slots, never on the other rows of the forward (batch invariance), and a key gives the same bits read either
// way (kv.glsl's rope_pair). Keys and values are read in batches ahead of the FMAs (attention_rows.glsl), which
// keep their order.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "kv.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Query { float Q[]; };  // as the product left it
layout(std430, binding = 1) buffer CacheK { KV_T CK[]; };
layout(std430, binding = 1) readonly buffer CacheK16 { uvec4 CK16[]; };  // the same keys, 16 bytes a load
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

// A thread's output dimensions d = t + i WG, i < PER_THREAD: ceil(head_dim / WG), set per model (at most 4:
// head_dim <= 256), so a thread's arrays are no longer than the model needs.
layout(constant_id = 0) const uint PER_THREAD = 4;
const uint MAX_DIMS = PER_THREAD * WG;
shared float red[WG];
shared vec4 score4[WG / 4];  // a chunk's scores, for every thread to take their max
shared vec4 q4[MAX_DIMS / 4];  // (q and the chunk's probabilities as vec4s: every thread reads the same, four a load)
shared vec4 prob4[WG / 4];
shared int slot_of[WG];
#include "reduce.glsl"

#include "attention_rows.glsl"

void main() {
  const uint r = p.row0 + gl_WorkGroupID.x, h = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
  const uint hd = p.head_dim, group = p.n_heads / p.n_kv_heads, kvh = h / group;
  const uint info = p.info_off + r * ROW_INFO;
  const uint first = uint(INFO[info + (p.local != 0 ? 3 : 1)]), end = uint(INFO[info + (p.local != 0 ? 4 : 2)]);
  const uint nv = end - first, qd = p.n_heads * hd;
  for (uint d = t; d < hd; d += WG) q4[d / 4][d % 4] = query_at(r * qd + h * hd, d, r);
  if (h % group == 0) {  // the row's key and value, for later forwards (this one reads them from K and V)
    const uint at = (kvh * p.capacity + uint(INFO[info])) * hd;
    for (uint d = t; d < hd; d += WG) CK[at + d] = KV_T(key_now(r, kvh, d)), CV[at + d] = KV_T(value_now(r, kvh, d));
  }
  barrier();
  const uint head = kvh * p.capacity * hd;
  float m = -1.0 / 0.0, l = 0.0, acc[PER_THREAD];  // (l: the sum of this thread's own slots' exponentials)
  [[unroll]] for (uint i = 0; i < PER_THREAD; i++) acc[i] = 0.0;
  for (uint c0 = 0; c0 < nv; c0 += WG) {
    const uint j = c0 + t;
    float s = -1.0 / 0.0;
    int e = 0;
    if (j < nv) {
      e = SLOTS[p.slots_off + first + j];
      float dot = 0.0;
      for (uint d0 = 0; d0 < hd; d0 += LOADS) {
        float kd[LOADS];
        keys_at(e, head, kvh, d0, kd);
        [[unroll]] for (uint u = 0; u < LOADS; u++)
          if (d0 + u < hd) dot = fma(q4[d0 / 4 + u / 4][u % 4], kd[u], dot);
      }
      s = dot * p.scale;
      if (p.cap > 0.0) s = p.cap * tanh(s / p.cap);
    }
    // Two barriers a chunk: every thread takes the max of the chunk's scores itself (a max is exact in any
    // order), and keeps its own slots' sum of exponentials. The barriers also keep a chunk's writes from the
    // previous chunk's readers: score4 is written past B of the chunk before, prob4 and slot_of past A, and
    // every thread reads them before the next of those barriers.
    score4[t / 4][t % 4] = s;
    barrier();  // A
    vec4 cm = score4[0];
    [[unroll]] for (uint i = 1; i < WG / 4; i++) cm = max(cm, score4[i]);
    const float m_new = max(m, max(max(cm.x, cm.y), max(cm.z, cm.w)));
    const float pj = j < nv ? exp(s - m_new) : 0.0;
    prob4[t / 4][t % 4] = pj, slot_of[t] = e;
    barrier();  // B
    const float alpha = exp(m - m_new);
    l = l * alpha + pj;
    const uint n = min(WG, nv - c0), mine = t < hd ? n : 0;
    // Each of the thread's dimensions d = t + i WG sums the chunk's values in slot order into a[i] (the
    // slots' loop outside the dimensions', so every loop around a register array has a fixed count). A thread
    // without a dimension (head_dim < WG) leaves the slots' loop at once: a software device runs a branch's
    // both sides under a mask, but stops a loop no lane is in.
    float a[PER_THREAD];
    [[unroll]] for (uint i = 0; i < PER_THREAD; i++) a[i] = 0.0;
    for (uint k0 = 0; k0 < mine; k0 += LOADS)
      [[unroll]] for (uint i = 0; i < PER_THREAD; i++)
        if (t + i * WG < hd) {
          float vd[LOADS];
          values_at(k0, n, head, kvh, t + i * WG, vd);
          [[unroll]] for (uint u = 0; u < LOADS; u++)
            if (k0 + u < n) a[i] = fma(prob4[k0 / 4 + u / 4][u % 4], vd[u], a[i]);
        }
    [[unroll]] for (uint i = 0; i < PER_THREAD; i++)
      if (t + i * WG < hd) acc[i] = acc[i] * alpha + a[i];
    m = m_new;
  }
  const float total = workgroup_sum(l);
  [[unroll]] for (uint i = 0; i < PER_THREAD; i++) {
    const uint d = t + i * WG;
    if (d < hd) OUT[r * qd + h * hd + d] = acc[i] / total;
  }
}
