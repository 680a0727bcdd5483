#include "kernels/dtype.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace jf {

void quantize_row_other(DType t, const float* src, void* dst, int64_t n);  // dtype_quants.cpp

bool dtype_from_ggml(uint32_t id, DType* out) {
  switch (id) {
    case 0: *out = DType::F32; return true;
    case 1: *out = DType::F16; return true;
    case 2: *out = DType::Q4_0; return true;
    case 3: *out = DType::Q4_1; return true;
    case 6: *out = DType::Q5_0; return true;
    case 7: *out = DType::Q5_1; return true;
    case 8: *out = DType::Q8_0; return true;
    case 10: *out = DType::Q2_K; return true;
    case 11: *out = DType::Q3_K; return true;
    case 12: *out = DType::Q4_K; return true;
    case 13: *out = DType::Q5_K; return true;
    case 14: *out = DType::Q6_K; return true;
    case 20: *out = DType::IQ4_NL; return true;
    case 23: *out = DType::IQ4_XS; return true;
    case 30: *out = DType::BF16; return true;
    default: return false;
  }
}

std::string dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::Q8_0: return "q8_0";
    case DType::Q4_0: return "q4_0";
    case DType::Q4_1: return "q4_1";
    case DType::Q5_0: return "q5_0";
    case DType::Q5_1: return "q5_1";
    case DType::Q2_K: return "q2_k";
    case DType::Q3_K: return "q3_k";
    case DType::Q4_K: return "q4_k";
    case DType::Q5_K: return "q5_k";
    case DType::Q6_K: return "q6_k";
    case DType::IQ4_NL: return "iq4_nl";
    case DType::IQ4_XS: return "iq4_xs";
  }
  return "?";
}

bool dtype_from_name(const std::string& name, DType* out) {
  std::string s = name;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                  DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS}) {
    if (s == dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

int dtype_block_size(DType t) { return dtype_has_256_blocks(t) ? kQK : dtype_is_block_quantized(t) ? kQ8Block : 1; }

size_t dtype_block_bytes(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16:
    case DType::BF16: return 2;
    case DType::Q8_0: return sizeof(BlockQ8_0);
    case DType::Q4_0: return sizeof(BlockQ4_0);
    case DType::Q4_1: return sizeof(BlockQ4_1);
    case DType::Q5_0: return sizeof(BlockQ5_0);
    case DType::Q5_1: return sizeof(BlockQ5_1);
    case DType::Q2_K: return sizeof(BlockQ2_K);
    case DType::Q3_K: return sizeof(BlockQ3_K);
    case DType::Q4_K: return sizeof(BlockQ4_K);
    case DType::Q5_K: return sizeof(BlockQ5_K);
    case DType::Q6_K: return sizeof(BlockQ6_K);
    case DType::IQ4_NL: return sizeof(BlockIQ4_NL);
    case DType::IQ4_XS: return sizeof(BlockIQ4_XS);
  }
  return 0;
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::F16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; i++) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::BF16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    default: {  // quantized: the blocks as the int8 kernels see them (same values)
      Quants32 b;
      const bool min = dtype_has_min(t);
      for (int64_t i = 0; i < n / kQ8Block; i++) {
        block32(t, src, i, b);
        float* y = dst + i * kQ8Block;
        for (int j = 0; j < kQ8Block; j++) y[j] = min ? b.d[j / 16] * static_cast<float>(b.q[j]) + b.m[j / 16]
                                                      : b.d[j / 16] * static_cast<float>(b.q[j]);
      }
      return;
    }
  }
}

void quantize_row(DType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case DType::F32: std::memcpy(dst, src, static_cast<size_t>(n) * 4); return;
    case DType::F16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; i++) d[i] = f32_to_f16(src[i]);
      return;
    }
    case DType::BF16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; i++) d[i] = f32_to_bf16(src[i]);
      return;
    }
    case DType::Q8_0: {
      auto* b = static_cast<BlockQ8_0*>(dst);
      for (int64_t i = 0; i < n / kQ8Block; i++) {
        const float* x = src + i * kQ8Block;
        float amax = 0.0f;
        for (int j = 0; j < kQ8Block; j++) amax = std::max(amax, std::fabs(x[j]));
        float d = amax / 127.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = f32_to_f16(d);
        for (int j = 0; j < kQ8Block; j++) b[i].qs[j] = static_cast<int8_t>(std::lround(x[j] * id));
      }
      return;
    }
    case DType::Q4_0: {
      auto* b = static_cast<BlockQ4_0*>(dst);
      for (int64_t i = 0; i < n / kQ8Block; i++) {
        const float* x = src + i * kQ8Block;
        float amax = 0.0f, m = 0.0f;  // the value of largest magnitude, with its sign
        for (int j = 0; j < kQ8Block; j++)
          if (std::fabs(x[j]) > amax) amax = std::fabs(x[j]), m = x[j];
        const float d = m / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = f32_to_f16(d);
        auto q = [&](float v) { return static_cast<uint8_t>(std::min(15, static_cast<int>(v * id + 8.5f))); };
        for (int j = 0; j < kQ8Block / 2; j++)
          b[i].qs[j] = static_cast<uint8_t>(q(x[j]) | (q(x[j + kQ8Block / 2]) << 4));
      }
      return;
    }
    default: return quantize_row_other(t, src, dst, n);
  }
}

}  // namespace jf
