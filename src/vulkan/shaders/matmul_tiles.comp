#version 450
// Y[m][n] (+)= sum_k X[m][k] W[n][k] in fp16 tiles with fp32 sums, for a GPU's matrix units (tensor cores):
// one workgroup of 128 threads per tile of 16 outputs x 16 rows. For each step of 256 inputs the workgroup
// dequantizes the tile's weights and rounds its inputs to fp16 in shared memory (64 consecutive threads read
// one row's 256 consecutive inputs); each of its four subgroups then multiplies the 16 rows by the 16 outputs
// over its quarter of the step, 16 inputs at a time, into its own fp32 accumulator; at the end the four
// accumulators are added in order. A small tile and K split four ways keep many workgroups reading weights
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

const uint TW = 128, MT = 16, NT = 16, KS = 256, KQ = KS / 4;  // threads, rows, outputs, inputs a step, a quarter's
const uint LD = KS + 8, LY = NT + 4;  // padded shared rows (fp16, fp32): 16-byte aligned, spread over banks
const uint PER = 4 * MT * NT / TW;    // partials a thread keeps (FMA variant)

layout(local_size_x = TW) in;
#include "matmul_io.glsl"

shared float16_t Ws[NT * LD];   // Ws[o][k]: output o's weights of this step
shared float16_t Xs[MT * LD];   // Xs[r][k]: row r's inputs of this step
shared float Ys[4 * MT * LY];   // Ys[q][r][o]: quarter q's sums
#define NORM_THREADS TW
#define NORM_ROWS MT
#include "norm_fold.glsl"
shared float row_max[TW];
shared int row_exp[MT];  // row r's inputs are scaled by 2^-row_exp[r] before rounding to fp16

// row_exp for each row: 0, or what brings the row's largest (normalised) input under 2^15. A max is exact in
// any order.
void row_exponents(uint m0, uint rows) {
  const uint t = gl_LocalInvocationID.x;
  for (uint r = 0; r < MT; r++) {
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
const uint WL = NT * KS / 4 / TW, XL = MT * KS / 4 / TW;  // vec4 loads a thread makes per step
vec4 wreg[WL], xreg[XL];

void fetch(uint n0, uint m0, uint outs, uint rows, uint k0, uint t, bool aligned) {
  for (uint i = 0; i < WL; i++) {
    const uint g = t + TW * i, o = g / (KS / 4), kk = (g % (KS / 4)) * 4;
    wreg[i] = o < outs && k0 + kk < p.K ? load4(n0 + o, k0 + kk, p.K) : vec4(0.0);
  }
  for (uint i = 0; i < XL; i++) {
    const uint g = t + TW * i, r = g / (KS / 4), kk = (g % (KS / 4)) * 4;
    // (a folded norm scales the inputs before they are rounded to fp16: normalised rows stay in its range)
    xreg[i] = inputs4(m0 + r, k0 + kk, m0 + rows, aligned) * (gain4(k0 + kk) * (norm_scale[r] * exp2(float(-row_exp[r]))));
  }
}

void stage(uint t) {
  for (uint i = 0; i < WL; i++) {
    const uint g = t + TW * i, o = g / (KS / 4), kk = (g % (KS / 4)) * 4;
    for (uint j = 0; j < 4; j++) Ws[o * LD + kk + j] = float16_t(wreg[i][j]);
  }
  for (uint i = 0; i < XL; i++) {
    const uint g = t + TW * i, r = g / (KS / 4), kk = (g % (KS / 4)) * 4;
    for (uint j = 0; j < 4; j++) Xs[r * LD + kk + j] = float16_t(xreg[i][j]);
  }
}

void main() {
  const uint n0 = (gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z) * NT;
  const uint m0 = gl_WorkGroupID.y * MT, t = gl_LocalInvocationID.x;
  if (n0 >= p.N) return;  // uniform for the whole workgroup
  const uint rows = min(MT, p.M - m0), outs = min(NT, p.N - n0);
  const bool aligned = p.x_off % 4 == 0 && p.x_stride % 4 == 0;
  norm_scales(m0, rows);
  row_exponents(m0, rows);
#ifdef COOPMAT
  const uint q = gl_SubgroupID;  // its quarter of every step
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
#else
  float acc[PER];  // partial e = t + TW i: quarter e / 256, row (e / 16) % 16, output e % 16
  for (uint i = 0; i < PER; i++) acc[i] = 0.0;
#endif
  fetch(n0, m0, outs, rows, 0, t, aligned);
  for (uint k0 = 0; k0 < p.K; k0 += KS) {
    stage(t);
    barrier();
    if (k0 + KS < p.K) fetch(n0, m0, outs, rows, k0 + KS, t, aligned);
#ifdef COOPMAT
    for (uint kk = q * KQ; kk < q * KQ + KQ; kk += 16) {
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a, b;
      coopMatLoadNV(a, Xs, kk, LD, false);  // 16 rows x 16 inputs
      coopMatLoadNV(b, Ws, kk, LD, true);   // 16 inputs x 16 outputs (Ws read by columns)
      acc = coopMatMulAddNV(a, b, acc);
    }
#else
    for (uint i = 0; i < PER; i++) {
      const uint e = t + TW * i, qe = e / (MT * NT), r = (e / NT) % MT, o = e % NT;
      float a = acc[i];
      for (uint kk = qe * KQ; kk < qe * KQ + KQ; kk++) a = fma(float(Xs[r * LD + kk]), float(Ws[o * LD + kk]), a);
      acc[i] = a;
    }
#endif
    barrier();
  }
#ifdef COOPMAT
  coopMatStoreNV(acc, Ys, q * MT * LY, LY, false);
#else
  for (uint i = 0; i < PER; i++) {
    const uint e = t + TW * i;
    Ys[(e / (MT * NT)) * MT * LY + ((e / NT) % MT) * LY + e % NT] = acc[i];
  }
#endif
  barrier();
  for (uint e = t; e < MT * NT; e += TW) {
    const uint r = e / NT, o = e % NT;
    if (r >= rows || o >= outs) continue;
    precise float s = Ys[r * LY + o];
    for (uint qq = 1; qq < 4; qq++) s += Ys[qq * MT * LY + r * LY + o];
    store_output(m0 + r, n0 + o, s, exp2(float(row_exp[r])));
  }
}
