#version 450
// Y[m][n] (+)= sum_k X[m][k] W[n][k] for Q8_0 weights in exact integers: the "qmm" members of the family
// (vulkan/matmul_family.h). Each row's inputs are quantized a block of 32 at a time as the CPU quantizes them
// (one scale, the block's largest magnitude / 127, rounded to nearest even), a block's 32 products are added
// as integers (exact: the same sum in any order, on any unit), and the blocks are added in fp32 one after the
// other, acc = fma(d_w d_x, isum, acc), block 0 first. So a row's bits depend on K alone: not on the member,
// the workgroup's shape, the row's place, the rows beside it, or whether the integer sums ran on the matrix
// units (INT_UNITS: 16x16x32 int8 products, GL_NV_integer_cooperative_matrix) or in scalar code (the same
// sums, which lavapipe runs). Every qmm member therefore gives every other's bits (tested), and rows cost the
// matrix units' integer products, not FMAs: the design that makes rows free and batch invariance exact.
// A workgroup of 128 threads takes NO outputs and R rows; a step stages KB blocks of their weights and of
// their rows' quantized inputs in shared memory, the integer sums of KBI blocks at a time go to shared
// memory, and each thread folds its (row, output) pairs' blocks in order into its accumulators. A folded
// norm's sum of squares is added a block at a time in order too (norm_fold.glsl's scale at the end).
#include "common.glsl"
#ifdef INT_UNITS
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#endif
#define W_BINDING 2
#include "weight_words.glsl"

layout(constant_id = 0) const uint NO = 16;  // outputs a workgroup: 16, 32 or 64
layout(constant_id = 1) const uint R = 16;   // rows a workgroup: 16, 32 or 64
const uint TW = 128;
const uint KB = R * NO >= 1024 ? 4 : 8;  // blocks of 32 a step (lavapipe's 32 KB of shared memory; 64 x 64: 38 KB)
const uint KBI = R * NO >= 2048 ? 1 : R * NO >= 1024 ? 2 : R * NO >= 512 ? 4 : 8;  // blocks' sums held at once
const uint LB = KB * 32 + 16;                                // bytes a shared row (16-byte aligned rows)
const uint PAIRS = R * NO / TW;                              // (row, output) pairs a thread folds

layout(local_size_x = TW) in;
#include "matmul_io.glsl"
#define NORM_IN_LOOP
#include "norm_fold.glsl"

shared int8_t Wq[NO * LB];    // the step's quants, output o's at o LB
shared int8_t Xq[R * LB];     // the step's quantized inputs, row r's at r LB
shared float Wd[NO * KB];     // block scales of the weights ...
shared float Xd[R * KB];      // ... and of the inputs
shared float Xss[R * KB];     // each (row, block)'s sum of squares (a folded norm)
shared int Is[KBI * R * NO];  // integer sums: block bb, row r, output o at (bb R + r) NO + o
shared float row_ss[R];

// Block b of output o's weights (34 bytes: d, 32 int8s) into the step's slot j, a word per call.
void stage_weight_word(uint n0, uint o, uint b, uint j, uint w, uint outs, uint blocks) {
  uint v = 0;
  if (o < outs && b < blocks) {
    const uint B = (weight_row(n0, o) * blocks + b) * 34;
    v = word_even(B + 2 + 4 * w);
    if (w == 0) Wd[o * KB + j] = half_even(B);
  } else if (w == 0) {
    Wd[o * KB + j] = 0.0;
  }
  UNROLL for (uint i = 0; i < 4; i++) Wq[o * LB + 32 * j + 4 * w + i] = int8_t(int(v << (24 - 8 * i)) >> 24);
}

// Block b of row r's inputs (gain applied; the GLU where folded in) quantized into the step's slot j: its
// scale, its 32 int8s, and the sum of the raw inputs' squares in order.
void stage_input_block(uint m0, uint r, uint b, uint j, uint rows, uint blocks, bool aligned) {
  vec4 x[8];
  float ss = 0.0;
  if (r < rows && b < blocks) {
    const uint row = p.x_off + (m0 + r) * p.x_stride;
    UNROLL for (uint v = 0; v < 8; v++) {
      x[v] = inputs4_at(row, 32 * b + 4 * v, aligned);
      ss = add_squares(ss, x[v]);
      x[v] *= gain4(32 * b + 4 * v);
    }
  } else {
    UNROLL for (uint v = 0; v < 8; v++) x[v] = vec4(0.0);
  }
  float amax = 0.0;
  UNROLL for (uint v = 0; v < 8; v++) amax = max(amax, max(max(abs(x[v].x), abs(x[v].y)), max(abs(x[v].z), abs(x[v].w))));
  const float inv = amax >= 1e-30 ? 127.0 / amax : 0.0;
  UNROLL for (uint v = 0; v < 8; v++) {
    const ivec4 q = ivec4(roundEven(clamp(x[v] * inv, -127.0, 127.0)));
    UNROLL for (uint i = 0; i < 4; i++) Xq[r * LB + 32 * j + 4 * v + i] = int8_t(q[i]);
  }
  Xd[r * KB + j] = amax < 1e-30 ? 0.0 : isinf(amax) ? uintBitsToFloat(0x7fc00000u) : amax / 127.0;
  Xss[r * KB + j] = ss;
}

#ifdef INT_UNITS
#define IMAT_A icoopmatNV<8, gl_ScopeSubgroup, 16, 32>
#define IMAT_B icoopmatNV<8, gl_ScopeSubgroup, 32, 16>
#define IMAT_C icoopmatNV<32, gl_ScopeSubgroup, 16, 16>
// The integer sums of the step's blocks j0 .. j0 + KBI - 1: a 16x16 tile of (rows, outputs) a block a job,
// the jobs spread over the four subgroups; tiles without rows skipped.
void block_sums(uint j0, uint rows) {
  const uint ot = NO / 16, tiles = (rows + 15) / 16 * ot;
  for (uint job = gl_SubgroupID; job < KBI * tiles; job += gl_NumSubgroups) {
    const uint bb = job / tiles, tile = job % tiles, rt = tile / ot, o16 = tile % ot;
    IMAT_A a;
    IMAT_B b;
    coopMatLoadNV(a, Xq, rt * 16 * LB + 32 * (j0 + bb), LB, false);   // 16 rows x 32 inputs
    coopMatLoadNV(b, Wq, o16 * 16 * LB + 32 * (j0 + bb), LB, true);   // 32 inputs x 16 outputs
    IMAT_C c = coopMatMulAddNV(a, b, IMAT_C(0));
    coopMatStoreNV(c, Is, (bb * R + rt * 16) * NO + o16 * 16, NO, false);
  }
}
#else
void block_sums(uint j0, uint rows) {
  for (uint e = gl_LocalInvocationID.x; e < KBI * R * NO; e += TW) {
    const uint bb = e / (R * NO), r = (e / NO) % R, o = e % NO;
    int s = 0;
    if (r < rows)
      for (uint k = 0; k < 32; k++) s += int(Xq[r * LB + 32 * (j0 + bb) + k]) * int(Wq[o * LB + 32 * (j0 + bb) + k]);
    Is[e] = s;
  }
}
#endif

void main() {
  const uint n0 = (gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z) * NO;
  const uint m0 = gl_WorkGroupID.y * R, t = gl_LocalInvocationID.x;
  if (n0 >= p.N) return;  // uniform for the whole workgroup
  const uint rows = min(R, p.M - m0), outs = min(NO, p.N - n0), blocks = p.K / 32;
  const bool aligned = p.x_off % 4 == 0 && p.x_stride % 4 == 0;
  float acc[PAIRS];  // pair i: e = t + TW i, row e / NO, output e % NO
  UNROLL for (uint i = 0; i < PAIRS; i++) acc[i] = 0.0;
  precise float ss = 0.0;  // thread r < R: row r's sum of squares
  for (uint b0 = 0; b0 < blocks; b0 += KB) {
    for (uint e = t; e < NO * KB * 8; e += TW) stage_weight_word(n0, e / (KB * 8), b0 + (e / 8) % KB, (e / 8) % KB, e % 8, outs, blocks);
    for (uint e = t; e < R * KB; e += TW) stage_input_block(m0, e / KB, b0 + e % KB, e % KB, rows, blocks, aligned);
    barrier();
    if (t < R)  // (blocks in order)
      for (uint j = 0; j < KB && b0 + j < blocks; j++) ss += Xss[t * KB + j];
    for (uint j0 = 0; j0 < KB; j0 += KBI) {
      block_sums(j0, rows);
      barrier();
      for (uint bb = 0; bb < KBI; bb++)  // (each pair's blocks in order; the pairs' loop innermost, unrolled)
        UNROLL for (uint i = 0; i < PAIRS; i++) {
          const uint e = t + TW * i, r = e / NO, o = e % NO;
          if (b0 + j0 + bb < blocks && r < rows) {
            precise float a = fma(Wd[o * KB + j0 + bb] * Xd[r * KB + j0 + bb], float(Is[(bb * R + r) * NO + o]), acc[i]);
            acc[i] = a;
          }
        }
      barrier();
    }
  }
  if (t < R) row_ss[t] = ss;
  barrier();
  UNROLL for (uint i = 0; i < PAIRS; i++) {
    const uint e = t + TW * i, r = e / NO, o = e % NO;
    if (r < rows && o < outs) store_output(m0 + r, n0 + o, acc[i], norm_scale_of(row_ss[r]));
  }
}
