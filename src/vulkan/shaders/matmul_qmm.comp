#version 450
// Y[m][n] (+)= sum_k X[m][k] W[n][k] in exact integers, for Q8_0, IQ4_XS, Q3_K, Q4_K, Q5_K and Q6_K weights: the
// "qmm" members of the family (vulkan/matmul_family.h). Each row's inputs are quantized to int8s as the CPU
// quantizes them (one scale, the largest magnitude / 127, over a block of 32 for Q8_0 and IQ4_XS and over a
// super-block of 256 for the K-quants; rounded to nearest even), a sub-block's products are added as integers,
// and so are the K-quants' sub-block scales (and mins) times those sums (exact: the same sums in any order, on
// any unit). Only each block (Q8_0, IQ4_XS) or super-block is added in fp32, one after the other, block 0 first:
//   Q8_0: acc = fma(d_w d_x, isum, acc); IQ4_XS: acc = fma((d_w (ls - 32)) d_x, isum, acc), values by its table.
//   Q4_K, Q5_K: acc = fma(d_w d_x, sum_s sc_s isum_s, acc), then acc = fma(-(dmin_w d_x), sum_s m_s xsum_s, acc).
//   Q3_K, Q6_K: acc = fma(d_w d_x, sum_s sc_s isum_s, acc), s its sub-blocks of 16.
// So a row's bits depend on K alone: not on the member, the workgroup's shape, the row's place, the rows beside
// it, or whether the integer sums ran on the matrix units (INT_UNITS: 16x16x32 int8 products,
// GL_NV_integer_cooperative_matrix) or in scalar code (the same sums, which lavapipe runs). Every qmm member
// gives every other's bits (tested), and rows cost the matrix units' integer products, not FMAs.
// A workgroup of 128 threads takes NO outputs and R rows; a step stages KBW sub-blocks of 32 of their weights
// and of their rows' quantized inputs in shared memory, the integer sums of KBI input slots at a time go to
// shared memory, and each thread folds its (row, output) pairs' slots in order (the fp32 arithmetic of
// matmul_vec.comp's -qmm members, which give these bits at one row). A slot is a sub-block of 32 of
// a row's inputs; Q3_K's and Q6_K's scales cover 16 weights, so their inputs take two slots a sub-block, the
// first half and the second (the other half zero): each slot's products with the sub-block's 32 weights are then the
// sum of one scale's 16, on the matrix units' 32-deep products as in scalar code. A folded norm's sum of
// squares is added a sub-block at a time in order too (norm_fold.glsl's scale at the end).
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
#if defined(TYPE_Q3_K) || defined(TYPE_Q6_K)
#define HALF_SLOTS     // (scales a 16 weights)
const uint SPLIT = 2;  // input slots a sub-block of 32
#else
const uint SPLIT = 1;
#endif
#if defined(TYPE_Q3_K) || defined(TYPE_Q4_K) || defined(TYPE_Q5_K) || defined(TYPE_Q6_K)
#define SUPER_BLOCKS   // (an fp32 term a super-block of 256, the inputs' scale over it)
#endif
#if defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
#define WEIGHT_MINS    // (a min a sub-block, times the inputs' sum)
#endif
const uint KB = R * NO >= 1024 ? 4 : 8;  // input slots a step (lavapipe's 32 KB of shared memory; 64 x 64: 41 KB)
const uint KBW = KB / SPLIT;             // sub-blocks of 32 a step
const uint KBI = R * NO >= 2048 ? 1 : R * NO >= 1024 ? 2 : R * NO >= 512 ? 4 : 8;  // slots' sums held at once
const uint LB = KB * 32 + 16;                                // bytes a shared row of inputs (16-byte aligned rows)
const uint LBW = KBW * 32 + 16;                              // ... and of weights
const uint PAIRS = R * NO / TW;                              // (row, output) pairs a thread folds

layout(local_size_x = TW) in;
#include "matmul_io.glsl"
#define NORM_IN_LOOP
#include "norm_fold.glsl"

shared int8_t Wq[NO * LBW];   // the step's quants, output o's at o LBW
shared int8_t Xq[R * LB];     // the step's quantized inputs, row r's at r LB
#ifdef SUPER_BLOCKS
shared float Xss[R * 8];      // each (row, sub-block)'s sum of squares (a folded norm), the current super-block's
#else
shared float Xss[R * KBW];    // each (row, sub-block)'s sum of squares (a folded norm)
#endif
shared int Is[KBI * R * NO];  // integer sums: slot bb, row r, output o at (bb R + r) NO + o
shared float row_ss[R];
#ifdef SUPER_BLOCKS
const uint UNIT = 8;         // sub-blocks a scale of the inputs covers (a super-block)
shared float Wd[NO];         // the current super-block's d, by output
shared int Wsc[NO * KB];     // each slot's scale, by output
shared float Xd[R];          // the current super-block's input scale, by row
shared float Xam[R * 8];     // its sub-blocks' largest magnitudes, by row
#ifdef WEIGHT_MINS
shared float Wdm[NO];        // the current super-block's dmin, by output
shared int Wm[NO * KB];      // each sub-block's min, by output
shared int Xbs[R * KB];      // each (row, sub-block)'s quantized inputs' sum
#endif
#else
const uint UNIT = 1;
shared float Wd[NO * KB];    // block scales of the weights ...
shared float Xd[R * KB];     // ... and of the inputs
#endif

uint weight_byte(uint i) { return (W32[i / 4] >> (8 * (i % 4))) & 255u; }

#ifdef WEIGHT_MINS
// Sub-block g's 32 quants of output o (Q4_K's 144-byte super-blocks: d, dmin, 12 bytes of 6-bit scales and mins,
// 128 bytes of nibbles, sub-blocks 2c and 2c + 1 the low and high nibbles of bytes 32c .. 32c + 31; Q5_K's 176,
// 32 bytes of fifth bits before the nibbles, sub-block s's bit s of byte l over its weight l) into the step's
// slot j, a word per call; with the word 0 call its scale and min, and at a super-block's start its d, dmin.
#ifdef TYPE_Q5_K
const uint BLOCK_BYTES = 176, NIBBLES_AT = 48;
#else
const uint BLOCK_BYTES = 144, NIBBLES_AT = 16;
#endif
void stage_weight_word(uint n0, uint o, uint g, uint j, uint w, uint outs, uint blocks) {
  const uint s = g % 8;
  uint v = 0;
  if (o < outs && g < blocks) {
    const uint B = (weight_row(n0, o) * (blocks / 8) + g / 8) * BLOCK_BYTES;
    const uint q = W32[(B + NIBBLES_AT + 32 * (s / 2) + 4 * w) / 4];
    v = (q >> (4 * (s % 2))) & 0x0f0f0f0fu;
#ifdef TYPE_Q5_K
    v |= ((W32[(B + 16 + 4 * w) / 4] >> s) & 0x01010101u) << 4;
#endif
    if (w == 0) {
      const uint a = weight_byte(B + 4 + s % 4), b = weight_byte(B + 8 + s % 4), c = weight_byte(B + 12 + s % 4);
      Wsc[o * KB + j] = int(s < 4 ? a & 63u : (c & 15u) | ((a >> 6) << 4));
      Wm[o * KB + j] = int(s < 4 ? b & 63u : (c >> 4) | ((b >> 6) << 4));
      if (s == 0) Wd[o] = half_even(B), Wdm[o] = half_even(B + 2);
    }
  } else if (w == 0) {
    Wsc[o * KB + j] = 0, Wm[o * KB + j] = 0;
    if (s == 0) Wd[o] = 0.0, Wdm[o] = 0.0;
  }
  UNROLL for (uint i = 0; i < 4; i++) Wq[o * LBW + 32 * j + 4 * w + i] = int8_t((v >> (8 * i)) & 255u);
}
#elif defined(TYPE_Q6_K)
// Sub-block g's 32 quants of output o (210-byte super-blocks: 128 bytes of low nibbles, 64 of high bit pairs,
// 16 int8 scales of 16 weights each, d; sub-block s's weight l is nibble s / 4 of byte 64 (s / 4) + 32 (s % 2)
// + l with bits 2 (s % 4) of byte 128 + 32 (s / 4) + l above it, minus 32; its halves' scales bytes
// 192 + 8 (s / 4) + 2 (s % 4) and the next) into the step's slot j, a word per call; with the word 0 call its
// halves' scales, and at a super-block's start its d.
void stage_weight_word(uint n0, uint o, uint g, uint j, uint w, uint outs, uint blocks) {
  const uint s = g % 8, hb = s / 4, part = s % 4;
  uint v = 0x20202020u;  // (32 a byte: zero weights)
  if (o < outs && g < blocks) {
    const uint B = (weight_row(n0, o) * (blocks / 8) + g / 8) * 210;
    const uint lo = (word_even(B + 64 * hb + 32 * (part % 2) + 4 * w) >> (4 * (part / 2))) & 0x0f0f0f0fu;
    const uint hi = (word_even(B + 128 + 32 * hb + 4 * w) >> (2 * part)) & 0x03030303u;
    v = lo | (hi << 4);
    if (w == 0) {
      UNROLL for (uint h = 0; h < 2; h++) Wsc[o * KB + 2 * j + h] = int(weight_byte(B + 192 + 8 * hb + 2 * part + h) << 24) >> 24;
      if (s == 0) Wd[o] = half_even(B + 208);
    }
  } else if (w == 0) {
    Wsc[o * KB + 2 * j] = 0, Wsc[o * KB + 2 * j + 1] = 0;
    if (s == 0) Wd[o] = 0.0;
  }
  UNROLL for (uint i = 0; i < 4; i++) Wq[o * LBW + 32 * j + 4 * w + i] = int8_t(int((v >> (8 * i)) & 255u) - 32);
}
#elif defined(TYPE_Q3_K)
// Sub-block g's 32 quants of output o (110-byte super-blocks: 32 bytes of high bits, 64 of 2-bit quants, 12 of
// 6-bit scales, d; sub-block s = 4n + c's weight l is bits 2c of quant byte 32n + l, plus 4 where bit s of high
// byte l is set, minus 4; its halves' scales 8n + 2c and the next, each less 32, as matmul_vec.comp decodes
// them) into the step's slot j, a word per call; with the word 0 call its halves' scales, and at a
// super-block's start its d.
void stage_weight_word(uint n0, uint o, uint g, uint j, uint w, uint outs, uint blocks) {
  const uint s = g % 8, n = s / 4, c = s % 4;
  uint v = 0x04040404u;  // (4 a byte: zero weights)
  if (o < outs && g < blocks) {
    const uint B = (weight_row(n0, o) * (blocks / 8) + g / 8) * 110;
    const uint low = (word_even(B + 32 + 32 * n + 4 * w) >> (2 * c)) & 0x03030303u, high = (word_even(B + 4 * w) >> s) & 0x01010101u;
    v = low | (high << 2);
    if (w == 0) {
      UNROLL for (uint h = 0; h < 2; h++) {
        const uint x = 8 * n + 2 * c + h;
        const uint lo = (weight_byte(B + 96 + x % 8) >> (4 * (x / 8))) & 15u, hi = (weight_byte(B + 104 + x % 4) >> (2 * (x / 4))) & 3u;
        Wsc[o * KB + 2 * j + h] = int(lo | (hi << 4)) - 32;
      }
      if (s == 0) Wd[o] = half_even(B + 108);
    }
  } else if (w == 0) {
    Wsc[o * KB + 2 * j] = 0, Wsc[o * KB + 2 * j + 1] = 0;
    if (s == 0) Wd[o] = 0.0;
  }
  UNROLL for (uint i = 0; i < 4; i++) Wq[o * LBW + 32 * j + 4 * w + i] = int8_t(int((v >> (8 * i)) & 255u) - 4);
}
#elif defined(TYPE_IQ4_XS)
#include "iq4.glsl"
// Block g's 32 quants of output o (136-byte super-blocks of eight: d, 2 bytes of high scale bits, 4 of low, 128
// of nibbles; block s's weights l and 16 + l the low and high nibbles of byte 16s + l, as IQ4 values, its scale
// d (ls - 32), ls = low bits 4 (s % 2) of byte 4 + s / 2 and high bits 2s of the high pair: matmul_vec.comp's)
// into the step's slot j, a word per call.
void stage_weight_word(uint n0, uint o, uint g, uint j, uint w, uint outs, uint blocks) {
  if (o < outs && g < blocks) {
    const uint s = g % 8, B = (weight_row(n0, o) * (blocks / 8) + g / 8) * 136;
    const uint q = (W32[(B + 8 + 16 * s + 4 * (w % 4)) / 4] >> (4 * (w / 4))) & 0x0f0f0f0fu;
    UNROLL for (uint i = 0; i < 4; i++) Wq[o * LBW + 32 * j + 4 * w + i] = int8_t(iq4_int((q >> (8 * i)) & 15u));
    if (w == 0) {
      const uint head = W32[B / 4], ls = ((weight_byte(B + 4 + s / 2) >> (4 * (s % 2))) & 15u) | (((head >> (16 + 2 * s)) & 3u) << 4);
      Wd[o * KB + j] = unpackHalf2x16(head).x * float(int(ls) - 32);
    }
  } else {
    UNROLL for (uint i = 0; i < 4; i++) Wq[o * LBW + 32 * j + 4 * w + i] = int8_t(0);
    if (w == 0) Wd[o * KB + j] = 0.0;
  }
}
#else
// Block g of output o's weights (34 bytes: d, 32 int8s) into the step's slot j, a word per call.
void stage_weight_word(uint n0, uint o, uint g, uint j, uint w, uint outs, uint blocks) {
  uint v = 0;
  if (o < outs && g < blocks) {
    const uint B = (weight_row(n0, o) * blocks + g) * 34;
    v = word_even(B + 2 + 4 * w);
    if (w == 0) Wd[o * KB + j] = half_even(B);
  } else if (w == 0) {
    Wd[o * KB + j] = 0.0;
  }
  UNROLL for (uint i = 0; i < 4; i++) Wq[o * LBW + 32 * j + 4 * w + i] = int8_t(int(v << (24 - 8 * i)) >> 24);
}
#endif

// Sub-block g of row r's inputs (the GLU where folded in; squares summed raw, in order), then the gain.
void load_inputs(uint m0, uint r, uint g, uint rows, uint blocks, bool aligned, out vec4 x[8], out float ss) {
  ss = 0.0;
  if (r < rows && g < blocks) {
    const uint row = p.x_off + (m0 + r) * p.x_stride;
    UNROLL for (uint v = 0; v < 8; v++) {
      x[v] = inputs4_at(row, 32 * g + 4 * v, aligned);
      ss = add_squares(ss, x[v]);
      x[v] *= gain4(32 * g + 4 * v);
    }
  } else {
    UNROLL for (uint v = 0; v < 8; v++) x[v] = vec4(0.0);
  }
}

float largest_magnitude(vec4 x[8]) {
  float amax = 0.0;  // (a max is exact in any order)
  UNROLL for (uint v = 0; v < 8; v++) amax = max(amax, max(max(abs(x[v].x), abs(x[v].y)), max(abs(x[v].z), abs(x[v].w))));
  return amax;
}

// x as int8s at 127 / amax into the step's sub-block j of row r (zero where amax is below 1e-30, as 127 / amax
// would overflow; Q3_K, Q6_K: its halves into slots 2j and 2j + 1, each the other half zero), and their sum; the
// scale, amax / 127 (NaN where amax is infinite, as the CPU's).
int quantize_inputs(uint r, uint j, vec4 x[8], float amax) {
  const float inv = amax >= 1e-30 ? 127.0 / amax : 0.0;
  int sum = 0;
  UNROLL for (uint v = 0; v < 8; v++) {
    const ivec4 q = ivec4(roundEven(clamp(x[v] * inv, -127.0, 127.0)));
    sum += q.x + q.y + q.z + q.w;
    UNROLL for (uint i = 0; i < 4; i++) {
#ifdef HALF_SLOTS
      const uint h = v / 4, slot = r * LB + 32 * (2 * j + h) + 4 * v + i;
      Xq[slot] = int8_t(q[i]);
      Xq[h == 0 ? slot + 32 : slot - 32] = int8_t(0);
#else
      Xq[r * LB + 32 * j + 4 * v + i] = int8_t(q[i]);
#endif
    }
  }
  return sum;
}
float input_scale(float amax) { return amax < 1e-30 ? 0.0 : isinf(amax) ? uintBitsToFloat(0x7fc00000u) : amax / 127.0; }

// The step's inputs: sub-blocks b0 .. b0 + KB - 1 of the workgroup's rows.
void stage_inputs(uint m0, uint b0, uint rows, uint blocks, bool aligned) {
  vec4 x[8];
  float ss;
#ifdef SUPER_BLOCKS
  if (b0 % 8 == 0) {  // a super-block starts: its largest magnitude by row, for one input scale over it
    for (uint e = gl_LocalInvocationID.x; e < R * 8; e += TW) {
      load_inputs(m0, e / 8, b0 + e % 8, rows, blocks, aligned, x, ss);
      Xam[e] = largest_magnitude(x);
    }
    barrier();
  }
#endif
  for (uint e = gl_LocalInvocationID.x; e < R * KBW; e += TW) {
    const uint r = e / KBW, j = e % KBW;
    load_inputs(m0, r, b0 + j, rows, blocks, aligned, x, ss);
#ifdef SUPER_BLOCKS
    Xss[r * 8 + (b0 + j) % 8] = ss;
    float amax = 0.0;
    UNROLL for (uint s = 0; s < 8; s++) amax = max(amax, Xam[r * 8 + s]);
    const int xsum = quantize_inputs(r, j, x, amax);
#ifdef WEIGHT_MINS
    Xbs[e] = xsum;
#endif
    if ((b0 + j) % 8 == 0) Xd[r] = input_scale(amax);
#else
    Xss[e] = ss;
    const float amax = largest_magnitude(x);
    quantize_inputs(r, j, x, amax);
    Xd[e] = input_scale(amax);
#endif
  }
}

#ifdef SUPER_BLOCKS
// A super-block's sum of squares from its sub-blocks' (each added in order): ((s0 + s1) + (s2 + s3)) + ((s4 + s5)
// + (s6 + s7)), the tree matmul_vec.comp's -qmm members form from their lanes' (the same bits).
float super_block_squares(uint r) {
  const uint b = r * 8;
  precise float s = ((Xss[b] + Xss[b + 1]) + (Xss[b + 2] + Xss[b + 3])) + ((Xss[b + 4] + Xss[b + 5]) + (Xss[b + 6] + Xss[b + 7]));
  return s;
}
#endif

#ifdef INT_UNITS
#define IMAT_A icoopmatNV<8, gl_ScopeSubgroup, 16, 32>
#define IMAT_B icoopmatNV<8, gl_ScopeSubgroup, 32, 16>
#define IMAT_C icoopmatNV<32, gl_ScopeSubgroup, 16, 16>
// The integer sums of the step's slots j0 .. j0 + KBI - 1 (with its sub-block's weights): a 16x16 tile of
// (rows, outputs) a slot a job, the jobs spread over the subgroups; tiles without rows skipped.
void block_sums(uint j0, uint rows) {
  const uint ot = NO / 16, tiles = (rows + 15) / 16 * ot;
  for (uint job = gl_SubgroupID; job < KBI * tiles; job += gl_NumSubgroups) {
    const uint bb = job / tiles, tile = job % tiles, rt = tile / ot, o16 = tile % ot;
    IMAT_A a;
    IMAT_B b;
    coopMatLoadNV(a, Xq, rt * 16 * LB + 32 * (j0 + bb), LB, false);   // 16 rows x 32 inputs
    coopMatLoadNV(b, Wq, o16 * 16 * LBW + 32 * ((j0 + bb) / SPLIT), LBW, true);   // 32 inputs x 16 outputs
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
      for (uint k = 0; k < 32; k++) s += int(Xq[r * LB + 32 * (j0 + bb) + k]) * int(Wq[o * LBW + 32 * ((j0 + bb) / SPLIT) + k]);
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
#ifdef SUPER_BLOCKS
  int sums[PAIRS], mins[PAIRS];  // the current super-block's sum_s sc_s isum_s and (Q4_K) sum_s m_s xsum_s
  UNROLL for (uint i = 0; i < PAIRS; i++) sums[i] = 0, mins[i] = 0;
#endif
  UNROLL for (uint i = 0; i < PAIRS; i++) acc[i] = 0.0;
  precise float ss = 0.0;  // thread r < R: row r's sum of squares
  for (uint b0 = 0; b0 < blocks; b0 += KBW) {
    for (uint e = t; e < NO * KBW * 8; e += TW) stage_weight_word(n0, e / (KBW * 8), b0 + (e / 8) % KBW, (e / 8) % KBW, e % 8, outs, blocks);
    stage_inputs(m0, b0, rows, blocks, aligned);
    barrier();
    if (t < R)  // (sub-blocks in order; a super-block's as a tree at its end)
      for (uint j = 0; j < KBW && b0 + j < blocks; j++) {
#ifdef SUPER_BLOCKS
        if ((b0 + j) % 8 == 7) ss += super_block_squares(t);
#else
        ss += Xss[t * KBW + j];
#endif
      }
    for (uint j0 = 0; j0 < KB; j0 += KBI) {
      block_sums(j0, rows);
      barrier();
      for (uint bb = 0; bb < KBI; bb++) {  // (each pair's slots in order; the pairs' loop innermost, unrolled)
        const uint slot = j0 + bb, j = slot / SPLIT;
        UNROLL for (uint i = 0; i < PAIRS; i++) {
          const uint e = t + TW * i, r = e / NO, o = e % NO;
          if (b0 + j < blocks && r < rows) {
#ifdef HALF_SLOTS
            sums[i] += Wsc[o * KB + slot] * Is[(bb * R + r) * NO + o];
            if ((b0 + j) % UNIT == UNIT - 1 && slot % 2 == 1) {  // a super-block's last slot: its fp32 term
              precise float a = fma(Wd[o] * Xd[r], float(sums[i]), acc[i]);
              acc[i] = a, sums[i] = 0;
            }
#elif defined(WEIGHT_MINS)
            sums[i] += Wsc[o * KB + j] * Is[(bb * R + r) * NO + o];
            mins[i] += Wm[o * KB + j] * Xbs[r * KB + j];
            if ((b0 + j) % UNIT == UNIT - 1) {  // a super-block's last sub-block: its fp32 terms
              precise float a = fma(Wd[o] * Xd[r], float(sums[i]), acc[i]);
              a = fma(-(Wdm[o] * Xd[r]), float(mins[i]), a);
              acc[i] = a, sums[i] = 0, mins[i] = 0;
            }
#else
            precise float a = fma(Wd[o * KB + j] * Xd[r * KB + j], float(Is[(bb * R + r) * NO + o]), acc[i]);
            acc[i] = a;
#endif
          }
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
