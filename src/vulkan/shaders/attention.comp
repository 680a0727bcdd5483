#version 450
// Attention of one sequence's rows: one workgroup per (row, query head). The row's visible slots go in
// chunks of WG, a score per thread; the softmax runs online across chunks (running max and sum), and each
// thread accumulates its own output dimensions over a chunk's slots in slot order. The order depends only on
// the row's own visible slots, never on the other rows of the forward (batch invariance).
#include "common.glsl"
#include "kv.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Query { float Q[]; };
layout(std430, binding = 1) readonly buffer CacheK { KV_T CK[]; };
layout(std430, binding = 2) readonly buffer CacheV { KV_T CV[]; };
layout(std430, binding = 3) readonly buffer Info { int INFO[]; };
layout(std430, binding = 4) readonly buffer Slots { int SLOTS[]; };
layout(std430, binding = 5) writeonly buffer Output { float OUT[]; };
layout(push_constant) uniform Params {
  uint row0, n_heads, n_kv_heads, head_dim, capacity;
  uint info_off, slots_off, local;
  float scale, cap;
} p;

const uint MAX_DIMS = 256, PER_THREAD = MAX_DIMS / WG;
shared float red[WG];
shared float q[MAX_DIMS];
shared float prob[WG];
shared uint slot_of[WG];
#include "reduce.glsl"

void main() {
  const uint r = p.row0 + gl_WorkGroupID.x, h = gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
  const uint hd = p.head_dim, kvh = h / (p.n_heads / p.n_kv_heads);
  const uint info = p.info_off + r * ROW_INFO;
  const uint first = uint(INFO[info + (p.local != 0 ? 3 : 1)]), end = uint(INFO[info + (p.local != 0 ? 4 : 2)]);
  const uint nv = end - first, qd = p.n_heads * hd;
  for (uint d = t; d < hd; d += WG) q[d] = Q[r * qd + h * hd + d];
  barrier();
  const uint head = kvh * p.capacity * hd;
  float m = -1.0 / 0.0, l = 0.0, acc[PER_THREAD];
  for (uint i = 0; i < PER_THREAD; i++) acc[i] = 0.0;
  for (uint c0 = 0; c0 < nv; c0 += WG) {
    const uint j = c0 + t;
    float s = -1.0 / 0.0;
    uint slot = 0;
    if (j < nv) {
      slot = uint(SLOTS[p.slots_off + first + j]);
      float dot = 0.0;
      for (uint d = 0; d < hd; d++) dot = fma(q[d], float(CK[head + slot * hd + d]), dot);
      s = dot * p.scale;
      if (p.cap > 0.0) s = p.cap * tanh(s / p.cap);
    }
    const float m_new = max(m, workgroup_max(s));
    const float pj = j < nv ? exp(s - m_new) : 0.0;
    prob[t] = pj, slot_of[t] = slot;
    const float sum = workgroup_sum(pj);  // its barriers publish prob and slot_of too
    const float alpha = exp(m - m_new);
    l = l * alpha + sum;
    const uint n = min(WG, nv - c0);
    for (uint i = 0; i < PER_THREAD; i++) {
      const uint d = t + i * WG;
      if (d >= hd) break;
      float a = 0.0;
      for (uint k = 0; k < n; k++) a = fma(prob[k], float(CV[head + slot_of[k] * hd + d]), a);
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
