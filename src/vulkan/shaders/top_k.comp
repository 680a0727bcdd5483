#version 450
// Row r's k largest values (k <= MAX_K), largest first and the lower index among equals (as the CPU's
// softmax_top_k), with their softmax probabilities over the whole row: OUT[out_off + r * 2k ..] holds the k
// indices, then the k probabilities' bits. Each thread scans its strided share, keeping its own sorted top k
// and an online max and sum of exponentials; then a fixed tree merges the lists and the sums (the order a
// function of n alone: the same bits whatever the number of rows). NaN counts as -inf.
#include "common.glsl"
#define MAX_K 16
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Values { float X[]; };
layout(std430, binding = 1) buffer Output { uint OUT[]; };
layout(push_constant) uniform Params { uint n_rows, n, k, x_off, out_off; } p;
shared float top_v[WG * MAX_K];
shared uint top_i[WG * MAX_K];
shared float row_max[WG], row_sum[WG];

// a before b in the order kept: larger value, then lower index (an empty entry, index ~0, after all)
bool before(float va, uint ia, float vb, uint ib) {
  if (ia == 0xffffffffu) return false;
  if (ib == 0xffffffffu) return true;
  return va > vb || (va == vb && ia < ib);
}

void main() {
  const uint r = gl_WorkGroupID.x, t = gl_LocalInvocationID.x, k = min(p.k, uint(MAX_K));
  if (r >= p.n_rows) return;
  // (The lists are indexed only by the counters of fixed-count loops, entries past k guarded: an array indexed
  // at run time would sit in memory on a GPU.)
  float v[MAX_K];
  uint at[MAX_K];
  [[unroll]] for (uint j = 0; j < MAX_K; j++) v[j] = -1.0 / 0.0, at[j] = 0xffffffffu;
  float m = -1.0 / 0.0, s = 0.0, last_v = -1.0 / 0.0;  // last_v, last_i: the list's k-th entry
  uint last_i = 0xffffffffu;
  for (uint i = t; i < p.n; i += WG) {
    float x = X[p.x_off + r * p.n + i];
    if (isnan(x)) x = -1.0 / 0.0;
    if (x > m) s = s * exp(m - x) + 1.0, m = x;
    else if (x != -1.0 / 0.0) s += exp(x - m);
    if (!before(x, i, last_v, last_i)) continue;
    // Inserted in order: at each place it goes before, it takes the place and carries the entry on (i rises:
    // an equal value already held stays ahead); the k-th entry drops out.
    float cv = x;
    uint ci = i;
    [[unroll]] for (uint j = 0; j < MAX_K; j++)
      if (j < k && before(cv, ci, v[j], at[j])) {
        const float tv = v[j];
        const uint ti = at[j];
        v[j] = cv, at[j] = ci, cv = tv, ci = ti;
      }
    [[unroll]] for (uint j = 0; j < MAX_K; j++)
      if (j + 1 == k) last_v = v[j], last_i = at[j];
  }
  [[unroll]] for (uint j = 0; j < MAX_K; j++)
    if (j < k) top_v[t * MAX_K + j] = v[j], top_i[t * MAX_K + j] = at[j];
  row_max[t] = m, row_sum[t] = s;
  barrier();
  for (uint half_ = WG / 2; half_ > 0; half_ >>= 1) {
    if (t < half_) {
      const uint a = t * MAX_K, b = (t + half_) * MAX_K;
      uint ia = 0, ib = 0;
      [[unroll]] for (uint j = 0; j < MAX_K; j++)  // the merge of two sorted lists, cut at k
        if (j < k) {
          if (before(top_v[b + ib], top_i[b + ib], top_v[a + ia], top_i[a + ia])) v[j] = top_v[b + ib], at[j] = top_i[b + ib], ib++;
          else v[j] = top_v[a + ia], at[j] = top_i[a + ia], ia++;
        }
      const float mb = row_max[t + half_], sb = row_sum[t + half_], ma = row_max[t];
      const float mm = max(ma, mb);
      const float sa = mm == -1.0 / 0.0 ? 0.0 : row_sum[t] * exp(ma - mm);
      row_sum[t] = sa + (mm == -1.0 / 0.0 ? 0.0 : sb * exp(mb - mm));
      row_max[t] = mm;
    }
    barrier();
    if (t < half_)
      [[unroll]] for (uint j = 0; j < MAX_K; j++)
        if (j < k) top_v[t * MAX_K + j] = v[j], top_i[t * MAX_K + j] = at[j];
    barrier();
  }
  if (t == 0) {
    const uint o = p.out_off + r * 2 * k;
    for (uint j = 0; j < k; j++) {
      OUT[o + j] = top_i[j];
      const float prob = top_i[j] == 0xffffffffu ? 0.0 : exp(top_v[j] - row_max[0]) / row_sum[0];
      OUT[o + k + j] = floatBitsToUint(prob);
    }
  }
}
