// Weight element types (GGML type ids, so GGUF files map 1:1) and exact scalar conversions.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace jf {

enum class DType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13,
  Q6_K = 14, IQ4_NL = 20, IQ4_XS = 23, BF16 = 30
};

// Q8_0: blocks of 32 weights sharing one fp16 scale d; weight = d * q, q in [-127, 127].
constexpr int kQ8Block = 32;
struct BlockQ8_0 {
  uint16_t d;  // fp16 bits
  int8_t qs[kQ8Block];
};
static_assert(sizeof(BlockQ8_0) == 34, "Q8_0 block must be packed to 34 bytes");

// Q4_0: blocks of 32 weights sharing one fp16 scale d; weight = d * (q - 8), q in [0, 15]. Byte j holds
// weight j in its low nibble and weight j + 16 in its high nibble (GGML's layout).
struct BlockQ4_0 {
  uint16_t d;  // fp16 bits
  uint8_t qs[kQ8Block / 2];
};
static_assert(sizeof(BlockQ4_0) == 18, "Q4_0 block must be packed to 18 bytes");

// Q4_1: d * q + m, q in [0, 15] (nibbles as Q4_0). Q5_0: d * (q - 16), Q5_1: d * q + m, q in [0, 31]: the
// nibbles as Q4_0 plus a fifth bit, bit j of qh (little-endian uint32) for weight j.
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[kQ8Block / 2];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQ8Block / 2];
};
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kQ8Block / 2];
};
static_assert(sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24, "GGML legacy block sizes");

// K-quants: super-blocks of 256 weights (GGML's layouts).
// Q4_K / Q5_K: 8 sub-blocks of 32, each with a 6-bit scale sc[j] and min m[j] packed in `scales` (see
// kquant_scale_min); weight = d * sc[j] * q - dmin * m[j]. Chunk c (64 weights) uses qs[32c .. 32c+31]: low
// nibbles are sub-block 2c, high ones 2c+1; Q5_K adds bit 2c (low) / 2c+1 (high) of qh[l] worth 16.
// Q6_K: 16 sub-blocks of 16 with int8 scales; weight = d * sc * (q - 32), q 6 bits from ql (4) and qh (2).
constexpr int kQK = 256;
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[kQK / 2];
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[kQK / 8];
  uint8_t qs[kQK / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQK / 2];
  uint8_t qh[kQK / 4];
  int8_t scales[kQK / 16];
  uint16_t d;
};
// Q2_K and Q3_K: 16 sub-blocks of 16 in two halves of 128; within half n, step j (0..3) is 32 weights whose
// 2 low bits are bits 2j of qs[32n .. 32n+31] (sub-blocks 8n + 2j and 8n + 2j + 1, 16 weights each).
// Q2_K: weight = d * sc * q - dmin * m, a 4-bit scale (low nibble) and min (high nibble) per sub-block.
// Q3_K: weight = d * (sc - 32) * (q - 4), the third bit of weight i in bit i / 32 of hmask[i % 32]; the
// 6-bit scales: low 4 bits in scales[j] (j < 8) or its high nibble (scales[j - 8]), top 2 bits at 2 (j / 4)
// of scales[8 + j % 4] (q3k_scale).
struct BlockQ2_K {
  uint8_t scales[kQK / 16];
  uint8_t qs[kQK / 4];
  uint16_t d, dmin;
};
struct BlockQ3_K {
  uint8_t hmask[kQK / 8];
  uint8_t qs[kQK / 4];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210, "GGML K-quant block sizes");
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110, "GGML K-quant block sizes");

// IQ4_NL and IQ4_XS: 4-bit indices into a non-linear table of 16 int8 values (kIq4Values), nibbles as Q4_0
// (byte j: weight j low, weight j + 16 high). IQ4_NL: blocks of 32, weight = d * kIq4Values[index].
// IQ4_XS: super-blocks of 256, 8 sub-blocks of 32 each with a 6-bit scale ls (low 4 bits in scales_l[j / 2]
// at 4 (j % 2), top 2 bits at 2j of scales_h): weight = (d * (ls - 32)) * kIq4Values[index].
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQ8Block / 2];
};
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK / 64];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136, "GGML IQ4 block sizes");

// Sub-block j (0..15) of a Q3_K super-block: its scale (sc - 32, in [-32, 31]).
inline int q3k_scale(const uint8_t* s, int j) {
  const int low = j < 8 ? s[j] & 0xF : s[j - 8] >> 4, high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// Sub-block j (0..7) of a Q4_K / Q5_K super-block: its 6-bit scale and min.
inline void kquant_scale_min(const uint8_t* q, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Every quantized type: weights in blocks (32 or 256) with scales; matmul multiplies them with int8 activations.
constexpr bool dtype_is_block_quantized(DType t) {
  return t != DType::F32 && t != DType::F16 && t != DType::BF16;
}
constexpr bool dtype_is_kquant(DType t) {
  return t == DType::Q2_K || t == DType::Q3_K || t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K;
}
// Types whose 32-weight blocks have a min (an added term): Q4_1, Q5_1, Q2_K (one per half), Q4_K, Q5_K.
constexpr bool dtype_has_min(DType t) {
  return t == DType::Q4_1 || t == DType::Q5_1 || t == DType::Q2_K || t == DType::Q4_K || t == DType::Q5_K;
}
// Elements per block: 256 for the K-quants and IQ4_XS.
constexpr bool dtype_has_256_blocks(DType t) { return dtype_is_kquant(t) || t == DType::IQ4_XS; }
// Scales per 32 weights: 2 for Q2_K, Q3_K and Q6_K (sub-blocks of 16), else 1.
constexpr int dtype_scales_per_32(DType t) {
  return t == DType::Q2_K || t == DType::Q3_K || t == DType::Q6_K ? 2 : 1;
}

// Returns false for type ids jf cannot compute with.
bool dtype_from_ggml(uint32_t id, DType* out);
std::string dtype_name(DType t);
bool dtype_from_name(const std::string& name, DType* out);  // "f32", "q4_k", ... as dtype_name (any case)
int dtype_block_size(DType t);                               // elements per block (1, 32 or 256)
size_t dtype_block_bytes(DType t);                           // bytes per block
// Bytes of a row of n elements; n must be a multiple of the block size.
inline size_t dtype_row_bytes(DType t, int64_t n) {
  return static_cast<size_t>(n / dtype_block_size(t)) * dtype_block_bytes(t);
}

// ---- fp16 / bf16 <-> fp32, bit-exact, round-to-nearest-even ----
inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13));  // inf / nan
  if (exp == 0) {
    if (man == 0) return bits_f32(sign);
    // subnormal: value = man * 2^-24
    float v = static_cast<float>(man) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to >= 65520: inf
  if (ax < 0x38800000u) {                                              // below the smallest normal half
    if (ax < 0x33000000u) return static_cast<uint16_t>(sign);          // < half of smallest subnormal
    uint32_t e = ax >> 23, m = (ax & 0x7fffff) | 0x800000;
    uint32_t shift = 126 - e;                                          // 14..24
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = ((ax - 0x38000000u) >> 13);
  uint32_t rem = ax & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
  return static_cast<uint16_t>(sign | r);
}

// Round to nearest, ties to even, for |f| < 2^22: the reference quantizers' float trick (their bits).
inline int nearest_int(float f) {
  const float v = f + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}

inline float bf16_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet nan
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

// Block b (32 weights) of a row of any quantized type, as the int8 kernels see it: weight i = d[i / 16] *
// q[i] (+ m[i / 16] when dtype_has_min), with d and m rounded to fp32 exactly as GGML's dequantization
// computes them (Q4_K: d = fp16 d * sc[j], m = -(dmin * m[j]); Q6_K: d[h] = fp16 d * sc of each half), so
// dequantize_row gives the reference engine's values bit for bit. q: Q8_0 as stored, Q4_0 nibble - 8, Q5_0
// - 16, Q6_K - 32, Q3_K - 4, Q4_1 / Q5_1 / Q2_K / Q4_K / Q5_K the unsigned quant, IQ4_NL / IQ4_XS the table
// value (so their kernels are Q8_0's, with IQ4_XS's d = fp16 d * (ls - 32)).
struct Quants32 {
  float d[2];  // d[1] == d[0] unless dtype_scales_per_32 is 2
  float m[2];  // 0 for types without a min; m[1] == m[0] except for Q2_K
  int8_t q[kQ8Block];
  // K-quants also as integers, for the int8 kernels: the super-block's d and -dmin, and the sub-block's
  // scale(s) and min(s) (one per half of 16 where dtype_scales_per_32 is 2), so d[h] = sd * sc[h] and
  // m[h] = smin * sm[h].
  float sd = 0, smin = 0;
  int8_t sc[2] = {0, 0};
  uint8_t sm[2] = {0, 0};
};
void block32(DType t, const void* row, int64_t b, Quants32& out);

// Converts n elements of a row (any DType) to fp32.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// Converts n fp32 values to a row of type t (n a multiple of the block size) with GGML's reference
// quantizers (no importance matrix), so files match the reference tools' bit for bit: Q8_0 scale =
// max|x| / 127, q = round(x / scale); Q4_0 scale = -m / 8 for the value m of largest magnitude, q = min(15,
// trunc(x / scale + 8.5)); the others in dtype_quants.cpp.
void quantize_row(DType t, const float* src, void* dst, int64_t n);

}  // namespace jf
