// Four consecutive weights of a weight matrix row in its file type (GGML's layouts, read as stored): define
// one TYPE_* and W_BINDING and include dequant.glsl first. Each type is read once, in parts:
// load4_parts(row, k, K, q, a, c) gives weights k .. k + 3 of `row` (k a multiple of 4, so the four lie in one
// 32-weight unit; zero past K) as w = a q - c, q small integers as floats (the IQ4 table's values; a float
// type's weights themselves, a = 1), a the unit's scale and c its offset (the min term of Q4_K / Q5_K / Q2_K,
// -m of Q4_1 / Q5_1; PARTS_OFFSET says whether the type has one, else c is 0). load4 is the four as weights;
// matmul_split's FOLD members take the parts and add a dot(q, x) - c sum(x). Quantized blocks (and F16 rows of
// even K) are read 32 bits at a time through a second view of the same binding (weight_words.glsl): a quarter
// of the load instructions of byte loads.
#include "weight_words.glsl"
uvec4 bytes4(uint i) { const uint v = W32[i / 4]; return uvec4(v, v >> 8, v >> 16, v >> 24) & 255; }  // i % 4 == 0
uvec4 bytes4_even(uint i) { const uint v = word_even(i); return uvec4(v, v >> 8, v >> 16, v >> 24) & 255; }

#if defined(TYPE_F32) || defined(TYPE_F16) || defined(TYPE_BF16)
float float_at(uint i) {
#if defined(TYPE_BF16)
  return uintBitsToFloat(uint(W[i]) << 16);
#else
  return float(W[i]);
#endif
}
vec4 load4(uint row, uint k, uint K) {
  const uint base = row * K + k;
#if defined(TYPE_F16)
  if (k + 4 <= K && K % 2 == 0) return vec4(unpackHalf2x16(W32[base / 2]), unpackHalf2x16(W32[base / 2 + 1]));
#endif
  if (k + 4 <= K) return vec4(float_at(base), float_at(base + 1), float_at(base + 2), float_at(base + 3));
  vec4 w = vec4(0.0);
  UNROLL for (uint i = 0; i < 4; i++)
    if (k + i < K) w[i] = float_at(base + i);
  return w;
}
#endif

#if defined(TYPE_Q4_1) || defined(TYPE_Q5_1) || defined(TYPE_Q4_K) || defined(TYPE_Q5_K) || defined(TYPE_Q2_K)
const bool PARTS_OFFSET = true;
#else
const bool PARTS_OFFSET = false;
#endif

#if defined(TYPE_F32) || defined(TYPE_F16) || defined(TYPE_BF16)
void load4_parts(uint row, uint k, uint K, out vec4 q, out float a, out float c) { q = load4(row, k, K), a = 1.0, c = 0.0; }

#elif defined(TYPE_Q8_0)
void load4_parts(uint row, uint k, uint K, out vec4 q, out float a, out float c) {
  const uint b = (row * (K / 32) + k / 32) * 34;
  q = signed_byte_float(bytes4_even(b + 2 + k % 32)), a = half_even(b), c = 0.0;
}

#elif defined(TYPE_Q4_0) || defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
// Nibbles as load4 reads them into the type's q (Q4_0 / Q5_0: signed, less 8 / 16), and its c.
void nibble_parts(uint b, uvec4 n, out vec4 q, out float c) {
#if defined(TYPE_Q4_0)
  q = small_float_less(n, 8.0), c = 0.0;
#elif defined(TYPE_Q5_0)
  q = small_float_less(n, 16.0), c = 0.0;
#else
  q = small_float(n), c = -half_even(b + 2);
#endif
}
void load4_parts(uint row, uint k, uint K, out vec4 q, out float a, out float c) {
  const uint b = (row * (K / 32) + k / 32) * BLOCK, j = k % 32;
  uvec4 n = (bytes4_even(b + QS + (j % 16)) >> (j < 16 ? 0 : 4)) & 15;
#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
  n |= ((uvec4(word_even(b + QH)) >> uvec4(j, j + 1, j + 2, j + 3)) & 1) << 4;
#endif
  nibble_parts(b, n, q, c);
  a = half_even(b);
}

#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
void load4_parts(uint row, uint k, uint K, out vec4 q, out float a, out float c) {
  const uint u = k / 32, b = (row * (K / 256) + u / 8) * BLOCK, j = u % 8, l = k % 32;
  const vec2 dm = unpackHalf2x16(W32[b / 4]);
  uint sc, m;
  kquant_scale_min(b, j, sc, m);
  uvec4 n = (bytes4(b + QS + 32 * (j / 2) + l) >> (4 * (j % 2))) & 15;
#if defined(TYPE_Q5_K)
  n |= ((bytes4(b + 16 + l) >> j) & 1) << 4;
#endif
  q = small_float(n), a = dm.x * small_float(sc), c = dm.y * small_float(m);
}

#elif defined(TYPE_Q6_K)
void load4_parts(uint row, uint k, uint K, out vec4 q, out float a, out float c) {
  const uint u = k / 32, b = (row * (K / 256) + u / 8) * 210, j = u % 8, h = j / 4, part = j % 4, l = k % 32;
  const uvec4 lo = (bytes4_even(b + 64 * h + 32 * (part % 2) + l) >> (4 * (part / 2))) & 15;
  const uvec4 hi = (bytes4_even(b + 128 + 32 * h + l) >> (2 * part)) & 3;
  q = small_float_less(lo | (hi << 4), 32.0);
  a = half_even(b + 208) * signed_byte_float(byte_at(b + 192 + 8 * h + 2 * part + (l < 16 ? 0 : 1))), c = 0.0;
}

#elif defined(TYPE_Q2_K) || defined(TYPE_Q3_K)
void lowbits4_parts(uint row, uint k, uint K, uint step_delta, out vec4 q, out float a, out float c) {
  const uint u = k / 32, b = (row * (K / 256) + u / 8) * BLOCK, jb = u % 8 + step_delta, l = k % 32;
  const uint shift = 2 * (jb % 4), sub = 2 * jb + l / 16;
#if defined(TYPE_Q2_K)
  q = small_float((bytes4(b + QS + 32 * (jb / 4) + l) >> shift) & 3);
  const vec2 dm = unpackHalf2x16(W32[(b + 80) / 4]);
  const uint s = byte_at(b + sub);
  a = dm.x * small_float(s & 15), c = dm.y * small_float(s >> 4);
#else
  const uvec4 low = (bytes4_even(b + QS + 32 * (jb / 4) + l) >> shift) & 3, high = (bytes4_even(b + l) >> jb) & 1;
  q = small_float_less(low | (high << 2), 4.0), a = half_even(b + 108) * small_float_less(q3k_scale6(b + 96, sub), 32.0), c = 0.0;
#endif
}
void load4_parts(uint row, uint k, uint K, out vec4 q, out float a, out float c) { lowbits4_parts(row, k, K, 0, q, a, c); }

#elif defined(TYPE_IQ4_NL) || defined(TYPE_IQ4_XS)
vec4 iq4_values(uvec4 q) { return small_float_less(uvec4(iq4_biased(q.x), iq4_biased(q.y), iq4_biased(q.z), iq4_biased(q.w)), 128.0); }
// The block's first quant byte and multiplier for weight k.
void iq4_block(uint row, uint k, uint K, out uint qs, out float d) {
#if defined(TYPE_IQ4_NL)
  const uint b = (row * (K / 32) + k / 32) * 18;
  qs = b + 2, d = half_even(b);
#else
  const uint b = (row * (K / 256) + k / 256) * 136, j = (k % 256) / 32;
  qs = b + 8 + 16 * j, d = unpackHalf2x16(W32[b / 4]).x * iq4_scale(b, j);
#endif
}
void load4_parts(uint row, uint k, uint K, out vec4 q, out float a, out float c) {
  uint qs;
  iq4_block(row, k, K, qs, a);
  const uint j = k % 32;
  q = iq4_values((bytes4_even(qs + j % 16) >> (j < 16 ? 0 : 4)) & 15), c = 0.0;
}
#endif

#if !defined(TYPE_F32) && !defined(TYPE_F16) && !defined(TYPE_BF16)
vec4 load4(uint row, uint k, uint K) {
  vec4 q;
  float a, c;
  load4_parts(row, k, K, q, a, c);
  return PARTS_OFFSET ? a * q - c : a * q;
}
#endif

// load_pair(row, k, K, lo, hi) (load_pair_parts: the same in parts): weights k .. k + 3 and k + PAIR_SPAN .. k + PAIR_SPAN + 3 of `row`, two fours
// the type keeps in the same bytes (a byte's two nibbles; Q6_K's low-bit bytes and high-bit bytes), so each
// byte is loaded once and the block's scale and header once for both. k is the first four's first weight:
// for the nibble types its unit's low half, for Q4_K / Q5_K an even sub-block, for Q6_K quarter 0 or 1.
// Types with a byte per weight or more take two plain fours (PAIR_SPAN 4: eight consecutive weights).
#if defined(TYPE_Q4_0) || defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
const uint PAIR_SPAN = 16;
void load_pair_parts(uint row, uint k, uint K, out vec4 q0, out float a0, out float c0, out vec4 q1, out float a1, out float c1) {
  const uint b = (row * (K / 32) + k / 32) * BLOCK, j = k % 32;
  const uvec4 n = bytes4_even(b + QS + j);
  uvec4 n0 = n & 15, n1 = n >> 4;
#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
  const uvec4 qh = uvec4(word_even(b + QH));
  n0 |= ((qh >> uvec4(j, j + 1, j + 2, j + 3)) & 1) << 4;
  n1 |= ((qh >> uvec4(j + 16, j + 17, j + 18, j + 19)) & 1) << 4;
#endif
  nibble_parts(b, n0, q0, c0);
  nibble_parts(b, n1, q1, c1);
  a0 = a1 = half_even(b);
}

#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
const uint PAIR_SPAN = 32;
void load_pair_parts(uint row, uint k, uint K, out vec4 q0, out float a0, out float c0, out vec4 q1, out float a1, out float c1) {
  const uint u = k / 32, b = (row * (K / 256) + u / 8) * BLOCK, j = u % 8, l = k % 32;
  const vec2 dm = unpackHalf2x16(W32[b / 4]);
  uint sc0, m0, sc1, m1;
  kquant_scale_min(b, j, sc0, m0);
  kquant_scale_min(b, j + 1, sc1, m1);
  const uvec4 n = bytes4(b + QS + 32 * (j / 2) + l);
  uvec4 n0 = n & 15, n1 = n >> 4;
#if defined(TYPE_Q5_K)
  const uvec4 qh = bytes4(b + 16 + l);
  n0 |= ((qh >> j) & 1) << 4;
  n1 |= ((qh >> (j + 1)) & 1) << 4;
#endif
  q0 = small_float(n0), a0 = dm.x * small_float(sc0), c0 = dm.y * small_float(m0);
  q1 = small_float(n1), a1 = dm.x * small_float(sc1), c1 = dm.y * small_float(m1);
}

#elif defined(TYPE_Q6_K)
const uint PAIR_SPAN = 64;
void load_pair_parts(uint row, uint k, uint K, out vec4 q0, out float a0, out float c0, out vec4 q1, out float a1, out float c1) {
  const uint u = k / 32, b = (row * (K / 256) + u / 8) * 210, j = u % 8, h = j / 4, part = j % 4, l = k % 32;
  const uvec4 ql = bytes4_even(b + 64 * h + 32 * part + l), qh = bytes4_even(b + 128 + 32 * h + l);
  const float d = half_even(b + 208);
  const uint s = b + 192 + 8 * h + 2 * part + (l < 16 ? 0 : 1);
  q0 = small_float_less((ql & 15) | (((qh >> (2 * part)) & 3) << 4), 32.0), a0 = d * signed_byte_float(byte_at(s)), c0 = 0.0;
  q1 = small_float_less((ql >> 4) | (((qh >> (2 * part + 4)) & 3) << 4), 32.0), a1 = d * signed_byte_float(byte_at(s + 4)), c1 = 0.0;
}

#elif defined(TYPE_Q2_K) || defined(TYPE_Q3_K)
const uint PAIR_SPAN = 32;  // steps jb and jb + 1 (jb even) are bits 2jb and 2jb + 2 of the same bytes
void load_pair_parts(uint row, uint k, uint K, out vec4 q0, out float a0, out float c0, out vec4 q1, out float a1, out float c1) {
  lowbits4_parts(row, k, K, 0, q0, a0, c0);
  lowbits4_parts(row, k, K, 1, q1, a1, c1);
}

#elif defined(TYPE_IQ4_NL) || defined(TYPE_IQ4_XS)
const uint PAIR_SPAN = 16;
void load_pair_parts(uint row, uint k, uint K, out vec4 q0, out float a0, out float c0, out vec4 q1, out float a1, out float c1) {
  uint qs;
  float d;
  iq4_block(row, k, K, qs, d);
  const uvec4 n = bytes4_even(qs + k % 32);
  q0 = iq4_values(n & 15), q1 = iq4_values(n >> 4), a0 = a1 = d, c0 = c1 = 0.0;
}

#else
const uint PAIR_SPAN = 4;
void load_pair_parts(uint row, uint k, uint K, out vec4 q0, out float a0, out float c0, out vec4 q1, out float a1, out float c1) {
  load4_parts(row, k, K, q0, a0, c0);
  load4_parts(row, k + 4, K, q1, a1, c1);
}
#endif

void load_pair(uint row, uint k, uint K, out vec4 lo, out vec4 hi) {
  vec4 q0, q1;
  float a0, c0, a1, c1;
  load_pair_parts(row, k, K, q0, a0, c0, q1, a1, c1);
  lo = PARTS_OFFSET ? a0 * q0 - c0 : a0 * q0;
  hi = PARTS_OFFSET ? a1 * q1 - c1 : a1 * q1;
}
