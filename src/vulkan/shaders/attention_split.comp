#version 450
// Attention in fixed context chunks (flash-decoding): one workgroup per (ROWS rows, key-value head, chunk of
// CHUNK visible slots) computes every query head of the group for each of its rows at once, so a key and a value
// are read once for the group and for the rows (a draft's rows see the same context), and a decode step's few
// rows still fill the device. Each writes, per query head, the chunk's running max, sum of exponentials and
// unnormalized output to PART; the last of the rows' chunks to finish (a counter in DONE a row group and key-
// value head says which) folds them in chunk order into OUT, so attention is one dispatch and one barrier (a
// pass of its own cost the H200 ~5 us a layer). Chunk c holds the row's visible slots c*CHUNK .. (c+1)*CHUNK-1
// whatever the other rows, and the fold's order is the chunks', whichever workgroup does it, so the sums' order
// is a function of the row's own slots (batch invariance): a row does the same operations whatever ROWS and the
// rows beside it (the rows share loads, never sums). RoPE, own rows' keys and the KV store as in attention.comp
// (chunk 0's workgroup stores).
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
  uint chunk, max_chunks, rows;  // (rows: the sequence's, from row0)
} p;

// A thread's output dimensions (ceil(head_dim / WG), at most 4), the query heads a key-value head serves (at
// most 8), set per model, and the rows a workgroup takes (ROWS consecutive rows of the sequence: they see the
// same context, so a key or value they share is read once for all of them): a thread's arrays and the shared
// ones no longer than the model needs. Head g of the workgroup's row gr is HEADS index gr * MAX_GROUP + g.
layout(constant_id = 0) const uint PER_THREAD = 4;
layout(constant_id = 1) const uint MAX_GROUP = 8;
layout(constant_id = 2) const uint ROWS = 1;
const uint HEADS = ROWS * MAX_GROUP;
const uint MAX_DIMS = PER_THREAD * WG;
// (q and the chunk's probabilities as vec4s: every thread reads the same ones, four a load, a quarter of the
// shared-memory reads of one at a time, which at one per FMA would bound the loops at a quarter of the FMA rate)
shared vec4 q4[HEADS * MAX_DIMS / 4];
shared vec4 prob4[HEADS * WG / 4];
shared float red[HEADS * WG];
shared vec4 score4[HEADS * WG / 4];  // a chunk's scores per head, for every thread to take their max
shared int slot_of[ROWS * WG];
shared bool folds;  // this workgroup finished its rows' chunks last

#include "attention_rows.glsl"

// Per head g < HEADS: the sum of red[g * WG ..] over the WG threads into red[g * WG], in one fixed tree.
void sum_heads() {
  const uint t = gl_LocalInvocationID.x;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s)
      for (uint g = 0; g < HEADS; g++) red[g * WG + t] += red[g * WG + t + s];
    barrier();
  }
}

// Row r's visible slots: their count, and the first's place in the slot list.
uint visible(uint r, out uint first) {
  const uint info = p.info_off + r * ROW_INFO;
  first = uint(INFO[info + (p.local != 0 ? 3 : 1)]);
  return uint(INFO[info + (p.local != 0 ? 4 : 2)]) - first;
}

// Row gr's values (dimension d) of its chunk's slots k0 .. k0 + LOADS - 1 into vd, over row gr - 1's where a
// slot differs from that row's (e_prev): rows that share a slot read it once. Those past n read slot 0's, not
// to be summed.
void row_values(uint gr, uint k0, uint n, uint head, uint kvh, uint d, inout int e_prev[LOADS], inout float vd[LOADS]) {
  int e[LOADS];
  [[unroll]] for (uint u = 0; u < LOADS; u++) e[u] = k0 + u < n ? slot_of[gr * WG + k0 + u] : 0;
  [[unroll]] for (uint u = 0; u < LOADS; u++)
    if (gr == 0 || e[u] != e_prev[u]) vd[u] = e[u] < 0 ? value_now(uint(-e[u] - 2), kvh, d) : float(CV[head + uint(e[u]) * p.head_dim + d]);
  [[unroll]] for (uint u = 0; u < LOADS; u++) e_prev[u] = e[u];
}

// The last workgroup of the rows' chunks folds a row's query heads side by side, each in chunk order, a block
// of WG chunks at a time: each thread reads one chunk's maxima and sums (a block's in one memory wait, not one a
// chunk), the factors exp(m_c - max) go to shared memory once (prob4; the sums to score4), and each output
// dimension reads FOLD_LOADS chunks' partial outputs a wait. (Read chunk after chunk, the fold was a chain of
// chunks x 3 memory waits in one workgroup, as long as the chunks' own work at long contexts.)
const uint FOLD_LOADS = 8;
void fold(uint r, uint kvh, uint group, uint chunks) {
  const uint t = gl_LocalInvocationID.x, hd = p.head_dim, part0 = (r * p.n_heads + kvh * group) * p.max_chunks;
#define PART_AT(g, cc) ((part0 + (g) * p.max_chunks + (cc)) * (hd + 2))
  // The maxima (exact in any order): each thread's chunks, then over the threads.
  float mx[MAX_GROUP];
  [[unroll]] for (uint g = 0; g < MAX_GROUP; g++) mx[g] = -1.0 / 0.0;
  for (uint cc = t; cc < chunks; cc += WG)
    [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
      if (g < group) mx[g] = max(mx[g], PART[PART_AT(g, cc)]);
  barrier();  // (red's last readers done)
  [[unroll]] for (uint g = 0; g < MAX_GROUP; g++) red[g * WG + t] = mx[g];
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s)
      for (uint g = 0; g < group; g++) red[g * WG + t] = max(red[g * WG + t], red[g * WG + t + s]);
    barrier();
  }
  [[unroll]] for (uint g = 0; g < MAX_GROUP; g++) mx[g] = red[g * WG];
  float sum[MAX_GROUP], out_d[PER_THREAD][MAX_GROUP];
  [[unroll]] for (uint g = 0; g < MAX_GROUP; g++) {
    sum[g] = 0.0;
    [[unroll]] for (uint i = 0; i < PER_THREAD; i++) out_d[i][g] = 0.0;
  }
  for (uint b0 = 0; b0 < chunks; b0 += WG) {
    const uint n = min(WG, chunks - b0);
    barrier();  // (the block before's readers done)
    if (t < n)
      [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
        if (g < group) {
          prob4[(g * WG + t) / 4][t % 4] = exp(PART[PART_AT(g, b0 + t)] - mx[g]);
          score4[(g * WG + t) / 4][t % 4] = PART[PART_AT(g, b0 + t) + 1];
        }
    barrier();
    for (uint k = 0; k < n; k++)  // (every thread adds the same terms in chunk order: the same sums)
      [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
        if (g < group) sum[g] += score4[(g * WG + k) / 4][k % 4] * prob4[(g * WG + k) / 4][k % 4];
    for (uint k0 = 0; k0 < n; k0 += FOLD_LOADS)
      [[unroll]] for (uint i = 0; i < PER_THREAD; i++)
        if (t + i * WG < hd) {
          float v[FOLD_LOADS][MAX_GROUP];
          [[unroll]] for (uint u = 0; u < FOLD_LOADS; u++)
            [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
              v[u][g] = g < group && k0 + u < n ? PART[PART_AT(g, b0 + k0 + u) + 2 + t + i * WG] : 0.0;
          [[unroll]] for (uint u = 0; u < FOLD_LOADS; u++)
            if (k0 + u < n)
              [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
                if (g < group) out_d[i][g] += v[u][g] * prob4[(g * WG + k0 + u) / 4][(k0 + u) % 4];
        }
  }
  [[unroll]] for (uint i = 0; i < PER_THREAD; i++)
    [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
      if (g < group && t + i * WG < hd) OUT[(r * p.n_heads + kvh * group + g) * hd + t + i * WG] = out_d[i][g] / sum[g];
#undef PART_AT
}

void main() {
  const uint kvh = gl_WorkGroupID.y, c = gl_WorkGroupID.z, t = gl_LocalInvocationID.x;
  const uint hd = p.head_dim, group = p.n_heads / p.n_kv_heads, qd = p.n_heads * hd, c0 = c * p.chunk;
  const uint r0 = p.row0 + gl_WorkGroupID.x * ROWS, rows = min(ROWS, p.row0 + p.rows - r0);
  // Each row's visible slots and, in this chunk, where they stop (at or before c0: none here).
  uint first[ROWS], stop[ROWS], most = 0;
  [[unroll]] for (uint gr = 0; gr < ROWS; gr++) {
    const uint nv = gr < rows ? visible(r0 + gr, first[gr]) : 0;
    if (gr >= rows) first[gr] = 0;
    stop[gr] = min(nv, c0 + p.chunk), most = max(most, nv);
  }
  if (c == 0)  // the rows' keys and values, for later forwards (this one reads them from K and V)
    for (uint r = r0; r < r0 + rows; r++) {
      const uint at = (kvh * p.capacity + uint(INFO[p.info_off + r * ROW_INFO])) * hd;
      for (uint d = t; d < hd; d += WG) CK[at + d] = KV_T(key_now(r, kvh, d)), CV[at + d] = KV_T(value_now(r, kvh, d));
    }
  if (c0 >= most) return;  // (past every row's slots: a longer row's chunk)
  for (uint gr = 0; gr < rows; gr++)
    for (uint g = 0; g < group; g++)
      for (uint d = t; d < hd; d += WG)
        q4[((gr * MAX_GROUP + g) * MAX_DIMS + d) / 4][d % 4] = query_at((r0 + gr) * qd + (kvh * group + g) * hd, d, r0 + gr);
  barrier();
  const uint head = kvh * p.capacity * hd;
  uint last = 0;
  [[unroll]] for (uint gr = 0; gr < ROWS; gr++) last = max(last, stop[gr]);
  // (loops over the rows and the group run ROWS and MAX_GROUP times with a guard: constant indices keep these
  // arrays in registers; a row works in a step only where it has slots there, so each row's operations are the
  // ones it would do alone: its bits whatever the rows beside it)
  float m[HEADS], l[HEADS], acc[HEADS][PER_THREAD];  // (l: this thread's own slots' sums)
  [[unroll]] for (uint h = 0; h < HEADS; h++) {
    m[h] = -1.0 / 0.0, l[h] = 0.0;
    [[unroll]] for (uint i = 0; i < PER_THREAD; i++) acc[h][i] = 0.0;
  }
  for (uint b0 = c0; b0 < last; b0 += WG) {
    const uint j = b0 + t;
    int e[ROWS];
    float s[HEADS];
    [[unroll]] for (uint gr = 0; gr < ROWS; gr++) e[gr] = j < stop[gr] ? SLOTS[p.slots_off + first[gr] + j] : 0;
    [[unroll]] for (uint h = 0; h < HEADS; h++) s[h] = -1.0 / 0.0;
    float dot[HEADS];
    [[unroll]] for (uint h = 0; h < HEADS; h++) dot[h] = 0.0;
    for (uint d0 = 0; d0 < hd; d0 += LOADS) {
      float kd[LOADS];
      int held = -1;  // the slot whose key kd holds (-1: none; a slot is >= 0, or <= -2 for this forward's rows)
      [[unroll]] for (uint gr = 0; gr < ROWS; gr++)
        if (j < stop[gr]) {
          if (e[gr] != held) keys_at(e[gr], head, kvh, d0, kd), held = e[gr];  // (a key the row before read: once)
          [[unroll]] for (uint u = 0; u < LOADS; u++)
            if (d0 + u < hd)
              [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
                if (g < group) dot[gr * MAX_GROUP + g] = fma(q4[((gr * MAX_GROUP + g) * MAX_DIMS + d0) / 4 + u / 4][u % 4], kd[u], dot[gr * MAX_GROUP + g]);
        }
    }
    [[unroll]] for (uint gr = 0; gr < ROWS; gr++)
      if (j < stop[gr])
        [[unroll]] for (uint g = 0; g < MAX_GROUP; g++) {
          const uint h = gr * MAX_GROUP + g;
          s[h] = dot[h] * p.scale;
          if (p.cap > 0.0) s[h] = p.cap * tanh(s[h] / p.cap);
        }
    // Two barriers a chunk, as in attention.comp: every thread takes each head's max of the chunk's scores
    // itself (exact in any order) and keeps its own slots' sums of exponentials, added at the end.
    [[unroll]] for (uint gr = 0; gr < ROWS; gr++)
      if (b0 < stop[gr])
        [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
          if (g < group) score4[((gr * MAX_GROUP + g) * WG + t) / 4][t % 4] = s[gr * MAX_GROUP + g];
    barrier();  // A
    float m_new[HEADS], pj[HEADS];
    [[unroll]] for (uint gr = 0; gr < ROWS; gr++) {
      slot_of[gr * WG + t] = e[gr];
      if (b0 < stop[gr])
        [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
          if (g < group) {
            const uint h = gr * MAX_GROUP + g;
            vec4 cm = score4[h * WG / 4];
            [[unroll]] for (uint i = 1; i < WG / 4; i++) cm = max(cm, score4[h * WG / 4 + i]);
            m_new[h] = max(m[h], max(max(cm.x, cm.y), max(cm.z, cm.w)));
            pj[h] = j < stop[gr] ? exp(s[h] - m_new[h]) : 0.0;
            prob4[(h * WG + t) / 4][t % 4] = pj[h];
          }
    }
    barrier();  // B
    uint n[ROWS], longest = 0;
    [[unroll]] for (uint gr = 0; gr < ROWS; gr++) {
      n[gr] = b0 < stop[gr] ? min(WG, stop[gr] - b0) : 0, longest = max(longest, n[gr]);
      if (b0 < stop[gr])
        [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
          if (g < group) {
            const uint h = gr * MAX_GROUP + g;
            const float alpha = exp(m[h] - m_new[h]);
            l[h] = l[h] * alpha + pj[h];
            [[unroll]] for (uint i = 0; i < PER_THREAD; i++) acc[h][i] *= alpha;
            m[h] = m_new[h];
          }
    }
    // Each of the thread's dimensions d = t + i WG sums the chunk's values in slot order into a[i][h] (the
    // slots' loop outside the dimensions', so every loop around a register array has a fixed count; a thread
    // without a dimension leaves it at once, as in attention.comp).
    const uint mine = t < hd ? longest : 0;
    float a[PER_THREAD][HEADS];
    [[unroll]] for (uint i = 0; i < PER_THREAD; i++)
      [[unroll]] for (uint h = 0; h < HEADS; h++) a[i][h] = 0.0;
    for (uint k0 = 0; k0 < mine; k0 += LOADS)
      [[unroll]] for (uint i = 0; i < PER_THREAD; i++)
        if (t + i * WG < hd) {
          float vd[LOADS];
          int ev[LOADS];
          [[unroll]] for (uint gr = 0; gr < ROWS; gr++) {
            row_values(gr, k0, n[gr], head, kvh, t + i * WG, ev, vd);
            [[unroll]] for (uint u = 0; u < LOADS; u++)
              if (k0 + u < n[gr])
                [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
                  if (g < group) {
                    const uint h = gr * MAX_GROUP + g;
                    a[i][h] = fma(prob4[(h * WG + k0) / 4 + u / 4][u % 4], vd[u], a[i][h]);
                  }
          }
        }
    [[unroll]] for (uint gr = 0; gr < ROWS; gr++)
      if (b0 < stop[gr])
        [[unroll]] for (uint i = 0; i < PER_THREAD; i++)
          [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
            if (g < group && t + i * WG < hd) acc[gr * MAX_GROUP + g][i] += a[i][gr * MAX_GROUP + g];
  }
  [[unroll]] for (uint h = 0; h < HEADS; h++) red[h * WG + t] = l[h];
  sum_heads();
  [[unroll]] for (uint gr = 0; gr < ROWS; gr++)
    if (c0 < stop[gr])
      [[unroll]] for (uint g = 0; g < MAX_GROUP; g++)
        if (g < group) {
          const uint h = gr * MAX_GROUP + g, o = (((r0 + gr) * p.n_heads + kvh * group + g) * p.max_chunks + c) * (hd + 2);
          if (t == 0) PART[o] = m[h], PART[o + 1] = red[h * WG];
          [[unroll]] for (uint i = 0; i < PER_THREAD; i++) {
            const uint d = t + i * WG;
            if (d < hd) PART[o + 2 + d] = acc[h][i];
          }
        }
  // Every thread's PART writes made visible before the count (the classic last-block pattern), then the
  // last chunk's workgroup folds each row.
  memoryBarrierBuffer();
  barrier();
  const uint count = r0 * p.n_kv_heads + kvh;
  if (t == 0) folds = atomicAdd(DONE[count], 1u) == (most + p.chunk - 1) / p.chunk - 1;
  barrier();
  if (!folds) return;
  memoryBarrierBuffer();
  for (uint gr = 0; gr < rows; gr++) {
    uint unused;
    fold(r0 + gr, kvh, group, (visible(r0 + gr, unused) + p.chunk - 1) / p.chunk);
  }
  if (t == 0) DONE[count] = 0;
}
