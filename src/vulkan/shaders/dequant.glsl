// One 32-weight unit of a weight matrix row in its file type (GGML's layouts, read as stored): define one
// TYPE_* and W_BINDING before including. load_unit(row, u, K, w) sets w to weights 32u .. 32u + 31 of `row`
// of a matrix with K input features. Every type is read in units of 32, so every kernel splits K the same way.

#if defined(TYPE_F32)
layout(std430, binding = W_BINDING) readonly buffer Weights { float W[]; };
#elif defined(TYPE_F16)
layout(std430, binding = W_BINDING) readonly buffer Weights { float16_t W[]; };
#elif defined(TYPE_BF16)
layout(std430, binding = W_BINDING) readonly buffer Weights { uint16_t W[]; };
#else
layout(std430, binding = W_BINDING) readonly buffer Weights { uint8_t W[]; };
#endif

uint byte_at(uint i) { return uint(W[i]); }
float half_at(uint i) { return unpackHalf2x16(byte_at(i) | (byte_at(i + 1) << 8)).x; }
int signed_byte_at(uint i) { return int(byte_at(i) << 24) >> 24; }

#if defined(TYPE_F32) || defined(TYPE_F16) || defined(TYPE_BF16)
void load_unit(uint row, uint u, uint K, out float w[32]) {
  const uint base = row * K;
  UNROLL for (uint i = 0; i < 32; i++) {
    const uint k = 32 * u + i;
#if defined(TYPE_BF16)
    w[i] = k < K ? uintBitsToFloat(uint(W[base + k]) << 16) : 0.0;
#else
    w[i] = k < K ? float(W[base + k]) : 0.0;
#endif
  }
}

#elif defined(TYPE_Q8_0)  // 34 bytes: fp16 d, 32 int8 q; w = d * q
void load_unit(uint row, uint u, uint K, out float w[32]) {
  const uint b = (row * (K / 32) + u) * 34;
  const float d = half_at(b);
  UNROLL for (uint i = 0; i < 32; i++) w[i] = d * float(signed_byte_at(b + 2 + i));
}

#elif defined(TYPE_Q4_0) || defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
// d [, m] [, qh (4 bytes)], 16 bytes of nibbles: byte j holds weight j (low) and j + 16 (high); Q5 adds bit
// j of qh as the fifth bit of weight j. Q4_0: d (q - 8), Q5_0: d (q - 16), Q4_1 / Q5_1: d q + m.
#if defined(TYPE_Q4_0)
const uint BLOCK = 18, QS = 2, QH = 0;
#elif defined(TYPE_Q4_1)
const uint BLOCK = 20, QS = 4, QH = 0;
#elif defined(TYPE_Q5_0)
const uint BLOCK = 22, QS = 6, QH = 2;
#else
const uint BLOCK = 24, QS = 8, QH = 4;
#endif
void load_unit(uint row, uint u, uint K, out float w[32]) {
  const uint b = (row * (K / 32) + u) * BLOCK;
  const float d = half_at(b);
#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
  const uint qh = byte_at(b + QH) | (byte_at(b + QH + 1) << 8) | (byte_at(b + QH + 2) << 16) | (byte_at(b + QH + 3) << 24);
#endif
  UNROLL for (uint j = 0; j < 16; j++) {
    const uint q = byte_at(b + QS + j);
    uint lo = q & 15, hi = q >> 4;
#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
    lo |= ((qh >> j) & 1) << 4;
    hi |= ((qh >> (j + 16)) & 1) << 4;
#endif
#if defined(TYPE_Q4_0)
    w[j] = d * float(int(lo) - 8), w[j + 16] = d * float(int(hi) - 8);
#elif defined(TYPE_Q5_0)
    w[j] = d * float(int(lo) - 16), w[j + 16] = d * float(int(hi) - 16);
#else
    const float m = half_at(b + 2);
    w[j] = d * float(lo) + m, w[j + 16] = d * float(hi) + m;
#endif
  }
}

#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
// Super-blocks of 256: d, dmin, 12 bytes of 6-bit scales and mins, [Q5_K: 32 bytes qh,] 128 bytes of nibbles.
// Sub-block j (our unit u % 8) is chunk j / 2's low (j even) or high nibbles; Q5_K adds bit j of qh[l].
#if defined(TYPE_Q4_K)
const uint BLOCK = 144, QS = 16;
#else
const uint BLOCK = 176, QS = 48;
#endif
// The 6-bit scale and min of sub-block j of the super-block at byte b.
void kquant_scale_min(uint b, uint j, out uint sc, out uint m) {
  const uint s = b + 4;  // the scales
  if (j < 4) {
    sc = byte_at(s + j) & 63, m = byte_at(s + j + 4) & 63;
  } else {
    sc = (byte_at(s + j + 4) & 15) | ((byte_at(s + j - 4) >> 6) << 4);
    m = (byte_at(s + j + 4) >> 4) | ((byte_at(s + j) >> 6) << 4);
  }
}
void load_unit(uint row, uint u, uint K, out float w[32]) {
  const uint b = (row * (K / 256) + u / 8) * BLOCK, j = u % 8;
  const float d = half_at(b), dmin = half_at(b + 2);
  uint sc, m;
  kquant_scale_min(b, j, sc, m);
  const float ds = d * float(sc), dm = dmin * float(m);
  const uint qs = b + QS + 32 * (j / 2), shift = 4 * (j % 2);
  UNROLL for (uint l = 0; l < 32; l++) {
    uint q = (byte_at(qs + l) >> shift) & 15;
#if defined(TYPE_Q5_K)
    q |= ((byte_at(b + 16 + l) >> j) & 1) << 4;
#endif
    w[l] = ds * float(q) - dm;
  }
}

#elif defined(TYPE_Q6_K)
// 210 bytes: ql[128], qh[64], int8 scales[16], fp16 d. Unit j = u % 8 is quarter j % 4 of half j / 4.
void load_unit(uint row, uint u, uint K, out float w[32]) {
  const uint b = (row * (K / 256) + u / 8) * 210, j = u % 8, h = j / 4, part = j % 4;
  const uint ql = b + 64 * h + 32 * (part % 2), qh = b + 128 + 32 * h;
  const uint lshift = 4 * (part / 2), hshift = 2 * part;
  const float d = half_at(b + 208);
  const float d0 = d * float(signed_byte_at(b + 192 + 8 * h + 2 * part));
  const float d1 = d * float(signed_byte_at(b + 192 + 8 * h + 2 * part + 1));
  UNROLL for (uint l = 0; l < 32; l++) {
    const int q = int(((byte_at(ql + l) >> lshift) & 15) | (((byte_at(qh + l) >> hshift) & 3) << 4)) - 32;
    w[l] = (l < 16 ? d0 : d1) * float(q);
  }
}
#elif defined(TYPE_Q2_K) || defined(TYPE_Q3_K)
// Super-blocks of 256 in two halves of 128; in half n, step j (0..3) is 32 weights whose 2 low bits are bits
// 2j of qs[32n + l]; 16 sub-blocks of 16 with a scale each. Q2_K (84 bytes: scales[16], qs[64], d, dmin):
// d (s & 15) q - dmin (s >> 4). Q3_K (110 bytes: hmask[32], qs[64], scales[12], d): d (sc - 32) (q - 4 + 4 h),
// h bit u % 8 of hmask[l], sc the 6-bit scale of kernels/dtype.h's q3k_scale.
#if defined(TYPE_Q2_K)
const uint BLOCK = 84, QS = 16;
#else
const uint BLOCK = 110, QS = 32;
#endif
uint q3k_scale6(uint s, uint j) {  // sub-block j's 6-bit scale sc (its multiplier sc - 32); s: the scales' first byte
  const uint low = j < 8 ? byte_at(s + j) & 15 : byte_at(s + j - 8) >> 4, high = (byte_at(s + 8 + j % 4) >> (2 * (j / 4))) & 3;
  return low | (high << 4);
}
void load_unit(uint row, uint u, uint K, out float w[32]) {
  const uint b = (row * (K / 256) + u / 8) * BLOCK, jb = u % 8, qs = b + QS + 32 * (jb / 4), shift = 2 * (jb % 4);
#if defined(TYPE_Q2_K)
  const float d = half_at(b + 80), dmin = half_at(b + 82);
  const uint s0 = byte_at(b + 2 * jb), s1 = byte_at(b + 2 * jb + 1);
  const float d0 = d * float(s0 & 15), m0 = dmin * float(s0 >> 4), d1 = d * float(s1 & 15), m1 = dmin * float(s1 >> 4);
  UNROLL for (uint l = 0; l < 32; l++) w[l] = (l < 16 ? d0 : d1) * float((byte_at(qs + l) >> shift) & 3) - (l < 16 ? m0 : m1);
#else
  const float d = half_at(b + 108);
  const float d0 = d * small_float_less(q3k_scale6(b + 96, 2 * jb), 32.0), d1 = d * small_float_less(q3k_scale6(b + 96, 2 * jb + 1), 32.0);
  UNROLL for (uint l = 0; l < 32; l++) {
    const int q = int((byte_at(qs + l) >> shift) & 3) - (((byte_at(b + l) >> jb) & 1) != 0 ? 0 : 4);
    w[l] = (l < 16 ? d0 : d1) * float(q);
  }
#endif
}

#elif defined(TYPE_IQ4_NL) || defined(TYPE_IQ4_XS)
// 4-bit indices into a table of 16 int8 values, nibbles as Q4_0 (byte i: weight i low, i + 16 high).
// IQ4_NL: blocks of 32 (18 bytes: d, qs[16]), d v. IQ4_XS: 256 (136 bytes: d, scales_h, scales_l[4],
// qs[128]), sub-block j scaled by d (ls - 32), ls 6 bits: scales_l[j / 2] at 4 (j % 2), scales_h at 2j.
#include "iq4.glsl"
float iq4_scale(uint b, uint j) {  // IQ4_XS sub-block j's multiplier of d
  const uint h = byte_at(b + 2) | (byte_at(b + 3) << 8);
  const uint ls = ((byte_at(b + 4 + j / 2) >> (4 * (j % 2))) & 15) | (((h >> (2 * j)) & 3) << 4);
  return small_float_less(ls, 32.0);
}
void load_unit(uint row, uint u, uint K, out float w[32]) {
#if defined(TYPE_IQ4_NL)
  const uint b = (row * (K / 32) + u) * 18, qs = b + 2;
  const float d = half_at(b);
#else
  const uint b = (row * (K / 256) + u / 8) * 136, qs = b + 8 + 16 * (u % 8);
  const float d = half_at(b) * iq4_scale(b, u % 8);
#endif
  UNROLL for (uint i = 0; i < 16; i++) {
    const uint q = byte_at(qs + i);
    w[i] = d * iq4_value(q & 15), w[i + 16] = d * iq4_value(q >> 4);
  }
}
#else
#error "no TYPE_* defined"
#endif
