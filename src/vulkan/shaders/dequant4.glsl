// Four consecutive weights of a weight matrix row in its file type (GGML's layouts, read as stored): define
// one TYPE_* and W_BINDING and include dequant.glsl first. load4(row, k, K) returns weights k .. k + 3 of `row`
// (k a multiple of 4, so the four lie in one 32-weight unit), zero past K. Quantized blocks (and F16 rows of
// even K) are read 32 bits at a time through a second view of the same binding: a quarter of the load
// instructions of byte loads.
layout(std430, binding = W_BINDING) readonly buffer Weights32 { uint W32[]; };
uvec4 bytes4(uint i) { const uint v = W32[i / 4]; return uvec4(v, v >> 8, v >> 16, v >> 24) & 255; }  // i % 4 == 0
// Types whose blocks are an odd number of 16-bit words (Q8_0, Q4_0, Q5_0, Q6_K) start every other block
// half-way through a word: bytes at an even i take one 32-bit load, or two where they straddle words (the
// device copy is padded to whole words, DeviceWeights::matrix).
uint word_even(uint i) { return i % 4 == 0 ? W32[i / 4] : (W32[i / 4] >> 16) | (W32[i / 4 + 1] << 16); }
uvec4 bytes4_even(uint i) { const uint v = word_even(i); return uvec4(v, v >> 8, v >> 16, v >> 24) & 255; }
float half_even(uint i) { return unpackHalf2x16(W32[i / 4] >> (8 * (i % 4))).x; }

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
  for (uint i = 0; i < 4 && k + i < K; i++) w[i] = float_at(base + i);
  return w;
}

#elif defined(TYPE_Q8_0)
vec4 load4(uint row, uint k, uint K) {
  const uint b = (row * (K / 32) + k / 32) * 34, q = b + 2 + k % 32;
  return half_even(b) * vec4(ivec4(bytes4_even(q) << 24) >> 24);
}

#elif defined(TYPE_Q4_0) || defined(TYPE_Q4_1) || defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
vec4 load4(uint row, uint k, uint K) {
  const uint b = (row * (K / 32) + k / 32) * BLOCK, j = k % 32;
  const uint byte0 = b + QS + (j % 16), shift = j < 16 ? 0 : 4;
  uvec4 q = (bytes4_even(byte0) >> shift) & 15;
#if defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
  const uint qh = word_even(b + QH);
  q |= ((uvec4(qh) >> uvec4(j, j + 1, j + 2, j + 3)) & 1) << 4;
#endif
  const float d = half_even(b);
#if defined(TYPE_Q4_0)
  return d * (vec4(q) - 8.0);
#elif defined(TYPE_Q5_0)
  return d * (vec4(q) - 16.0);
#else
  return d * vec4(q) + half_even(b + 2);
#endif
}

#elif defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
vec4 load4(uint row, uint k, uint K) {
  // Blocks of 144 / 176 bytes start 16-byte aligned: d and dmin are one word, the four nibble bytes (and
  // Q5_K's four high-bit bytes) one each.
  const uint u = k / 32, b = (row * (K / 256) + u / 8) * BLOCK, j = u % 8, l = k % 32;
  const vec2 dm = unpackHalf2x16(W32[b / 4]);
  uint sc, m;
  kquant_scale_min(b, j, sc, m);
  uvec4 q = (bytes4(b + QS + 32 * (j / 2) + l) >> (4 * (j % 2))) & 15;
#if defined(TYPE_Q5_K)
  q |= ((bytes4(b + 16 + l) >> j) & 1) << 4;
#endif
  return dm.x * float(sc) * vec4(q) - dm.y * float(m);
}

#elif defined(TYPE_Q6_K)
vec4 load4(uint row, uint k, uint K) {
  const uint u = k / 32, b = (row * (K / 256) + u / 8) * 210, j = u % 8, h = j / 4, part = j % 4, l = k % 32;
  const uint ql = b + 64 * h + 32 * (part % 2) + l, qh = b + 128 + 32 * h + l;
  const uint lshift = 4 * (part / 2), hshift = 2 * part;
  const float d = half_even(b + 208) * float(signed_byte_at(b + 192 + 8 * h + 2 * part + (l < 16 ? 0 : 1)));
  const uvec4 lo = (bytes4_even(ql) >> lshift) & 15;
  const uvec4 hi = (bytes4_even(qh) >> hshift) & 3;
  return d * (vec4(lo | (hi << 4)) - 32.0);
}
#endif
