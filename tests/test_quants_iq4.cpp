// IQ4_NL and IQ4_XS against their GGML layouts: hand-built blocks decoded with the spec's formulas written
// out here (every index in both nibbles, every 6-bit sub-block scale in every position), blocks the
// reference quantizer must reproduce exactly, and its error against Q4_0's on random rows.
#include <cmath>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "kernels/dtype.h"
#include "test_support.h"

namespace jf {
namespace {

// GGML's non-linear 4-bit table, written out again here rather than read from the code under test.
const int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

TEST(Iq4, NlBlocksDecodeEveryIndexInBothNibbles) {
  for (int lo = 0; lo < 16; lo++)
    for (int hi = 0; hi < 16; hi++) {
      BlockIQ4_NL b;
      b.d = f32_to_f16(-0.0371f);
      for (int j = 0; j < 16; j++) b.qs[j] = static_cast<uint8_t>(((lo + j) % 16) | (((hi + 3 * j) % 16) << 4));
      std::vector<float> y(32);
      dequantize_row(DType::IQ4_NL, &b, y.data(), 32);
      const float d = f16_to_f32(b.d);
      for (int j = 0; j < 16; j++) {
        ASSERT_EQ(y[j], d * kTable[(lo + j) % 16]) << j;  // low nibble: weight j
        ASSERT_EQ(y[j + 16], d * kTable[(hi + 3 * j) % 16]) << j;  // high nibble: weight j + 16
      }
    }
}

// Sub-block j's 6-bit scale ls: low 4 bits in scales_l[j / 2] (low nibble for even j), top 2 bits at bits
// 2j of scales_h; weight = (d * (ls - 32)) * table[index].
TEST(Iq4, XsBlocksDecodeEverySubBlockScaleInEveryPosition) {
  Rng r(7);
  for (int ls = 0; ls < 64; ls++)
    for (int j = 0; j < 8; j++) {
      BlockIQ4_XS b;
      b.d = f32_to_f16(0.00417f);
      for (auto& q : b.qs) q = static_cast<uint8_t>(r.next_u32() >> 24);
      // Every other sub-block gets a different scale, so a misplaced bit shows.
      int scales[8];
      for (int k = 0; k < 8; k++) scales[k] = k == j ? ls : (ls + 17 * (k + 1)) % 64;
      std::memset(b.scales_l, 0, sizeof(b.scales_l));
      b.scales_h = 0;
      for (int k = 0; k < 8; k++) {
        b.scales_l[k / 2] |= static_cast<uint8_t>((scales[k] & 0xF) << (k % 2 == 0 ? 0 : 4));
        b.scales_h |= static_cast<uint16_t>((scales[k] >> 4) << (2 * k));
      }
      std::vector<float> y(kQK);
      dequantize_row(DType::IQ4_XS, &b, y.data(), kQK);
      const float d = f16_to_f32(b.d);
      for (int k = 0; k < 8; k++) {
        const float dl = d * static_cast<float>(scales[k] - 32);
        for (int i = 0; i < 16; i++) {
          ASSERT_EQ(y[32 * k + i], dl * kTable[b.qs[16 * k + i] & 0xF]) << "ls " << ls << " j " << j << " k " << k;
          ASSERT_EQ(y[32 * k + i + 16], dl * kTable[b.qs[16 * k + i] >> 4]);
        }
      }
    }
}

// Blocks that are exactly table values times a power-of-two scale come back exactly: the scale search
// finds the scale and the indices (IQ4_XS: sub-block scales that are multiples of d = -max scale / 32).
TEST(Iq4, QuantizerReproducesRepresentableBlocks) {
  Rng r(11);
  std::vector<float> x(kQK), back(kQK);
  std::vector<uint8_t> bytes(dtype_row_bytes(DType::IQ4_NL, kQK));  // (IQ4_XS's row is smaller)
  for (int trial = 0; trial < 20; trial++) {
    const float s = std::ldexp(1.0f, -3 - trial % 5);
    for (int b = 0; b < 8; b++) {
      // every index once per block, and the extreme -127 at least once (it sets the search's start)
      for (int i = 0; i < 32; i++) x[32 * b + i] = s * kTable[(i + b + trial) % 16];
    }
    quantize_row(DType::IQ4_NL, x.data(), bytes.data(), kQK);
    dequantize_row(DType::IQ4_NL, bytes.data(), back.data(), kQK);
    ASSERT_EQ(back, x) << "IQ4_NL trial " << trial;
    // IQ4_XS: sub-block b scaled by S * k_b / 32 (k_b in 1..32, the largest 32).
    const float S = std::ldexp(1.0f, -1 - trial % 4);
    for (int b = 0; b < 8; b++) {
      const int k = b == trial % 8 ? 32 : 1 + (7 * b + trial) % 31;
      for (int i = 0; i < 32; i++) x[32 * b + i] = S * static_cast<float>(k) / 32 * kTable[(i + 3 * b) % 16];
    }
    quantize_row(DType::IQ4_XS, x.data(), bytes.data(), kQK);
    dequantize_row(DType::IQ4_XS, bytes.data(), back.data(), kQK);
    ASSERT_EQ(back, x) << "IQ4_XS trial " << trial;
    const auto& blk = *reinterpret_cast<const BlockIQ4_XS*>(bytes.data());
    EXPECT_EQ(f16_to_f32(blk.d), -S / 32);  // d = -(largest sub-block scale) / 32
  }
  // An all-zero block: scale 0, every index the table's value nearest 0 (index 8, value 1).
  std::fill(x.begin(), x.end(), 0.0f);
  quantize_row(DType::IQ4_NL, x.data(), bytes.data(), 32);
  const auto& nl = *reinterpret_cast<const BlockIQ4_NL*>(bytes.data());
  EXPECT_EQ(f16_to_f32(nl.d), 0.0f);
  for (int j = 0; j < 16; j++) EXPECT_EQ(nl.qs[j], 0x88);
}

// The non-linear table fits bell-shaped weights better than Q4_0's uniform grid at the same 4.5 bits per
// weight; IQ4_XS (4.25 bits) stays close. Relative RMS errors on Gaussian rows.
TEST(Iq4, QuantizerErrorOnGaussianRows) {
  Rng r(3);
  const int64_t n = 256 * 64;
  std::vector<float> x(n), back(n);
  for (auto& v : x) v = r.normal();
  auto rel_rms = [&](DType t) {
    std::vector<uint8_t> bytes(dtype_row_bytes(t, n));
    quantize_row(t, x.data(), bytes.data(), n);
    dequantize_row(t, bytes.data(), back.data(), n);
    double e = 0, s = 0;
    for (int64_t i = 0; i < n; i++) e += (back[i] - x[i]) * (back[i] - x[i]), s += x[i] * x[i];
    return std::sqrt(e / s);
  };
  const double nl = rel_rms(DType::IQ4_NL), xs = rel_rms(DType::IQ4_XS), q4 = rel_rms(DType::Q4_0);
  std::printf("relative RMS error: iq4_nl %.4f, iq4_xs %.4f, q4_0 %.4f\n", nl, xs, q4);
  EXPECT_LT(nl, 0.95 * q4);
  EXPECT_LT(xs, 1.05 * nl);
  EXPECT_LT(nl, 0.12);
}

}  // namespace
}  // namespace jf
