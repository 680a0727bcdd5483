// Weight element types (GGML type ids, so GGUF files map 1:1) and exact scalar conversions.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace jf {

enum class DType : uint32_t { F32 = 0, F16 = 1, Q4_0 = 2, Q8_0 = 8, BF16 = 30 };

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

// Q8_0 and Q4_0: weights in blocks of 32 with a scale each (matmul multiplies them with int8 activations).
inline bool dtype_is_block_quantized(DType t) { return t == DType::Q8_0 || t == DType::Q4_0; }

// Returns false for type ids jf cannot compute with.
bool dtype_from_ggml(uint32_t id, DType* out);
std::string dtype_name(DType t);
bool dtype_from_name(const std::string& name, DType* out);  // "f32", "f16", "bf16", "q8_0", "q4_0" (any case)
int dtype_block_size(DType t);                               // elements per block (1 or 32)
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

inline float bf16_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet nan
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

// Block b (32 weights) of a Q8_0 or Q4_0 row: returns its scale and writes its quants as signed int8 (Q4_0:
// the nibble minus 8), so weight i = scale * q[i].
float block_quants(DType t, const void* row, int64_t b, int8_t* q);

// Converts n elements of a row (any DType) to fp32.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);
// Converts n fp32 values to a row of type t (Q8_0, Q4_0: n % 32 == 0). As GGML's reference quantizers do:
// Q8_0 scale = max|x| / 127, q = round(x / scale); Q4_0 scale = -m / 8 for the value m of largest magnitude,
// q = min(15, trunc(x / scale + 8.5)).
void quantize_row(DType t, const float* src, void* dst, int64_t n);

}  // namespace jf
