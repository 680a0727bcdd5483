// Q2_K and Q3_K against their GGML layouts: hand-built blocks decoded with the spec's formulas written out
// here (every scale byte / every 6-bit scale in every position, every high-bit pattern), and the reference
// quantizers' error on random rows.
#include <cmath>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "kernels/dtype.h"
#include "test_support.h"

namespace jf {
namespace {

uint8_t byte_of(Rng& r) { return static_cast<uint8_t>(r.next_u32() >> 24); }

// The spec's reading of both: halves n of 128, steps j of 32 weights at bits 2j of qs[32n + l]; weights
// l < 16 of a step use sub-block 8n + 2j, the rest 8n + 2j + 1; Q3_K's third bit of weight (n, j, l) is
// bit 4n + j of hmask[l], and a clear bit subtracts 4.
std::vector<float> spec_q2k(const BlockQ2_K& b) {
  std::vector<float> y(kQK);
  const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
  for (int n = 0; n < 2; n++)
    for (int j = 0; j < 4; j++)
      for (int l = 0; l < 32; l++) {
        const uint8_t s = b.scales[8 * n + 2 * j + l / 16];
        const float dl = d * (s & 0xF), ml = dmin * (s >> 4);
        y[128 * n + 32 * j + l] = dl * ((b.qs[32 * n + l] >> (2 * j)) & 3) - ml;
      }
  return y;
}

std::vector<float> spec_q3k(const BlockQ3_K& b, const int* sc) {
  std::vector<float> y(kQK);
  const float d = f16_to_f32(b.d);
  for (int n = 0; n < 2; n++)
    for (int j = 0; j < 4; j++)
      for (int l = 0; l < 32; l++) {
        const float dl = d * (sc[8 * n + 2 * j + l / 16] - 32);
        const int low = (b.qs[32 * n + l] >> (2 * j)) & 3, high = (b.hmask[l] >> (4 * n + j)) & 1;
        y[128 * n + 32 * j + l] = dl * (low - (high ? 0 : 4));
      }
  return y;
}

// Q3_K's 16 6-bit scales (stored + 32) into 12 bytes: bits 0-3 of scale j in the low nibble of byte j
// (j < 8) or the high nibble of byte j - 8, bits 4-5 at bits 2 (j / 4) of byte 8 + j % 4.
void pack_q3k_scales(const int* sc, uint8_t* q) {
  std::memset(q, 0, 12);
  for (int j = 0; j < 16; j++) {
    q[j % 8] |= static_cast<uint8_t>((sc[j] & 0xF) << (j < 8 ? 0 : 4));
    q[8 + j % 4] |= static_cast<uint8_t>((sc[j] >> 4) << (2 * (j / 4)));
  }
}

TEST(LowBitKQuants, Q2KEveryScaleByteAndQuant) {
  Rng r(21);
  for (int v = 0; v < 16; v++) {  // 16 x 16 positions: every scale/min byte in every 16th position
    BlockQ2_K b{};
    b.d = f32_to_f16(0.5f + v * 0.01f);
    b.dmin = f32_to_f16(0.25f - v * 0.005f);
    for (int i = 0; i < 16; i++) b.scales[i] = static_cast<uint8_t>(v * 16 + (i * 5 + v) % 16);
    for (int i = 0; i < 64; i++) b.qs[i] = v < 4 ? static_cast<uint8_t>(0x55 * v) : byte_of(r);
    std::vector<float> got(kQK);
    dequantize_row(DType::Q2_K, &b, got.data(), kQK);
    const auto want = spec_q2k(b);
    for (int i = 0; i < kQK; i++) ASSERT_EQ(got[i], want[i]) << "v=" << v << " i=" << i;
  }
}

TEST(LowBitKQuants, Q3KEveryScaleInEveryPositionAndHighBits) {
  Rng r(22);
  for (int v = 0; v < 64; v++) {
    int sc[16];
    for (int j = 0; j < 16; j++) sc[j] = (v + 7 * j) % 64;  // over v: every value in every position
    BlockQ3_K b{};
    b.d = f32_to_f16(0.125f + v * 0.002f);
    pack_q3k_scales(sc, b.scales);
    for (int j = 0; j < 16; j++) ASSERT_EQ(q3k_scale(b.scales, j), sc[j] - 32) << "v=" << v << " j=" << j;
    for (int i = 0; i < 64; i++) b.qs[i] = byte_of(r);
    for (int i = 0; i < 32; i++)
      b.hmask[i] = v == 0 ? 0 : v == 1 ? 0xFF : v < 10 ? static_cast<uint8_t>(1u << (v - 2)) : byte_of(r);
    std::vector<float> got(kQK);
    dequantize_row(DType::Q3_K, &b, got.data(), kQK);
    const auto want = spec_q3k(b, sc);
    for (int i = 0; i < kQK; i++) ASSERT_EQ(got[i], want[i]) << "v=" << v << " i=" << i;
  }
}

// The reference quantizers: every weight within its sub-block of 16's step (a step is the range / 3 for
// Q2_K's unsigned levels 0..3, max|x| / 4 for Q3_K's -4..3), a small rms error, zero rows stay zero.
TEST(LowBitKQuants, QuantizerErrorWithinTheFormatsStep) {
  struct Case {
    DType t;
    double worst, rms;  // max |error| / the sub-block's step; rms error of unit-variance input
  };
  for (Case c : {Case{DType::Q2_K, 1.0, 0.45}, Case{DType::Q3_K, 1.0, 0.25}}) {
    SCOPED_TRACE(dtype_name(c.t));
    const int64_t n = 4096;
    Rng r(23);
    std::vector<float> x(n);
    for (float& v : x) v = r.normal();
    std::vector<uint8_t> q(dtype_row_bytes(c.t, n));
    quantize_row(c.t, x.data(), q.data(), n);
    std::vector<float> back(n);
    dequantize_row(c.t, q.data(), back.data(), n);
    double worst = 0, sum_sq = 0;
    for (int64_t s = 0; s < n / 16; s++) {
      float lo = 0, hi = 0, amax = 0;  // Q2_K's min is at most 0
      for (int i = 0; i < 16; i++) {
        const float xi = x[16 * s + i];
        lo = std::min(lo, xi), hi = std::max(hi, xi), amax = std::max(amax, std::fabs(xi));
      }
      const double step = c.t == DType::Q2_K ? (hi - lo) / 3.0 : amax / 4.0;
      for (int i = 0; i < 16; i++) {
        const double e = std::fabs(double(back[16 * s + i]) - x[16 * s + i]);
        worst = std::max(worst, e / step);
        sum_sq += e * e;
      }
    }
    EXPECT_LT(worst, c.worst);
    EXPECT_LT(std::sqrt(sum_sq / n), c.rms);
    std::vector<float> zero(n, 0.0f), z(n, 1.0f);
    quantize_row(c.t, zero.data(), q.data(), n);
    dequantize_row(c.t, q.data(), z.data(), n);
    for (float v : z) ASSERT_EQ(v, 0.0f);
  }
}

}  // namespace
}  // namespace jf
