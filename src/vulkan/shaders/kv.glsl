// A KV cache layer as bound: keys and values [kv_head][slot][head_dim], fp32 or fp16 (KV_F16).
#if defined(KV_F16)
#define KV_T float16_t
#else
#define KV_T float
#endif

// x as the cache holds it: for an fp16 cache rounded to the nearest fp16 value (ties to even, as the CPU's
// conversion), in integer operations. A shader compiler may drop float(float16_t(x)) or round it its own way
// (NVIDIA's did: an H200 gave other bits for a key read from this forward than from the cache); the rounded
// value is exact in fp16, so storing it converts without rounding on any device.
float as_cached(float x) {
#if defined(KV_F16)
  const uint u = floatBitsToUint(x), sign = u & 0x80000000u, a = u & 0x7fffffffu, e = a >> 23;
  if (a >= 0x7f800000u) return x;  // inf, NaN
  float v;
  if (e >= 113u) {  // an fp16 normal: 10 of the 23 mantissa bits kept, rounded to even (a carry may raise e)
    const uint r = (a + 0xfffu + ((a >> 13) & 1u)) & ~0x1fffu;
    v = r > 0x477fe000u ? uintBitsToFloat(0x7f800000u) : uintBitsToFloat(r);  // past 65504: inf
  } else {  // an fp16 subnormal (or zero): a multiple of 2^-24
    const uint m = (a & 0x7fffffu) | (e > 0u ? 0x800000u : 0u), shift = 126u - e;
    uint q = 0u;
    if (shift <= 24u) {
      const uint rest = m & ((1u << shift) - 1u), half_ = 1u << (shift - 1u);
      q = (m >> shift) + ((rest > half_ || (rest == half_ && ((m >> shift) & 1u) != 0u)) ? 1u : 0u);
    }
    v = float(q) * (1.0 / 16777216.0);
  }
  return uintBitsToFloat(floatBitsToUint(v) | sign);
#else
  return x;
#endif
}
// The per-row table the host uploads for each forward (model/row_plan.h): a row's cache slot and its visible
// slots, [begin, end) in the slot list, and [local_begin, local_end) inside the sliding window.
const uint ROW_INFO = 5;

// RoPE of the pair (x0, x1) by an angle's cosine c and sine s. precise: the same operations wherever a key is
// rotated (stored for later forwards, or read from this forward's keys), never a multiply-add contracted in
// one place and not the other, so both give the same bits.
vec2 rope_pair(float x0, float x1, float c, float s) {
  precise float a = x0 * c - x1 * s, b = x0 * s + x1 * c;
  return vec2(a, b);
}
