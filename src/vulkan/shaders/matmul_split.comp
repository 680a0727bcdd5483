#version 450
// Y[m][n] (+)= sum_k X[m][k] W[n][k], K split over a workgroup: a family of kernels whose shape is set by
// specialization constants (vulkan/matmul_family.h), one workgroup per NO output features and tile of R rows.
// Step s covers STEP consecutive inputs; thread t takes four of them (or, PAIR, two fours that share their
// weight bytes: dequant4.glsl's load_pair) for each of the NO outputs, and those of DEPTH steps, all loaded
// before any is used (NO x FOURS x DEPTH loads in flight a thread, to cover the memory's latency; a member of
// DEPTH > 1 takes the same fours in the same order as its DEPTH-1 twin, so gives its bits). FOLD takes each
// four as dequant4.glsl's parts (w = a q - c) and adds a dot(q, x) - c sum(x) for it: a multiply a four for
// the scale instead of one a weight, sum(x) once a row for all NO outputs. Each thread adds its fours in input
// order; then each output's WG partials are added in a fixed order: in runs of eight threads and then the
// runs in order, or (SUBGROUP, a second build) by an xor butterfly inside each subgroup and then the
// subgroups in order. A row's sum is a function of K, the family's parameters and the device's subgroup
// size, never of M or of which tile holds the row (batch invariance).
// A folded norm's sums of squares (norm_fold.glsl) are added from the same loads and reduced beside the outputs.
#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#include "common.glsl"
#ifdef SUBGROUP
#include "subgroup_sum.glsl"
#endif
#undef WG
#define W_BINDING 2
#include "dequant.glsl"
#include "dequant4.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;     // threads a workgroup (64, 128 or 256)
layout(constant_id = 1) const uint NO = 4;      // outputs a workgroup
layout(constant_id = 2) const uint R = 8;       // rows a workgroup
layout(constant_id = 3) const uint PAIR = 0;    // 1: two fours a thread and step, their bytes read once
layout(constant_id = 4) const uint FOLD = 0;    // 1: the scale and offset applied a four, not a weight
layout(constant_id = 5) const uint DEPTH = 1;   // steps whose loads are issued before the first is used

#include "matmul_io.glsl"

const uint FOURS = PAIR != 0 ? 2 : 1, STEP = 4 * FOURS * WG;
#define NORM_IN_LOOP
#include "norm_fold.glsl"
// Slots: output o of row r at o R + r, row r's sum of squares (a folded norm) at NO R + r.
const uint SLOTS = (NO + 1) * R;
#ifdef SUBGROUP
shared float sums[SLOTS][WG / 8];  // a subgroup's sum of each slot (subgroups of 8 or more)
#else
const uint RUNS = WG / 8;
shared float partial[SLOTS][WG + 1];  // +1: threads reading a column hit different banks
shared float sums[SLOTS][RUNS];
#endif

// Thread t's first four of the step starting at `base`; the second (PAIR) is PAIR_SPAN on.
uint first_input(uint base, uint t) {
  if (PAIR == 0) return base + 4 * t;
  const uint per_group = PAIR_SPAN / 4;  // threads that share a group of 2 PAIR_SPAN inputs
  return base + 2 * PAIR_SPAN * (t / per_group) + 4 * (t % per_group);
}

void main() {
  const uint n0 = (gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z) * NO;
  const uint m0 = gl_WorkGroupID.y * R, t = gl_LocalInvocationID.x;
  if (n0 >= p.N) return;  // uniform for the whole workgroup
  const uint rows = min(R, p.M - m0), outs = min(NO, p.N - n0);
  const bool aligned = p.x_off % 4 == 0 && p.x_stride % 4 == 0;
  float acc[NO + 1][R];  // acc[NO]: the rows' sums of squares
  UNROLL for (uint o = 0; o <= NO; o++)
    UNROLL for (uint r = 0; r < R; r++) acc[o][r] = 0.0;
  for (uint base = 0; base < p.K; base += STEP * DEPTH) {
    // The loads of DEPTH steps first (step s's first four at first_input(base + s STEP, t)), then each step's
    // sums in order. (Guards, never break or continue, in loops over register arrays: a loop with an early exit
    // may stay rolled, its arrays indexed at run time, so in memory: tests/test_vulkan_registers.cpp checks.)
    vec4 w[DEPTH][NO][FOURS];     // the weights, or (FOLD) their q
    float wa[DEPTH][NO][FOURS], wc[DEPTH][NO][FOURS];  // (FOLD) each four's a and c
    UNROLL for (uint s = 0; s < DEPTH; s++) {
      const uint k = first_input(base + s * STEP, t);
      UNROLL for (uint o = 0; o < NO; o++) {
        UNROLL for (uint f = 0; f < FOURS; f++) w[s][o][f] = vec4(0.0), wa[s][o][f] = 0.0, wc[s][o][f] = 0.0;
        if (k >= p.K || o >= outs) {  // (zeros: past the row, or an output past the matrix)
        } else if (FOLD != 0 && PAIR != 0) {
          load_pair_parts(weight_row(n0, o), k, p.K, w[s][o][0], wa[s][o][0], wc[s][o][0], w[s][o][FOURS - 1], wa[s][o][FOURS - 1], wc[s][o][FOURS - 1]);
        } else if (FOLD != 0) {
          load4_parts(weight_row(n0, o), k, p.K, w[s][o][0], wa[s][o][0], wc[s][o][0]);
        } else if (PAIR != 0) {
          load_pair(weight_row(n0, o), k, p.K, w[s][o][0], w[s][o][FOURS - 1]);
        } else {
          w[s][o][0] = load4(weight_row(n0, o), k, p.K);
        }
      }
    }
    UNROLL for (uint s = 0; s < DEPTH; s++)
      UNROLL for (uint f = 0; f < FOURS; f++) {
        const uint kf = first_input(base + s * STEP, t) + f * PAIR_SPAN;
        const vec4 g = gain4(kf);
        UNROLL for (uint r = 0; r < R; r++) {
          if (kf < p.K && r < rows) {
            const vec4 raw = inputs4_at(p.x_off + (m0 + r) * p.x_stride, kf, aligned), v = raw * g;
            if (p.norm != 0) acc[NO][r] = add_squares(acc[NO][r], raw);
            if (FOLD != 0) {
              // In this order and no other (precise: no reassociation or contraction a build could choose):
              // d = q.x x.x, then fma q.y x.y, q.z x.z, q.w x.w; acc = fma(a, d, acc); acc = fma(-c, xs, acc)
              // with xs = ((x.x + x.y) + x.z) + x.w, the c term only for types with an offset.
              precise float xs = 0.0;
              if (PARTS_OFFSET) xs = ((v.x + v.y) + v.z) + v.w;
              UNROLL for (uint o = 0; o < NO; o++) {
                precise float d = w[s][o][f].x * v.x;
                d = fma(w[s][o][f].y, v.y, d);
                d = fma(w[s][o][f].z, v.z, d);
                d = fma(w[s][o][f].w, v.w, d);
                precise float a = fma(wa[s][o][f], d, acc[o][r]);
                if (PARTS_OFFSET) a = fma(-wc[s][o][f], xs, a);
                acc[o][r] = a;
              }
            } else {
              UNROLL for (uint o = 0; o < NO; o++) {
                float a = acc[o][r];
                a = fma(v.x, w[s][o][f].x, a);
                a = fma(v.y, w[s][o][f].y, a);
                a = fma(v.z, w[s][o][f].z, a);
                a = fma(v.w, w[s][o][f].w, a);
                acc[o][r] = a;
              }
            }
          }
        }
      }
  }
#ifdef SUBGROUP
  UNROLL for (uint o = 0; o <= NO; o++)
    UNROLL for (uint r = 0; r < R; r++) {
      if ((o < outs || o == NO) && (o < NO || p.norm != 0) && r < rows) {  // (uniform: the whole subgroup)
        const float s = subgroup_sum_xor(acc[o][r]);
        if (gl_SubgroupInvocationID == 0) sums[o * R + r][gl_SubgroupID] = s;
      }
    }
  barrier();
  const uint n_sums = gl_NumSubgroups;
#else
  UNROLL for (uint o = 0; o <= NO; o++)
    UNROLL for (uint r = 0; r < R; r++) partial[o * R + r][t] = acc[o][r];
  barrier();
  // Tasks (slot, run): a run is eight consecutive threads' partials, added in thread order.
  for (uint task = t; task < SLOTS * RUNS; task += WG) {
    const uint slot = task / RUNS, run = task % RUNS;
    const uint o = slot / R;
    if (slot % R >= rows || (o >= outs && o < NO) || (o == NO && p.norm == 0)) continue;
    precise float s = partial[slot][run * 8];
    for (uint i = 1; i < 8; i++) s += partial[slot][run * 8 + i];
    sums[slot][run] = s;
  }
  barrier();
  const uint n_sums = RUNS;
#endif
  for (uint slot = t; slot < NO * R; slot += WG) {
    const uint o = slot / R, r = slot % R;
    if (r >= rows || o >= outs) continue;
    if (p.glu_out != 0 && o % 2 == 1) continue;  // (its pair's thread stores both)
    precise float s = sums[slot][0], ss = sums[NO * R + r][0];
    for (uint i = 1; i < n_sums; i++) s += sums[slot][i], ss += sums[NO * R + r][i];
    if (p.glu_out == 0) {
      store_output(m0 + r, n0 + o, s, norm_scale_of(ss));
    } else {
      precise float up = sums[slot + R][0];  // (output o + 1, added as its own thread would)
      for (uint i = 1; i < n_sums; i++) up += sums[slot + R][i];
      store_glu(m0 + r, n0, o, s, up, norm_scale_of(ss));
    }
  }
}
