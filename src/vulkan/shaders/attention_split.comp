#version 450
// Attention in fixed context chunks (flash-decoding): one workgroup per (row, key-value head, chunk of CHUNK
// visible slots) computes every query head of the group at once, so a key and a value are read once for the
// group, and a decode step's few rows still fill the device. Each writes, per query head, the chunk's running
// max, sum of exponentials and unnormalized output to PART; the last of a (row, key-value head)'s chunks to
// finish (a counter in DONE says which) folds them in chunk order into OUT, so attention is one dispatch and
// one barrier (a pass of its own cost the H200 ~5 us a layer). Chunk c holds the row's visible slots
// c*CHUNK .. (c+1)*CHUNK-1 whatever the other rows, and the fold's order is the chunks', whichever workgroup
// does it, so the sums' order is a function of the row's own slots (batch invariance). RoPE, own rows' keys and the KV store as in
// attention.comp (chunk 0's workgroup stores).
// Keys and values are read in batches ahead of the FMAs (attention_rows.glsl), which keep their order.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "kv.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Query { float Q[]; };
layout(std430, binding = 1) buffer CacheK { KV_T CK[]; };
layout(std430, binding = 1) readonly buffer CacheK16 { uvec4 CK16[]; };  // the same keys, 16 bytes a load
layout(std430, binding = 2) buffer CacheV { KV_T CV[]; };
layout(std430, binding = 3) readonly buffer Info { int INFO[]; };
layout(std430, binding = 3) readonly buffer Angles { float A[]; };
layout(std430, binding = 4) readonly buffer Slots { int SLOTS[]; };
// (coherent: the chunks' workgroups write PART, the last one reads it back in the same dispatch)
layout(std430, binding = 5) coherent buffer Part { float PART[]; };  // [row][head][chunk]: max, sum, out[hd]
layout(std430, binding = 6) readonly buffer Keys { float K[]; };
layout(std430, binding = 7) readonly buffer Values { float V[]; };
layout(std430, binding = 8) writeonly buffer Output { float OUT[]; };  // [row][head][hd]
// Chunks finished a (row, key-value head); the folding workgroup sets it back to 0, as every dispatch finds it.
layout(std430, binding = 9) coherent buffer Done { uint DONE[]; };
layout(push_constant) uniform Params {
  uint row0, n_heads, n_kv_heads, head_dim, capacity;
  uint info_off, slots_off, local;
  float scale, cap;
  uint half_dim, neox, cos_off, sin_off;
  uint chunk, max_chunks;
} p;

// A thread's output dimensions (ceil(head_dim / WG), at most 4) and the query heads a key-value head serves (at
// most 8), set per model: a thread's arrays and the shared ones no longer than the model needs.
layout(constant_id = 0) const uint PER_THREAD = 4;
layout(constant_id = 1) const uint MAX_GROUP = 8;
const uint MAX_DIMS = PER_THREAD * WG;
// (q and the chunk's probabilities as vec4s: every thread reads the same ones, four a load, a quarter of the
// shared-memory reads of one at a time, which at one per FMA would bound the loops at a quarter of the FMA rate)
shared vec4 q4[MAX_GROUP * MAX_DIMS / 4];
shared vec4 prob4[MAX_GROUP * WG / 4];
shared float red[MAX_GROUP * WG];
shared vec4 score4[MAX_GROUP * WG / 4];  // a chunk's scores per head, for every thread to take their max
shared int slot_of[WG];
shared bool folds;  // this workgroup finished its row's chunks last

#include "attention_rows.glsl"

// Per head g < n: the sum of red[g * WG ..] over the WG threads into red[g * WG], in one fixed tree.
void sum_heads(uint n) {
  const uint t = gl_LocalInvocationID.x;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s)
      for (uint g = 0; g < n; g++) red[g * WG + t] += red[g * WG + t + s];
    barrier();
  }
}

void main() {
  const uint r = p.row0 + gl_WorkGroupID.x, kvh = gl_WorkGroupID.y, c = gl_WorkGroupID.z, t = gl_LocalInvocationID.x;
  const uint hd = p.head_dim, group = p.n_heads / p.n_kv_heads, qd = p.n_heads * hd;
  const uint info = p.info_off + r * ROW_INFO;
  const uint first = uint(INFO[info + (p.local != 0 ? 3 : 1)]), end = uint(INFO[info + (p.local != 0 ? 4 : 2)]);
  const uint nv = end - first, c0 = c * p.chunk;
  if (c == 0) {  // the row's key and value, for later forwards (this one reads them from K and V)
    const uint at = (kvh * p.capacity + uint(INFO[info])) * hd;
    for (uint d = t; d < hd; d += WG) CK[at + d] = KV_T(key_now(r, kvh, d)), CV[at + d] = KV_T(value_now(r, kvh, d));
  }
  if (c0 >= nv) return;  // (past the row's slots: a longer row's chunk)
  for (uint g = 0; g < group; g++)
    for (uint d = t; d < hd; d += WG) q4[(g * MAX_DIMS + d) / 4][d % 4] = query_at(r * qd + (kvh * group + g) * hd, d, r);
  barrier();
  const uint head = kvh * p.capacity * hd, stop = min(nv, c0 + p.chunk);
  // (loops over the group run MAX_GROUP times with a guard: constant indices keep these arrays in registers)
  float m[MAX_GROUP], l[MAX_GROUP], acc[MAX_GROUP][PER_THREAD];  // (l: this thread's own slots' sums)
  [[unroll]] for (uint g = 0; g < MAX_GROUP; g++) {
    m[g] = -1.0 / 0.0, l[g] = 0.0;
    [[unroll]] for (uint i = 0; i < PER_THREAD; i++) acc[g][i] = 0.0;
  }
  for (uint b0 = c0; b0 < stop; b0 += WG) {
    const uint j = b0 + t;
    int e = 0;
    float s[MAX_GROUP];
    [[unroll]] for (uint g = 0; g < MAX_GROUP; g++) s[g] = -1.0 / 0.0;
    if (j < stop) {
      e = SLOTS[p.slots_off + first + j];
      float dot[MAX_GROUP];
      [[unroll]] for (uint g = 0; g < MAX_GROUP; g++) dot[g] = 0.0;
      for (uint d0 = 0; d0 < hd; d0 += LOADS) {
        float kd[LOADS];
        keys_at(e, head, kvh, d0, kd);
        [[unroll]] for (uint u = 0; u < LOADS; u++)
          if (d0 + u < hd)
            [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
              if (g < group) dot[g] = fma(q4[(g * MAX_DIMS + d0) / 4 + u / 4][u % 4], kd[u], dot[g]);
      }
      [[unroll]] for (uint g = 0; g < MAX_GROUP; g++) {
        s[g] = dot[g] * p.scale;
        if (p.cap > 0.0) s[g] = p.cap * tanh(s[g] / p.cap);
      }
    }
    // Two barriers a chunk, as in attention.comp: every thread takes each head's max of the chunk's scores
    // itself (exact in any order) and keeps its own slots' sums of exponentials, added at the end.
    [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
      if (g < group) score4[(g * WG + t) / 4][t % 4] = s[g];
    barrier();  // A
    float m_new[MAX_GROUP], pj[MAX_GROUP];
    [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
      if (g < group) {
        vec4 cm = score4[g * WG / 4];
        [[unroll]] for (uint i = 1; i < WG / 4; i++) cm = max(cm, score4[g * WG / 4 + i]);
        m_new[g] = max(m[g], max(max(cm.x, cm.y), max(cm.z, cm.w)));
        pj[g] = j < stop ? exp(s[g] - m_new[g]) : 0.0;
        prob4[(g * WG + t) / 4][t % 4] = pj[g];
      }
    slot_of[t] = e;
    barrier();  // B
    const uint n = min(WG, stop - b0), mine = t < hd ? n : 0;
    [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
      if (g < group) {
        const float alpha = exp(m[g] - m_new[g]);
        l[g] = l[g] * alpha + pj[g];
        [[unroll]] for (uint i = 0; i < PER_THREAD; i++) acc[g][i] *= alpha;
        m[g] = m_new[g];
      }
    // Each of the thread's dimensions d = t + i WG sums the chunk's values in slot order into a[i][g] (the
    // slots' loop outside the dimensions', so every loop around a register array has a fixed count; a thread
    // without a dimension leaves it at once, as in attention.comp).
    float a[PER_THREAD][MAX_GROUP];
    [[unroll]] for (uint i = 0; i < PER_THREAD; i++)
      [[unroll]] for (uint g = 0; g < MAX_GROUP; g++) a[i][g] = 0.0;
    for (uint k0 = 0; k0 < mine; k0 += LOADS)
      [[unroll]] for (uint i = 0; i < PER_THREAD; i++)
        if (t + i * WG < hd) {
          float vd[LOADS];
          values_at(k0, n, head, kvh, t + i * WG, vd);
          [[unroll]] for (uint u = 0; u < LOADS; u++)
            if (k0 + u < n)
              [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
                if (g < group) a[i][g] = fma(prob4[(g * WG + k0) / 4 + u / 4][u % 4], vd[u], a[i][g]);
        }
    [[unroll]] for (uint i = 0; i < PER_THREAD; i++)
      [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
        if (g < group && t + i * WG < hd) acc[g][i] += a[i][g];
  }
  [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
    if (g < group) red[g * WG + t] = l[g];
  sum_heads(group);
  [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
    if (g < group) {
      const uint o = ((r * p.n_heads + kvh * group + g) * p.max_chunks + c) * (hd + 2);
      if (t == 0) PART[o] = m[g], PART[o + 1] = red[g * WG];
      [[unroll]] for (uint i = 0; i < PER_THREAD; i++) {
        const uint d = t + i * WG;
        if (d < hd) PART[o + 2 + d] = acc[g][i];
      }
    }
  // Every thread's PART writes made visible before the count (the classic last-block pattern), then the
  // last chunk's workgroup folds: each query head's maxima first, then the rescaled sums and outputs.
  memoryBarrierBuffer();
  barrier();
  const uint chunks = (nv + p.chunk - 1) / p.chunk, count = r * p.n_kv_heads + kvh;
  if (t == 0) folds = atomicAdd(DONE[count], 1u) == chunks - 1;
  barrier();
  if (!folds) return;
  memoryBarrierBuffer();
  // The group's query heads folded side by side, each in chunk order: a step's loads for every head are
  // independent, in flight together (a head after another made the fold a chain of group x chunks x 3 memory
  // waits, as long as the chunks' own work at long contexts). Head g's chunk cc is at part(g, cc).
  const uint part0 = (r * p.n_heads + kvh * group) * p.max_chunks;
#define PART_AT(g, cc) ((part0 + (g) * p.max_chunks + (cc)) * (hd + 2))
  float mx[MAX_GROUP], sum[MAX_GROUP];
  [[unroll]] for (uint g = 0; g < MAX_GROUP; g++) mx[g] = -1.0 / 0.0, sum[g] = 0.0;
  for (uint cc = 0; cc < chunks; cc++)
    [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
      if (g < group) mx[g] = max(mx[g], PART[PART_AT(g, cc)]);
  for (uint cc = 0; cc < chunks; cc++)
    [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
      if (g < group) sum[g] += PART[PART_AT(g, cc) + 1] * exp(PART[PART_AT(g, cc)] - mx[g]);
  for (uint d = t; d < hd; d += WG) {
    float out_d[MAX_GROUP];
    [[unroll]] for (uint g = 0; g < MAX_GROUP; g++) out_d[g] = 0.0;
    for (uint cc = 0; cc < chunks; cc++)
      [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
        if (g < group) out_d[g] += PART[PART_AT(g, cc) + 2 + d] * exp(PART[PART_AT(g, cc)] - mx[g]);
    [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
      if (g < group) OUT[(r * p.n_heads + kvh * group + g) * hd + d] = out_d[g] / sum[g];
  }
#undef PART_AT
  if (t == 0) DONE[count] = 0;
}
