// The legacy (Q4_1, Q5_0, Q5_1) and K-quant (Q4_K, Q5_K, Q6_K) types against their GGML layouts: hand-built
// blocks decoded with the spec's formulas written out here (every 6-bit scale and min in every position,
// every high-bit pattern), the reference quantizers' properties, and the int8 kernels' chain.
#include <cmath>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "kernels/dtype.h"
#include "test_support.h"

namespace jf {
namespace {

uint8_t byte_of(Rng& r) { return static_cast<uint8_t>(r.next_u32() >> 24); }

// Writes 6-bit scales sc[8] and mins m[8] into 12 bytes, the inverse of the spec's reading rule.
void pack_scales(const uint8_t* sc, const uint8_t* m, uint8_t* q) {
  std::memset(q, 0, 12);
  for (int j = 0; j < 4; j++) {
    q[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    q[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    q[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

// Q4_K / Q5_K as the spec reads them: chunk c of 64 weights reads qs[32c ..]; low nibbles are sub-block 2c
// with (Q5_K) bit 2c of qh[l], high nibbles sub-block 2c + 1 with bit 2c + 1.
template <class B>
std::vector<float> spec_k45(const B& b, const uint8_t* sc, const uint8_t* m, const uint8_t* qh) {
  std::vector<float> y(kQK);
  const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
  for (int c = 0; c < 4; c++)
    for (int half = 0; half < 2; half++) {
      const int j = 2 * c + half;
      const float d1 = d * sc[j], m1 = dmin * m[j];
      for (int l = 0; l < 32; l++) {
        int q = half ? b.qs[32 * c + l] >> 4 : b.qs[32 * c + l] & 0xF;
        if (qh && ((qh[l] >> j) & 1)) q += 16;
        y[64 * c + 32 * half + l] = d1 * q - m1;
      }
    }
  return y;
}

TEST(KQuants, Q4KAndQ5KEveryScaleAndMinInEveryPosition) {
  Rng r(5);
  for (int v = 0; v < 64; v++) {
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; j++) {
      sc[j] = static_cast<uint8_t>((v + 7 * j) % 64);  // over v: every value in every position
      m[j] = static_cast<uint8_t>((5 * v + 3 * j) % 64);
    }
    BlockQ4_K b4{};
    BlockQ5_K b5{};
    b4.d = b5.d = f32_to_f16(0.75f + v * 0.01f);
    b4.dmin = b5.dmin = f32_to_f16(0.5f - v * 0.003f);
    pack_scales(sc, m, b4.scales);
    std::memcpy(b5.scales, b4.scales, 12);
    for (int j = 0; j < 8; j++) {
      uint8_t s, mm;
      kquant_scale_min(b4.scales, j, &s, &mm);
      ASSERT_EQ(s, sc[j]) << "v=" << v << " j=" << j;
      ASSERT_EQ(mm, m[j]) << "v=" << v << " j=" << j;
    }
    for (int i = 0; i < 128; i++) b4.qs[i] = b5.qs[i] = byte_of(r);
    for (int i = 0; i < 32; i++) b5.qh[i] = static_cast<uint8_t>(v % 2 ? byte_of(r) : (1u << (i % 8)) | (v << 2));
    std::vector<float> got(kQK);
    dequantize_row(DType::Q4_K, &b4, got.data(), kQK);
    std::vector<float> want = spec_k45(b4, sc, m, nullptr);
    for (int i = 0; i < kQK; i++) ASSERT_EQ(got[i], want[i]) << "Q4_K v=" << v << " i=" << i;
    dequantize_row(DType::Q5_K, &b5, got.data(), kQK);
    want = spec_k45(b5, sc, m, b5.qh);
    for (int i = 0; i < kQK; i++) ASSERT_EQ(got[i], want[i]) << "Q5_K v=" << v << " i=" << i;
  }
}

TEST(KQuants, Q6KEveryScaleAndHighBits) {
  Rng r(6);
  for (int v = 0; v < 16; v++) {  // scales: 16 x 16 positions cover all 256 int8 values
    BlockQ6_K b{};
    b.d = f32_to_f16(0.01f + v * 0.001f);
    for (int i = 0; i < 16; i++) b.scales[i] = static_cast<int8_t>(v * 16 + i - 128);
    for (int i = 0; i < 128; i++) b.ql[i] = static_cast<uint8_t>(i * 37 + v);  // every low nibble
    for (int i = 0; i < 64; i++) b.qh[i] = v < 4 ? static_cast<uint8_t>(0x55 * v) : byte_of(r);
    const float d = f16_to_f32(b.d);
    std::vector<float> want(kQK), got(kQK);
    for (int h = 0; h < 2; h++) {
      const uint8_t* ql = b.ql + 64 * h;
      const uint8_t* qh = b.qh + 32 * h;
      const int8_t* s = b.scales + 8 * h;
      float* y = want.data() + 128 * h;
      for (int l = 0; l < 32; l++) {
        const int is = l / 16;
        y[l] = d * s[is] * (((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32);
        y[l + 32] = d * s[is + 2] * (((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32);
        y[l + 64] = d * s[is + 4] * ((ql[l] >> 4 | ((qh[l] >> 4) & 3) << 4) - 32);
        y[l + 96] = d * s[is + 6] * ((ql[l + 32] >> 4 | ((qh[l] >> 6) & 3) << 4) - 32);
      }
    }
    dequantize_row(DType::Q6_K, &b, got.data(), kQK);
    for (int i = 0; i < kQK; i++) ASSERT_EQ(got[i], want[i]) << "v=" << v << " i=" << i;
  }
}

TEST(LegacyQuants, Q4_1Q5_0Q5_1Layouts) {
  Rng r(7);
  for (int v = 0; v < 8; v++) {
    const uint32_t qh = v == 0 ? 0u : v == 1 ? 0xFFFFFFFFu : v == 2 ? 0x0000FFFFu : r.next_u32();
    BlockQ4_1 a{};
    BlockQ5_0 b{};
    BlockQ5_1 c{};
    a.d = b.d = c.d = f32_to_f16(0.3f + v * 0.1f);
    a.m = c.m = f32_to_f16(-1.25f + v * 0.2f);
    for (int j = 0; j < 16; j++) a.qs[j] = b.qs[j] = c.qs[j] = static_cast<uint8_t>(j * 17 + v * 3);
    std::memcpy(b.qh, &qh, 4);
    std::memcpy(c.qh, &qh, 4);
    const float d = f16_to_f32(a.d), m = f16_to_f32(a.m);
    std::vector<float> ga(32), gb(32), gc(32);
    dequantize_row(DType::Q4_1, &a, ga.data(), 32);
    dequantize_row(DType::Q5_0, &b, gb.data(), 32);
    dequantize_row(DType::Q5_1, &c, gc.data(), 32);
    for (int j = 0; j < 16; j++)
      for (int hi = 0; hi < 2; hi++) {
        const int i = j + 16 * hi;
        const int nib = hi ? a.qs[j] >> 4 : a.qs[j] & 0xF;
        const int q5 = nib | (((qh >> i) & 1) << 4);
        ASSERT_EQ(ga[i], nib * d + m) << i;
        ASSERT_EQ(gb[i], (q5 - 16) * d) << i;
        ASSERT_EQ(gc[i], q5 * d + m) << i;
      }
  }
}

std::vector<float> randn(int64_t n, uint64_t seed, float scale = 1.0f) {
  Rng r(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = r.normal() * scale;
  return v;
}

// The reference quantizers: each weight lands within its block's step of the input (the error bound of the
// format), zero rows stay zero, and quantizing the dequantized values again gives the same bytes for the
// types whose fit is a plain min/max or max|x| rule.
TEST(Quantizers, ErrorWithinTheFormatsStep) {
  struct Case {
    DType t;
    double rel;  // max |error| relative to the block's range
  };
  for (Case c : {Case{DType::Q4_1, 0.5 / 15 + 1e-3}, Case{DType::Q5_0, 0.5 / 16 + 1e-3}, Case{DType::Q5_1, 0.5 / 31 + 1e-3},
                 Case{DType::Q4_K, 1.2 / 15}, Case{DType::Q5_K, 1.2 / 31}, Case{DType::Q6_K, 1.2 / 32}}) {
    SCOPED_TRACE(dtype_name(c.t));
    const int64_t n = 1024;
    auto x = randn(n, 9);
    std::vector<uint8_t> q(dtype_row_bytes(c.t, n));
    quantize_row(c.t, x.data(), q.data(), n);
    std::vector<float> back(n);
    dequantize_row(c.t, q.data(), back.data(), n);
    const int bs = dtype_is_kquant(c.t) ? 32 : 32;
    double worst = 0, sum_sq = 0;
    for (int64_t b = 0; b < n / bs; b++) {
      float lo = x[b * bs], hi = x[b * bs];
      for (int i = 0; i < bs; i++) lo = std::min(lo, x[b * bs + i]), hi = std::max(hi, x[b * bs + i]);
      const double range = std::max(double(hi - lo), 2.0 * std::max(std::fabs(lo), std::fabs(hi)) * (c.t == DType::Q6_K || c.t == DType::Q5_0));
      for (int i = 0; i < bs; i++) {
        const double e = std::fabs(double(back[b * bs + i]) - x[b * bs + i]);
        worst = std::max(worst, e / range);
        sum_sq += e * e;
      }
    }
    EXPECT_LT(worst, c.rel);
    EXPECT_LT(std::sqrt(sum_sq / n), 0.12);  // vs unit-variance input
    std::vector<float> zero(n, 0.0f), z(n, 1.0f);
    quantize_row(c.t, zero.data(), q.data(), n);
    dequantize_row(c.t, q.data(), z.data(), n);
    for (float v : z) ASSERT_EQ(v, 0.0f);
  }
}

// Q4_K's search for a scale and min beats the plain min/max fit it starts from, and sub-blocks whose scale
// is much smaller than the super-block's keep their own resolution (6-bit scales).
TEST(Quantizers, KQuantSubBlockScales) {
  auto x = randn(kQK, 12);
  for (int i = 0; i < 32; i++) x[i] *= 0.05f;  // sub-block 0 is 20x smaller
  BlockQ4_K b{};
  quantize_row(DType::Q4_K, x.data(), &b, kQK);
  uint8_t sc0, m0, sc1, m1;
  kquant_scale_min(b.scales, 0, &sc0, &m0);
  kquant_scale_min(b.scales, 1, &sc1, &m1);
  EXPECT_LT(sc0 * 8, sc1);
  std::vector<float> back(kQK);
  dequantize_row(DType::Q4_K, &b, back.data(), kQK);
  double e0 = 0;
  for (int i = 0; i < 32; i++) e0 = std::max(e0, std::fabs(double(back[i]) - x[i]));
  EXPECT_LT(e0, 0.05 * 4.0 / 15);  // within sub-block 0's own (small) range's step
  // Q6_K: the largest scale maps to -128 or 127 (d = max_scale / -128)
  BlockQ6_K b6{};
  quantize_row(DType::Q6_K, x.data(), &b6, kQK);
  int max_abs = 0;
  for (int i = 0; i < 16; i++) max_abs = std::max(max_abs, std::abs(int(b6.scales[i])));
  EXPECT_GE(max_abs, 127);
}

// Blocks the formats represent exactly come back exactly, with the scales the reference algorithm picks:
// Q4_K / Q5_K sub-blocks of levels 0..15 (0..31) times c_j / 64 give d = 1/64, sc_j = c_j, no mins; Q6_K
// sub-blocks of -32..31 times c_j / 1024 give d = -1/1024 and sc_j = -c_j (the reference maps the largest
// scale to -128, so d is negative).
TEST(Quantizers, KQuantsReproduceRepresentableBlocks) {
  const int c[8] = {63, 1, 32, 17, 5, 44, 60, 9};
  for (DType t : {DType::Q4_K, DType::Q5_K}) {
    SCOPED_TRACE(dtype_name(t));
    const int levels = t == DType::Q4_K ? 16 : 32;
    std::vector<float> x(kQK), y(kQK);
    for (int j = 0; j < 8; j++)
      for (int l = 0; l < 32; l++) x[32 * j + l] = float((l * 7) % levels) * c[j] / 64.0f;
    std::vector<uint8_t> b(dtype_row_bytes(t, kQK));
    quantize_row(t, x.data(), b.data(), kQK);
    dequantize_row(t, b.data(), y.data(), kQK);
    EXPECT_EQ(y, x);
    uint16_t d;
    std::memcpy(&d, b.data(), 2);
    EXPECT_EQ(f16_to_f32(d), 1.0f / 64);
    for (int j = 0; j < 8; j++) {
      uint8_t sc, m;
      kquant_scale_min(b.data() + 4, j, &sc, &m);
      EXPECT_EQ(sc, c[j]) << j;
      EXPECT_EQ(m, 0) << j;
    }
  }
  const int c6[16] = {128, 1, 64, 17, 5, 100, 127, 9, 3, 77, 32, 2, 50, 90, 11, 128};
  std::vector<float> x(kQK), y(kQK);
  for (int j = 0; j < 16; j++)
    for (int l = 0; l < 16; l++) x[16 * j + l] = float((l * 5) % 64 - 32) * c6[j] / 1024.0f;
  BlockQ6_K b{};
  quantize_row(DType::Q6_K, x.data(), &b, kQK);
  dequantize_row(DType::Q6_K, &b, y.data(), kQK);
  EXPECT_EQ(y, x);
  EXPECT_EQ(f16_to_f32(b.d), -1.0f / 1024);
  for (int j = 0; j < 16; j++) EXPECT_EQ(b.scales[j], -c6[j]) << j;
}

// Hand-computed reference quantization of simple blocks (the rules of GGML's reference quantizers).
TEST(Quantizers, LegacyRulesByHand) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; i++) x[i] = static_cast<float>(i) - 8.0f;  // -8 .. 23
  BlockQ4_1 a{};
  quantize_row(DType::Q4_1, x.data(), &a, 32);
  EXPECT_EQ(f16_to_f32(a.m), -8.0f);
  EXPECT_EQ(a.d, f32_to_f16(31.0f / 15));
  BlockQ5_1 c{};
  quantize_row(DType::Q5_1, x.data(), &c, 32);
  EXPECT_EQ(f16_to_f32(c.d), 1.0f);  // range 31 over 31 steps: exact
  std::vector<float> back(32);
  dequantize_row(DType::Q5_1, &c, back.data(), 32);
  EXPECT_EQ(back, x);
  BlockQ5_0 b{};
  quantize_row(DType::Q5_0, x.data(), &b, 32);
  EXPECT_EQ(f16_to_f32(b.d), 23.0f / -16);  // the largest magnitude maps to -16
  dequantize_row(DType::Q5_0, &b, back.data(), 32);
  EXPECT_EQ(back[31], 23.0f);
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  EXPECT_EQ((qh >> 31) & 1, 0u);  // q = 0 for the largest: -16 * d
  EXPECT_EQ(b.qs[15] >> 4, 0);
}

}  // namespace
}  // namespace jf
