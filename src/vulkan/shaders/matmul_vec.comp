#version 450
// Y[m][n] (+)= sum_k X[m][k] W[n][k], laid out for the read bandwidth: the `vec` members of the family
// (vulkan/matmul_family.h) for Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS and Q8_0. Eight threads share a group of 256
// weights (a super-block; for Q8_0 eight blocks): thread i takes a piece of 32 of them whose bytes no other
// thread reads (but a block's few scale bytes), in as few loads as the layout allows (16-byte loads for the
// 16-byte aligned Q4_K and Q5_K blocks; whole words for the others, Q3_K's, Q6_K's and Q8_0's starting every
// other block half-way through a word), and decodes its scales once a group for all rows. A step takes WG / 8
// groups; a thread's loads for all NO outputs of DEPTH steps are issued before any is used (the bytes in
// flight that cover the memory's latency: a member of DEPTH > 1 takes the same pieces in the same order as its
// DEPTH-1 twin, so gives its bits). Each thread adds its pieces in order; a workgroup's partials are added by
// an xor butterfly inside each subgroup, then the subgroups in order: a row's sum is a function of K, the member and
// the device's subgroup size, never of M or of the row's place (batch invariance). A folded norm's sums of
// squares come from the same input loads and go through the same reduction (norm_fold.glsl), and the gain is
// read once a group for all rows.
// With INT_DOT (the "-dot" members) a piece's weights are also packed as int8s once a group, each row's
// inputs quantized to int8 as the CPU quantizes them (kernels/matmul.cpp quantize_row_q8: one scale, the largest
// magnitude / 127, over a K-quant's 256-weight super-block, else over the piece's 32-weight block; values
// x 127 / max, rounded to nearest even: a function of the row alone), and each run dotted four at a time by
// OpSDot, exact in integers, then scaled as the FMA path scales its runs.
// With QMM_ORDER as well (the "-qmm" members, every type here) a super-block's products times its integer
// scales (and Q4_K's, Q5_K's mins times the inputs' sums) are added as integers over the group's eight lanes, and
// each (row, output)'s super-blocks (Q8_0, IQ4_XS: blocks, a lane's each) in fp32 in order by one thread, as matmul_qmm.comp
// adds them: a -qmm member
// gives the qmm members' bits (tested), so a decode step can run the one-row-fastest of them and a 64-row
// verification the matrix units' tile with the same bits (kernel_sweep.h's twins by rows). A folded norm's
// squares likewise: each sub-block's in order (a lane continuing its neighbour's), a super-block's as a tree.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"
#include "subgroup_sum.glsl"
#undef WG

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;  // threads a workgroup (32, 64 or 128; at least the subgroup)
layout(constant_id = 1) const uint NO = 2;   // outputs a workgroup
layout(constant_id = 2) const uint R = 4;    // rows a workgroup
layout(constant_id = 3) const uint DEPTH = 1;  // steps whose loads are issued before the first is used

layout(std430, binding = 2) readonly buffer Weights4 { uvec4 W4[]; };
#define W_BINDING 2
#include "weight_words.glsl"
#include "matmul_io.glsl"
#define NORM_IN_LOOP
#include "norm_fold.glsl"
// Slots: output o of row r at o R + r, row r's sum of squares (a folded norm) at NO R + r.
shared float sums[(NO + 1) * R][WG / 8];  // a subgroup's sum of each slot (subgroups of 8 or more)
#include "k_slices.glsl"  // (the -kS members' K slices: a tile's steps split over workgroups)

#ifdef INT_DOT
#extension GL_EXT_spirv_intrinsics : require
// OpSDot (SPV_KHR_integer_dot_product) of two words of four signed bytes: PackedVectorFormat4x8Bit is 0.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int packed_format);
int sdot(uint a, uint b) { return sdot4x8(a, b, 0); }
// Bytes of v, each less c (bytes of v and results within a signed byte's range: no borrow between bytes).
uint bytes_less(uint v, uint c) { return ((v ^ 0x80808080u) - c) ^ 0x80808080u; }
#define PACKED_WEIGHTS uint qw[8];  // a piece's 32 weights as int8s, in its input slots' order
#else
#define PACKED_WEIGHTS
#endif

const uint STEP_GROUPS = WG / 8;

// Byte j of a piece of bytes.
uint byte_of(uvec4 v, uint j) { return (v[j / 4] >> (8 * (j % 4))) & 255u; }
uint byte_of(uvec3 v, uint j) { return (v[j / 4] >> (8 * (j % 4))) & 255u; }
uint byte_of(uvec2 v, uint j) { return (v[j / 4] >> (8 * (j % 4))) & 255u; }
uint byte_of(uint v, uint j) { return (v >> (8 * j)) & 255u; }

#if defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
// A super-block: d, dmin, 12 bytes of 6-bit scales and mins (the 16-byte head), [Q5_K: 32 bytes of fifth bits,]
// 128 bytes of nibbles. Thread i takes 16 bytes of chunk i / 2: 16 weights of sub-block 2 (i / 2) in the low
// nibbles (run 0) and 16 of sub-block 2 (i / 2) + 1 in the high ones (run 1); Q5_K adds bits 2 (i / 2) and
// 2 (i / 2) + 1 of the 16 fifth-bit bytes 16 (i % 2) ...
const uint RUN = 16;
#if defined(TYPE_Q4_K)
const uint GROUP_LOADS = 9, QS_LOAD = 1;
#else
const uint GROUP_LOADS = 11, QS_LOAD = 3;
#endif
struct Piece { uvec4 head, q, qh; vec4 sc; PACKED_WEIGHTS };  // sc: (scale, min) of run 0, then of run 1
bool piece_exists(uint g, uint i) { return g < p.K / 256; }
Piece load_piece(uint n, uint g, uint i) {
  const uint at = (n * (p.K / 256) + g) * GROUP_LOADS;
  Piece pc;
  pc.head = W4[at], pc.q = W4[at + QS_LOAD + i];
#if defined(TYPE_Q5_K)
  pc.qh = W4[at + 1 + i % 2];
#endif
  return pc;
}
uint run_start(uint i, uint run) { return 64 * (i / 2) + 16 * (i % 2) + 32 * run; }

// Sub-block j's scale times d and min times dmin (the 6-bit pairs, as dequant.glsl's kquant_scale_min).
ivec2 scale_min_int(uvec4 head, uint j) {
  const uvec3 s = head.yzw;  // the 12 scale bytes
  uint sc, m;
  if (j < 4) {
    sc = byte_of(s, j) & 63u, m = byte_of(s, j + 4) & 63u;
  } else {
    sc = (byte_of(s, j + 4) & 15u) | ((byte_of(s, j - 4) >> 6) << 4);
    m = (byte_of(s, j + 4) >> 4) | ((byte_of(s, j) >> 6) << 4);
  }
  return ivec2(sc, m);
}
vec2 scale_min(uvec4 head, uint j) {
  const vec2 dm = unpackHalf2x16(head[0]), sm = small_float(uvec2(scale_min_int(head, j)));
  precise vec2 r = vec2(dm.x * sm.x, dm.y * sm.y);
  return r;
}
void decode_scales(inout Piece pc, uint i) { pc.sc = vec4(scale_min(pc.head, 2 * (i / 2)), scale_min(pc.head, 2 * (i / 2) + 1)); }

// Run `run`'s 16 quants (nibbles, Q5_K's fifth bit added) dotted with x[8 run .. 8 run + 3] in byte order.
float run_dot(Piece pc, uint i, uint run, vec4 x[8]) {
  precise float d = 0.0;
  UNROLL for (uint w = 0; w < 4; w++)
    UNROLL for (uint b = 0; b < 4; b++) {
      uint q = (pc.q[w] >> (8 * b + 4 * run)) & 15u;
#if defined(TYPE_Q5_K)
      q |= ((pc.qh[w] >> (8 * b + 2 * (i / 2) + run)) & 1u) << 4;
#endif
      d = fma(small_float(q), x[4 * run + w][b], d);
    }
  return d;
}
float run_sum(vec4 x[8], uint run) {
  precise float s = 0.0;
  UNROLL for (uint w = 0; w < 4; w++) s = (((s + x[4 * run + w].x) + x[4 * run + w].y) + x[4 * run + w].z) + x[4 * run + w].w;
  return s;
}
// The min term folded: d sc (q.x) - dmin m sum(x), a run at a time.
float piece_dot(Piece pc, uint i, vec4 x[8], float acc) {
  precise float a = fma(pc.sc.x, run_dot(pc, i, 0, x), acc);
  a = fma(-pc.sc.y, run_sum(x, 0), a);
  a = fma(pc.sc.z, run_dot(pc, i, 1, x), a);
  a = fma(-pc.sc.w, run_sum(x, 1), a);
  return a;
}
#ifdef INT_DOT
void pack_weights(inout Piece pc, uint i) {
  UNROLL for (uint run = 0; run < 2; run++)
    UNROLL for (uint w = 0; w < 4; w++) {
      uint q = (pc.q[w] >> (4 * run)) & 0x0F0F0F0Fu;
#if defined(TYPE_Q5_K)
      q |= ((pc.qh[w] >> (2 * (i / 2) + run)) & 0x01010101u) << 4;
#endif
      pc.qw[4 * run + w] = q;
    }
}
// As piece_dot, the runs' quant sums in integers, the min term from the quantized inputs' sums (xsum, as the
// CPU's): xd (d sc (q.xq) - dmin m sum(xq)).
float piece_dot_q8(Piece pc, uint i, uint xq[8], float xd, ivec2 xsum, float acc) {
  int d0 = 0, d1 = 0;
  UNROLL for (uint w = 0; w < 4; w++) d0 += sdot(pc.qw[w], xq[w]), d1 += sdot(pc.qw[4 + w], xq[4 + w]);
  precise float a = fma(pc.sc.x * xd, float(d0), acc);
  a = fma(-pc.sc.y * xd, float(xsum.x), a);
  a = fma(pc.sc.z * xd, float(d1), a);
  a = fma(-pc.sc.w * xd, float(xsum.y), a);
  return a;
}
#ifdef QMM_ORDER
// The piece's part of its super-block's sum_s sc_s isum_s and sum_s m_s xsum_s (exact integers), and the
// super-block's d and dmin.
ivec2 piece_isums(Piece pc, uint i, uint xq[8], ivec2 xsum) {
  int d0 = 0, d1 = 0;
  UNROLL for (uint w = 0; w < 4; w++) d0 += sdot(pc.qw[w], xq[w]), d1 += sdot(pc.qw[4 + w], xq[4 + w]);
  const ivec2 s0 = scale_min_int(pc.head, 2 * (i / 2)), s1 = scale_min_int(pc.head, 2 * (i / 2) + 1);
  return ivec2(s0.x * d0 + s1.x * d1, s0.y * xsum.x + s1.y * xsum.y);
}
vec2 piece_d(Piece pc) { return unpackHalf2x16(pc.head[0]); }
#define HAS_MINS
// The super-block's sum of squares (in lane 7): each sub-block's 32 values' in order (lane 2c's 16 first, lane
// 2c + 1 going on from them), then the tree ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)).
float group_squares(vec4 x[8], uint i) {
  float s[2];
  UNROLL for (uint run = 0; run < 2; run++) {
    precise float c = 0.0;
    UNROLL for (uint v = 0; v < 4; v++) c = add_squares(c, x[4 * run + v]);
    const float before = subgroupShuffleXor(c, 1);
    if (i % 2 == 1) {
      c = before;
      UNROLL for (uint v = 0; v < 4; v++) c = add_squares(c, x[4 * run + v]);
    }
    s[run] = c;
  }
  precise float a = s[0] + s[1];
  a += subgroupShuffleXor(a, 2);
  a += subgroupShuffleXor(a, 4);
  return a;
}
#endif
#endif

#elif defined(TYPE_Q6_K)
// 210-byte super-blocks: 128 bytes of low nibbles, 64 of high bit pairs, 16 int8 scales (one a 16 weights), d.
// Half h = i / 4 of the block, l0 = 8 (i % 4): thread i takes ql bytes 64 h + l0 .. + 7 and + 32 (their low
// nibbles weights 128 h + l0 + 0 .. 7 and + 32, their high ones + 64 and + 96: runs 0..3), the qh bytes
// 128 + 32 h + l0 .. + 7 (the runs' bit pairs 0-1, 2-3, 4-5, 6-7) and the half's scales.
const uint RUN = 8;
struct Piece { uvec2 ql0, ql1, qh, scales; float d; vec4 sc; PACKED_WEIGHTS };  // sc: d times each run's scale
bool piece_exists(uint g, uint i) { return g < p.K / 256; }
// Bytes at .. at + 7, at even (two loads where at is a whole word, else three: the shared word loaded once).
uvec2 bytes8(uint at) { return uvec2(word_even(at), word_even(at + 4)); }
Piece load_piece(uint n, uint g, uint i) {
  const uint B = (n * (p.K / 256) + g) * 210, h = i / 4, l0 = 8 * (i % 4);
  Piece pc;
  pc.ql0 = bytes8(B + 64 * h + l0), pc.ql1 = bytes8(B + 64 * h + 32 + l0), pc.qh = bytes8(B + 128 + 32 * h + l0);
  pc.scales = bytes8(B + 192 + 8 * h), pc.d = half_even(B + 208);
  return pc;
}
uint run_start(uint i, uint run) { return 128 * (i / 4) + 8 * (i % 4) + 32 * run; }
void decode_scales(inout Piece pc, uint i) {
  UNROLL for (uint run = 0; run < 4; run++) pc.sc[run] = pc.d * signed_byte_float(byte_of(pc.scales, (i % 4) / 2 + 2 * run));
}
float piece_dot(Piece pc, uint i, vec4 x[8], float acc) {
  precise float a = acc;
  UNROLL for (uint run = 0; run < 4; run++) {
    const uvec2 ql = run % 2 == 0 ? pc.ql0 : pc.ql1;
    precise float d = 0.0;
    UNROLL for (uint j = 0; j < 8; j++) {
      const uint q = ((byte_of(ql, j) >> (4 * (run / 2))) & 15u) | (((byte_of(pc.qh, j) >> (2 * run)) & 3u) << 4);
      d = fma(small_float_less(q, 32.0), x[2 * run + j / 4][j % 4], d);
    }
    a = fma(pc.sc[run], d, a);
  }
  return a;
}
#ifdef INT_DOT
void pack_weights(inout Piece pc, uint i) {
  UNROLL for (uint run = 0; run < 4; run++)
    UNROLL for (uint w = 0; w < 2; w++) {
      const uint ql = run % 2 == 0 ? pc.ql0[w] : pc.ql1[w];
      const uint q = ((ql >> (4 * (run / 2))) & 0x0F0F0F0Fu) | (((pc.qh[w] >> (2 * run)) & 0x03030303u) << 4);
      pc.qw[2 * run + w] = bytes_less(q, 0x20202020u);
    }
}
float piece_dot_q8(Piece pc, uint i, uint xq[8], float xd, ivec2 xsum, float acc) {
  precise float a = acc;
  UNROLL for (uint run = 0; run < 4; run++) a = fma(pc.sc[run] * xd, float(sdot(pc.qw[2 * run], xq[2 * run]) + sdot(pc.qw[2 * run + 1], xq[2 * run + 1])), a);
  return a;
}
#ifdef QMM_ORDER
ivec2 piece_isums(Piece pc, uint i, uint xq[8], ivec2 xsum) {
  int s = 0;
  UNROLL for (uint run = 0; run < 4; run++)
    s += (int(byte_of(pc.scales, (i % 4) / 2 + 2 * run) << 24) >> 24) * (sdot(pc.qw[2 * run], xq[2 * run]) + sdot(pc.qw[2 * run + 1], xq[2 * run + 1]));
  return ivec2(s, 0);
}
float piece_d(Piece pc) { return pc.d; }
// The super-block's sum of squares (in lane 7): each sub-block's 32 values' in order (lanes 4h .. 4h + 3 eight
// each, one going on from the one before), then the tree ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)).
float group_squares(vec4 x[8], uint i) {
  float s[4];
  UNROLL for (uint run = 0; run < 4; run++) {
    precise float c = add_squares(add_squares(0.0, x[2 * run]), x[2 * run + 1]);
    UNROLL for (uint lane = 1; lane < 4; lane++) {
      const float before = subgroupShuffle(c, gl_SubgroupInvocationID - (i % 4 == 0 ? 0 : 1));
      if (i % 4 == lane) c = add_squares(add_squares(before, x[2 * run]), x[2 * run + 1]);
    }
    s[run] = c;
  }
  precise float a = (s[0] + s[1]) + (s[2] + s[3]);
  a += subgroupShuffleXor(a, 4);
  return a;
}
#endif
#endif

#elif defined(TYPE_Q3_K)
// 110-byte super-blocks: 32 bytes of high bits (hmask), 64 of 2-bit quants, 12 of 6-bit scales, d. Weight
// 128 n + 32 j + l (l < 32) is bits 2j of qs byte 32 n + l, less 4 where bit 4n + j of hmask byte l is clear,
// scaled by d (scale 8n + 2j + l / 16 less 32). Thread i takes l = 4i .. 4i + 3 of both halves: eight runs of
// four (run 4n + j), hmask and qs bytes read once.
const uint RUN = 4;
struct Piece { uint hm, qs0, qs1; uvec3 scales; float d; vec4 sc[2]; PACKED_WEIGHTS };  // sc: d times each run's scale
bool piece_exists(uint g, uint i) { return g < p.K / 256; }
Piece load_piece(uint n, uint g, uint i) {
  const uint B = (n * (p.K / 256) + g) * 110;
  Piece pc;
  pc.hm = word_even(B + 4 * i), pc.qs0 = word_even(B + 32 + 4 * i), pc.qs1 = word_even(B + 64 + 4 * i);
  pc.scales = uvec3(word_even(B + 96), word_even(B + 100), word_even(B + 104)), pc.d = half_even(B + 108);
  return pc;
}
uint run_start(uint i, uint run) { return 128 * (run / 4) + 32 * (run % 4) + 4 * i; }
// Run r's scale is 8 (r / 4) + 2 (r % 4) + i / 4: its low 4 bits in byte s % 8 at 4 (s / 8), the high 2 in
// byte 8 + s % 4 at 2 (s / 4); the run's multiplier is that 6-bit value less 32.
uint run_scale6(Piece pc, uint i, uint run) {
  const uint s = 8 * (run / 4) + 2 * (run % 4) + i / 4;
  const uint low = (byte_of(pc.scales, s % 8) >> (4 * (s / 8))) & 15u, high = (byte_of(pc.scales, 8 + s % 4) >> (2 * (s / 4))) & 3u;
  return low | (high << 4);
}
int run_scale(Piece pc, uint i, uint run) { return int(run_scale6(pc, i, run)) - 32; }
void decode_scales(inout Piece pc, uint i) {
  UNROLL for (uint run = 0; run < 8; run++) pc.sc[run / 4][run % 4] = pc.d * small_float_less(run_scale6(pc, i, run), 32.0);
}
float piece_dot(Piece pc, uint i, vec4 x[8], float acc) {
  precise float a = acc;
  UNROLL for (uint run = 0; run < 8; run++) {
    const uint qs = run < 4 ? pc.qs0 : pc.qs1;
    precise float d = 0.0;
    UNROLL for (uint b = 0; b < 4; b++) {
      const uint q = ((byte_of(qs, b) >> (2 * (run % 4))) & 3u) | (((byte_of(pc.hm, b) >> run) & 1u) << 2);  // (less 4)
      d = fma(small_float_less(q, 4.0), x[run][b], d);
    }
    a = fma(pc.sc[run / 4][run % 4], d, a);
  }
  return a;
}
#ifdef INT_DOT
void pack_weights(inout Piece pc, uint i) {
  UNROLL for (uint run = 0; run < 8; run++) {
    const uint low = ((run < 4 ? pc.qs0 : pc.qs1) >> (2 * (run % 4))) & 0x03030303u, high = (pc.hm >> run) & 0x01010101u;
    pc.qw[run] = bytes_less(low | (high << 2), 0x04040404u);
  }
}
float piece_dot_q8(Piece pc, uint i, uint xq[8], float xd, ivec2 xsum, float acc) {
  precise float a = acc;
  UNROLL for (uint run = 0; run < 8; run++) a = fma(pc.sc[run / 4][run % 4] * xd, float(sdot(pc.qw[run], xq[run])), a);
  return a;
}
#ifdef QMM_ORDER
ivec2 piece_isums(Piece pc, uint i, uint xq[8], ivec2 xsum) {
  int s = 0;
  UNROLL for (uint run = 0; run < 8; run++) s += run_scale(pc, i, run) * sdot(pc.qw[run], xq[run]);
  return ivec2(s, 0);
}
float piece_d(Piece pc) { return pc.d; }
// The super-block's sum of squares (in lane 7): each sub-block's (run's) 32 values in order (each lane's four
// going on from the lane before), then the tree ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)).
float group_squares(vec4 x[8], uint i) {
  float s[8];
  UNROLL for (uint run = 0; run < 8; run++) {
    precise float c = add_squares(0.0, x[run]);
    UNROLL for (uint lane = 1; lane < 8; lane++) {
      const float before = subgroupShuffle(c, gl_SubgroupInvocationID - (i == 0 ? 0 : 1));
      if (i == lane) c = add_squares(before, x[run]);
    }
    s[run] = c;
  }
  precise float a = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  return a;
}
#endif
#endif

#elif defined(TYPE_IQ4_XS)
#include "iq4.glsl"
// 136-byte super-blocks: d, 2 bytes of high scale bits, 4 of low, 128 bytes of nibbles. Thread i takes
// sub-block i: its 16 bytes (weights 32i + l low, 32i + 16 + l high: runs 0 and 1), its 6-bit scale ls
// (low bits 4 (i % 2) of scales_l[i / 2], high bits 2i of scales_h), weights d (ls - 32) iq4_value(nibble).
const uint RUN = 16;
struct Piece { uvec4 q; uvec2 head; float sc; PACKED_WEIGHTS };  // sc: the sub-block's d (ls - 32)
bool piece_exists(uint g, uint i) { return g < p.K / 256; }
Piece load_piece(uint n, uint g, uint i) {
  const uint w = (n * (p.K / 256) + g) * 34;  // (in words: 136-byte blocks are whole words)
  Piece pc;
  pc.head = uvec2(W32[w], W32[w + 1]);
  pc.q = uvec4(W32[w + 2 + 4 * i], W32[w + 3 + 4 * i], W32[w + 4 + 4 * i], W32[w + 5 + 4 * i]);
  return pc;
}
uint run_start(uint i, uint run) { return 32 * i + 16 * run; }
void decode_scales(inout Piece pc, uint i) {
  const uint ls = ((byte_of(pc.head.y, i / 2) >> (4 * (i % 2))) & 15u) | (((pc.head.x >> (16 + 2 * i)) & 3u) << 4);
  pc.sc = unpackHalf2x16(pc.head.x).x * small_float_less(ls, 32.0);
}
float piece_dot(Piece pc, uint i, vec4 x[8], float acc) {
  precise float d = 0.0;
  UNROLL for (uint run = 0; run < 2; run++)
    UNROLL for (uint j = 0; j < 16; j++) d = fma(iq4_value((byte_of(pc.q, j) >> (4 * run)) & 15u), x[4 * run + j / 4][j % 4], d);
  precise float a = fma(pc.sc, d, acc);
  return a;
}
#ifdef INT_DOT
void pack_weights(inout Piece pc, uint i) {
  UNROLL for (uint run = 0; run < 2; run++)
    UNROLL for (uint w = 0; w < 4; w++) {
      uint q = 0;
      UNROLL for (uint b = 0; b < 4; b++) q |= iq4_byte((byte_of(pc.q[w], b) >> (4 * run)) & 15u) << (8 * b);
      pc.qw[4 * run + w] = q;
    }
}
float piece_dot_q8(Piece pc, uint i, uint xq[8], float xd, ivec2 xsum, float acc) {
  int d = 0;
  UNROLL for (uint v = 0; v < 8; v++) d += sdot(pc.qw[v], xq[v]);
  precise float a = fma(pc.sc * xd, float(d), acc);
  return a;
}
#ifdef QMM_ORDER
#define ENTRIES_A_GROUP 8  // (a sub-block a lane, inputs scaled per 32 as the CPU's: its own entry, as Q8_0's blocks)
ivec2 piece_isums(Piece pc, uint i, uint xq[8], ivec2 xsum) {
  int d = 0;
  UNROLL for (uint v = 0; v < 8; v++) d += sdot(pc.qw[v], xq[v]);
  return ivec2(d, 0);
}
float piece_d(Piece pc) { return pc.sc; }
float group_squares(vec4 x[8], uint i) {  // (the sub-block's 32 in order)
  precise float c = 0.0;
  UNROLL for (uint v = 0; v < 8; v++) c = add_squares(c, x[v]);
  return c;
}
#endif
#endif

#elif defined(TYPE_Q8_0)
// 34-byte blocks (d, 32 int8 quants); thread i takes block i of the group's eight, its quants a word at a
// time (nine loads in all, the words two quant words share loaded once).
const uint RUN = 32;
struct Piece { uint q[8]; float d; };
bool piece_exists(uint g, uint i) { return 8 * g + i < p.K / 32; }
Piece load_piece(uint n, uint g, uint i) {
  const uint B = (n * (p.K / 32) + 8 * g + i) * 34;
  Piece pc;
  pc.d = half_even(B);
  UNROLL for (uint j = 0; j < 8; j++) pc.q[j] = word_even(B + 2 + 4 * j);
  return pc;
}
uint run_start(uint i, uint run) { return 32 * i; }
void decode_scales(inout Piece pc, uint i) {}  // (d is the scale)
float piece_dot(Piece pc, uint i, vec4 x[8], float acc) {
  precise float d = 0.0;
  UNROLL for (uint w = 0; w < 8; w++)
    UNROLL for (uint b = 0; b < 4; b++) d = fma(signed_byte_float(byte_of(pc.q[w], b)), x[w][b], d);
  precise float a = fma(pc.d, d, acc);
  return a;
}
#ifdef INT_DOT
void pack_weights(inout Piece pc, uint i) {}  // (the quants are int8s already)
float piece_dot_q8(Piece pc, uint i, uint xq[8], float xd, ivec2 xsum, float acc) {
  int d = 0;
  UNROLL for (uint w = 0; w < 8; w++) d += sdot(pc.q[w], xq[w]);
  precise float a = fma(pc.d * xd, float(d), acc);
  return a;
}
#endif
#ifdef QMM_ORDER
#define ENTRIES_A_GROUP 8  // (a block a lane: its own integer sum, scales and squares)
ivec2 piece_isums(Piece pc, uint i, uint xq[8], ivec2 xsum) {
  int d = 0;
  UNROLL for (uint w = 0; w < 8; w++) d += sdot(pc.q[w], xq[w]);
  return ivec2(d, 0);
}
float piece_d(Piece pc) { return pc.d; }
// The block's sum of squares, its 32 values in order.
float group_squares(vec4 x[8], uint i) {
  precise float c = 0.0;
  UNROLL for (uint v = 0; v < 8; v++) c = add_squares(c, x[v]);
  return c;
}
#endif
#endif

#ifdef INT_DOT
#if defined(TYPE_Q3_K) || defined(TYPE_Q4_K) || defined(TYPE_Q5_K) || defined(TYPE_Q6_K)
#define SCALE_PER_GROUP  // (the group's eight threads are eight neighbouring lanes of one subgroup)
#endif
// A row's piece of 32 inputs as int8s, xq * xd ~ x (zero, and every xq zero, where the largest magnitude is
// below 1e-30, as 127 / amax would overflow; NaN where it is infinite, as the CPU's).
float quantize_piece(vec4 x[8], out uint xq[8]) {
  float amax = 0.0;
  UNROLL for (uint v = 0; v < 8; v++) amax = max(amax, max(max(abs(x[v].x), abs(x[v].y)), max(abs(x[v].z), abs(x[v].w))));
#ifdef SCALE_PER_GROUP
  amax = max(amax, subgroupShuffleXor(amax, 1));  // (a max is exact in any order)
  amax = max(amax, subgroupShuffleXor(amax, 2));
  amax = max(amax, subgroupShuffleXor(amax, 4));
#endif
  const float inv = amax >= 1e-30 ? 127.0 / amax : 0.0;
  UNROLL for (uint v = 0; v < 8; v++) {
    const ivec4 q = ivec4(roundEven(clamp(x[v] * inv, -127.0, 127.0)));
    xq[v] = uint(q.x & 255) | uint(q.y & 255) << 8 | uint(q.z & 255) << 16 | uint(q.w & 255) << 24;
  }
  return amax < 1e-30 ? 0.0 : isinf(amax) ? uintBitsToFloat(0x7fc00000u) : amax / 127.0;
}
#endif

#ifdef QMM_ORDER
#include "vec_qmm_order.glsl"
#endif

const uint LOADS_A_RUN = RUN / 4;
// Input slot v (0..7, four inputs each) of thread i's piece of group g.
uint input_k(uint g, uint i, uint v) { return 256 * g + run_start(i, v / LOADS_A_RUN) + 4 * (v % LOADS_A_RUN); }

void main() {
  const uint n0 = (gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z) * NO;
  const uint m0 = ROW_TILE * R, t = gl_LocalInvocationID.x;
  if (n0 >= p.N) return;  // uniform for the whole workgroup
  const uint rows = min(R, p.M - m0), outs = min(NO, p.N - n0);
  const bool aligned = p.x_off % 4 == 0 && p.x_stride % 4 == 0;
  const uint groups = (p.K + 255) / 256, i = t % 8;
  float acc[NO + 1][R];  // acc[NO]: the rows' sums of squares
  UNROLL for (uint o = 0; o <= NO; o++)
    UNROLL for (uint r = 0; r < R; r++) acc[o][r] = 0.0;
  float qacc = 0.0, qss = 0.0;  // (-qmm: thread o R + r's sum, thread NO R + r's row's squares)
  for (uint g0 = FIRST_GROUP; g0 < END_GROUP; g0 += STEP_GROUPS * DEPTH) {
    // The loads of DEPTH steps first (step s's group g0 + s STEP_GROUPS + t / 8), then each step's sums in
    // order. (Guards, never break or continue, in loops over register arrays: a loop with an early exit may
    // stay rolled and index them in memory; tests/test_vulkan_registers.cpp checks none does.)
    Piece pc[DEPTH][NO];
    UNROLL for (uint s = 0; s < DEPTH; s++)
      UNROLL for (uint o = 0; o < NO; o++)
        if (o < outs && IN_STEP(g0 + s * STEP_GROUPS + t / 8, i)) pc[s][o] = load_piece(weight_row(n0, o), g0 + s * STEP_GROUPS + t / 8, i);
    UNROLL for (uint s = 0; s < DEPTH; s++) {
      const uint g = g0 + s * STEP_GROUPS + t / 8;
      if (IN_STEP(g, i)) {  // (all but in the last steps)
        UNROLL for (uint o = 0; o < NO; o++)  // the pieces' scales (and int8 weights), decoded once a group for all rows
          if (o < outs) {
            decode_scales(pc[s][o], i);
#ifdef INT_DOT
            pack_weights(pc[s][o], i);
#endif
#ifdef QMM_ORDER
            if (ENTRIES_A_GROUP > 1 || i == 0) Qd[entry_of(s, t) * NO + o] = piece_d(pc[s][o]);
#endif
          }
        vec4 gains[8];
        UNROLL for (uint v = 0; v < 8; v++) gains[v] = gain4(input_k(g, i, v));
        UNROLL for (uint r = 0; r < R; r++) {
          if (r < rows) {  // each row's inputs loaded (and quantized) once for all outputs
            const uint x = p.x_off + (m0 + r) * p.x_stride;
            vec4 xs[8];
            UNROLL for (uint v = 0; v < 8; v++) xs[v] = inputs4_at(x, input_k(g, i, v), aligned);
#ifdef QMM_ORDER
            vec4 raw[8];
            UNROLL for (uint v = 0; v < 8; v++) raw[v] = xs[v];
#else
            if (p.norm != 0)
              UNROLL for (uint v = 0; v < 8; v++) acc[NO][r] = add_squares(acc[NO][r], xs[v]);
#endif
            UNROLL for (uint v = 0; v < 8; v++) xs[v] *= gains[v];
#ifdef INT_DOT
            uint xq[8];
            const float xd = quantize_piece(xs, xq);
            ivec2 xsum = ivec2(0);  // the quantized inputs' sums, words 0-3 and 4-7 (Q4_K's, Q5_K's runs; once a row)
            UNROLL for (uint w = 0; w < 4; w++) xsum += ivec2(sdot(0x01010101u, xq[w]), sdot(0x01010101u, xq[4 + w]));
#ifdef QMM_ORDER
            UNROLL for (uint o = 0; o < NO; o++)
              if (o < outs) {
                ivec2 part = piece_isums(pc[s][o], i, xq, xsum);
                if (ENTRIES_A_GROUP == 1) {  // (a super-block's over its lanes; integers: exact in any order)
                  part += subgroupShuffleXor(part, 1);
                  part += subgroupShuffleXor(part, 2);
                  part += subgroupShuffleXor(part, 4);
                }
#ifdef HAS_MINS
                if (i == 0) Qsm[(entry_of(s, t) * NO + o) * R + r] = part;
#else
                if (ENTRIES_A_GROUP > 1 || i == 0) Qsm[(entry_of(s, t) * NO + o) * R + r] = part.x;
#endif
              }
            if (ENTRIES_A_GROUP > 1 || i == 0) Qxd[entry_of(s, t) * R + r] = xd;
            if (p.norm != 0) {
              const float squares = group_squares(raw, i);
              if (ENTRIES_A_GROUP > 1 || i == 7) Qss[entry_of(s, t) * R + r] = squares;
            }
#else
            UNROLL for (uint o = 0; o < NO; o++)
              if (o < outs) acc[o][r] = piece_dot_q8(pc[s][o], i, xq, xd, xsum, acc[o][r]);
#endif
#else
            UNROLL for (uint o = 0; o < NO; o++)
              if (o < outs) acc[o][r] = piece_dot(pc[s][o], i, xs, acc[o][r]);
#endif
          }
        }
      }
    }
#ifdef QMM_ORDER
    barrier();
    add_in_order(g0 * ENTRIES_A_GROUP, ENTRIES_A_GROUP == 1 ? groups : p.K / 32, rows, outs, qacc, qss);
    barrier();
#endif
  }
#ifdef QMM_ORDER
  if (t >= NO * R && t < NO * R + R) Qrow_ss[t - NO * R] = qss;
  barrier();
  if (t < NO * R && t / R < outs && t % R < rows) store_output(m0 + t % R, n0 + t / R, qacc, norm_scale_of(Qrow_ss[t % R]));
  return;
#endif
  UNROLL for (uint o = 0; o <= NO; o++)
    UNROLL for (uint r = 0; r < R; r++) {
      if ((o < outs || o == NO) && (o < NO || p.norm != 0) && r < rows) {  // (uniform: the whole subgroup)
        const float s = subgroup_sum_xor(acc[o][r]);
        if (gl_SubgroupInvocationID == 0) sums[o * R + r][gl_SubgroupID] = s;
      }
    }
  barrier();
#ifdef K_SLICES
  if (!fold_slices(rows, outs)) return;
#endif
  for (uint slot = t; slot < NO * R; slot += WG) {
    const uint o = slot / R, r = slot % R;
    if (r >= rows || o >= outs) continue;
    if (p.glu_out != 0 && o % 2 == 1) continue;  // (its pair's thread stores both)
    precise float s = sums[slot][0], ss = sums[NO * R + r][0];
    for (uint g = 1; g < SUMMED_SUBGROUPS; g++) s += sums[slot][g], ss += sums[NO * R + r][g];
    if (p.glu_out == 0) {
      store_output(m0 + r, n0 + o, s, norm_scale_of(ss));
    } else {
      precise float up = sums[slot + R][0];  // (output o + 1, added as its own thread would)
      for (uint g = 1; g < SUMMED_SUBGROUPS; g++) up += sums[slot + R][g];
      store_glu(m0 + r, n0, o, s, up, norm_scale_of(ss));
    }
  }
}
