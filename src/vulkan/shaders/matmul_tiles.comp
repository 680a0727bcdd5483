#version 450
// Y[m][n] (+)= sum_k X[m][k] W[n][k] in fp16 tiles with fp32 sums, for a GPU's matrix units (tensor cores):
// one workgroup of 128 threads per 16 outputs and SUB row tiles of 16 rows (a family: SUB 1, 2 or 4, set by
// specialization constants, matmul_grid.h). For each step of KS inputs the workgroup dequantizes its 16
// outputs' weights once and rounds its rows' inputs to fp16 in shared memory (consecutive threads read one
// row's consecutive inputs); each of its four subgroups then multiplies each row tile by the 16 outputs over
// its quarter of the step, 16 inputs at a time, into that tile's fp32 accumulator; at the end each tile's four
// accumulators are added in order. More row tiles a workgroup read and dequantize the weights once for up to
// 64 rows (rows free on the matrix units); tiles past the forward's rows are skipped, so one row costs what
// it costs with SUB 1. A row's sums are those of its 16-row tile whichever tile it is in. A small tile and K split four ways keep many workgroups reading weights
// when a forward has one row. Every matrix of a forward takes this kernel when it is on, whatever the row
// count, and rows past M are zeros: a row's Y sees the same products in the same order alone or in any batch
// (batch invariance). A row whose inputs reach 2^15 is scaled by a power of two first (its own largest
// magnitude decides, so the row's bits never depend on its neighbours) and its sums scaled back: inputs
// beyond fp16's range (65504) do not become infinite, and every other row is untouched.
// COOPMAT: the products on the matrix units (GL_NV_cooperative_matrix; the host enables it only with four
// subgroups of 32). Without it each thread adds 8 of the tile's (quarter, row, output) partials with FMAs:
// the same loads, rounding, partials and final sums, for devices without matrix units (lavapipe runs the
// tests on this).
#include "common.glsl"
#ifdef COOPMAT
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#endif
#define W_BINDING 2
#include "dequant.glsl"
#include "dequant4.glsl"

layout(constant_id = 0) const uint SUB = 1;   // row tiles a workgroup: 1, 2 or 4
layout(constant_id = 1) const uint KS = 256;  // inputs a step: 256, or 128 (4 row tiles: shared memory within 48 KB)
const uint TW = 128, MT = 16, NT = 16, KQ = KS / 4;  // threads, rows and outputs a tile, a quarter step's inputs
const uint ROWS = MT * SUB;
const uint LD = KS + 8, LY = NT + 4;  // padded shared rows (fp16, fp32): 16-byte aligned, spread over banks
const uint PER = 4 * MT * NT / TW;    // partials a thread keeps a row tile (FMA variant)

layout(local_size_x = TW) in;
#include "matmul_io.glsl"

shared float16_t Ws[NT * LD];     // Ws[o][k]: output o's weights of this step
shared float16_t Xs[ROWS * LD];   // Xs[r][k]: row r's inputs of this step
shared float Ys[4 * MT * LY];     // Ys[q][r][o]: quarter q's sums of one row tile
#define NORM_THREADS TW
#define NORM_ROWS ROWS
#include "norm_fold.glsl"
shared float row_max[TW];
shared int row_exp[ROWS];  // row r's inputs are scaled by 2^-row_exp[r] before rounding to fp16

// row_exp for each row: 0, or what brings the row's largest (normalised) input under 2^15. A max is exact in
// any order.
void row_exponents(uint m0, uint rows) {
  const uint t = gl_LocalInvocationID.x;
  UNROLL for (uint r = 0; r < ROWS; r++) {
    if (r >= rows) {
      if (t == 0) row_exp[r] = 0;
      continue;
    }
    float mx = 0.0;
    const uint x = p.x_off + (m0 + r) * p.x_stride;
    for (uint k = t; k < p.K; k += TW) mx = max(mx, abs(input_at(x + k) * gain(k)));
    row_max[t] = mx * norm_scale[r];
    barrier();
    for (uint s = TW / 2; s > 0; s >>= 1) {
      if (t < s) row_max[t] = max(row_max[t], row_max[t + s]);
      barrier();
    }
    if (t == 0) {
      int e;
      frexp(row_max[0], e);  // row_max < 2^e
      row_exp[r] = row_max[0] >= 32768.0 && !isinf(row_max[0]) ? e - 15 : 0;
    }
    barrier();
  }
  barrier();
}

vec4 inputs4(uint r, uint k, uint rows, bool aligned) {
  if (r >= rows || k >= p.K) return vec4(0.0);
  return inputs4_at(p.x_off + r * p.x_stride, k, aligned);
}

// A step's loads go to registers first (fetch), and from there to shared memory (stage) after the previous
// step's products: the next step's reads are in flight while the matrix units work.
const uint WL = NT * KS / 4 / TW, XL = ROWS * KS / 4 / TW;  // vec4 loads a thread makes per step
vec4 wreg[WL], xreg[XL];

void fetch(uint n0, uint m0, uint outs, uint rows, uint k0, uint t, bool aligned) {
  UNROLL for (uint i = 0; i < WL; i++) {
    const uint g = t + TW * i, o = g / (KS / 4), kk = (g % (KS / 4)) * 4;
    wreg[i] = o < outs && k0 + kk < p.K ? load4(n0 + o, k0 + kk, p.K) : vec4(0.0);
  }
  UNROLL for (uint i = 0; i < XL; i++) {
    const uint g = t + TW * i, r = g / (KS / 4), kk = (g % (KS / 4)) * 4;
    // (a folded norm scales the inputs before they are rounded to fp16: normalised rows stay in its range)
    xreg[i] = inputs4(m0 + r, k0 + kk, m0 + rows, aligned) * (gain4(k0 + kk) * (norm_scale[r] * exp2(float(-row_exp[r]))));
  }
}

void stage(uint t) {
  UNROLL for (uint i = 0; i < WL; i++) {
    const uint g = t + TW * i, o = g / (KS / 4), kk = (g % (KS / 4)) * 4;
    UNROLL for (uint j = 0; j < 4; j++) Ws[o * LD + kk + j] = float16_t(wreg[i][j]);
  }
  UNROLL for (uint i = 0; i < XL; i++) {
    const uint g = t + TW * i, r = g / (KS / 4), kk = (g % (KS / 4)) * 4;
    UNROLL for (uint j = 0; j < 4; j++) Xs[r * LD + kk + j] = float16_t(xreg[i][j]);
  }
}

#ifdef COOPMAT
#define TILE_ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
// This step's quarter q, 16 inputs at a time: the weights loaded once, then each row tile's products into its
// accumulator (one accumulator a tile, named: arrays of cooperative matrices are not portable).
void step_products(uint q, uint tiles, inout TILE_ACC acc0, inout TILE_ACC acc1, inout TILE_ACC acc2, inout TILE_ACC acc3) {
  for (uint kk = q * KQ; kk < q * KQ + KQ; kk += 16) {
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a, b;
    coopMatLoadNV(b, Ws, kk, LD, true);  // 16 inputs x 16 outputs (Ws read by columns)
    coopMatLoadNV(a, Xs, kk, LD, false);  // 16 rows x 16 inputs
    acc0 = coopMatMulAddNV(a, b, acc0);
    if (SUB > 1 && tiles > 1) {
      coopMatLoadNV(a, Xs, MT * LD + kk, LD, false);
      acc1 = coopMatMulAddNV(a, b, acc1);
    }
    if (SUB > 2 && tiles > 2) {
      coopMatLoadNV(a, Xs, 2 * MT * LD + kk, LD, false);
      acc2 = coopMatMulAddNV(a, b, acc2);
    }
    if (SUB > 3 && tiles > 3) {
      coopMatLoadNV(a, Xs, 3 * MT * LD + kk, LD, false);
      acc3 = coopMatMulAddNV(a, b, acc3);
    }
  }
}
#else
// Row tile j's partials (a thread's PER of them: partial e = t + TW i is quarter e / 256, row (e / 16) % 16,
// output e % 16) of this step, with FMAs.
void tile_products(uint j, uint t, inout float acc[PER]) {
  UNROLL for (uint i = 0; i < PER; i++) {
    const uint e = t + TW * i, qe = e / (MT * NT), r = j * MT + (e / NT) % MT, o = e % NT;
    float a = acc[i];
    for (uint kk = qe * KQ; kk < qe * KQ + KQ; kk++) a = fma(float(Xs[r * LD + kk]), float(Ws[o * LD + kk]), a);
    acc[i] = a;
  }
}
#endif

// Row tile j's four quarter sums, added in order, out (Ys holds them; the caller has stored them there).
void tile_outputs(uint j, uint m0, uint n0, uint rows, uint outs, uint t) {
  barrier();
  for (uint e = t; e < MT * NT; e += TW) {
    const uint r = e / NT, o = e % NT, row = j * MT + r;
    if (row >= rows || o >= outs) continue;
    precise float s = Ys[r * LY + o];
    for (uint qq = 1; qq < 4; qq++) s += Ys[qq * MT * LY + r * LY + o];
    store_output(m0 + row, n0 + o, s, exp2(float(row_exp[row])));
  }
  barrier();
}

void main() {
  const uint n0 = (gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z) * NT;
  const uint m0 = gl_WorkGroupID.y * ROWS, t = gl_LocalInvocationID.x;
  if (n0 >= p.N) return;  // uniform for the whole workgroup
  const uint rows = min(ROWS, p.M - m0), outs = min(NT, p.N - n0);
  const uint tiles = (rows + MT - 1) / MT;  // row tiles with rows (uniform: the rest are skipped)
  const bool aligned = p.x_off % 4 == 0 && p.x_stride % 4 == 0;
  norm_scales(m0, rows);
  row_exponents(m0, rows);
#ifdef COOPMAT
  const uint q = gl_SubgroupID;  // its quarter of every step
  TILE_ACC acc0 = TILE_ACC(0.0), acc1 = TILE_ACC(0.0), acc2 = TILE_ACC(0.0), acc3 = TILE_ACC(0.0);
#else
  float acc0[PER], acc1[PER], acc2[PER], acc3[PER];
  UNROLL for (uint i = 0; i < PER; i++) acc0[i] = acc1[i] = acc2[i] = acc3[i] = 0.0;
#endif
  fetch(n0, m0, outs, rows, 0, t, aligned);
  for (uint k0 = 0; k0 < p.K; k0 += KS) {
    stage(t);
    barrier();
    if (k0 + KS < p.K) fetch(n0, m0, outs, rows, k0 + KS, t, aligned);
#ifdef COOPMAT
    step_products(q, tiles, acc0, acc1, acc2, acc3);
#else
    tile_products(0, t, acc0);
    if (SUB > 1 && tiles > 1) tile_products(1, t, acc1);
    if (SUB > 2 && tiles > 2) tile_products(2, t, acc2);
    if (SUB > 3 && tiles > 3) tile_products(3, t, acc3);
#endif
    barrier();
  }
  for (uint j = 0; j < tiles; j++) {
#ifdef COOPMAT
    if (j == 0) coopMatStoreNV(acc0, Ys, q * MT * LY, LY, false);
    else if (j == 1) coopMatStoreNV(acc1, Ys, q * MT * LY, LY, false);
    else if (j == 2) coopMatStoreNV(acc2, Ys, q * MT * LY, LY, false);
    else coopMatStoreNV(acc3, Ys, q * MT * LY, LY, false);
#else
    UNROLL for (uint i = 0; i < PER; i++) {
      const uint e = t + TW * i;
      Ys[(e / (MT * NT)) * MT * LY + ((e / NT) % MT) * LY + e % NT] = j == 0 ? acc0[i] : j == 1 ? acc1[i] : j == 2 ? acc2[i] : acc3[i];
    }
#endif
    tile_outputs(j, m0, n0, rows, outs, t);
  }
}
