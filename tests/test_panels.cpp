// The quantized panel layout (kernels/matmul.h) on its own: the bytes each type's panels stream per
// weight, every quant of a block read back from the documented places (nibbles, crumbs and high-bit
// planes), and the kernels over raw blocks of arbitrary bits giving the scalar chain's bits on every
// instruction set.
#include <array>
#include <cstddef>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "kernels/cpu.h"
#include "kernels/matmul.h"
#include "test_support.h"

namespace jf {
namespace {

const DType kQuantTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0,   DType::Q5_1,  DType::Q2_K,
                             DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};

// Rows of arbitrary bytes (every quant and high-bit pattern, every scale byte), with each fp16 scale
// replaced by a small finite value so no output overflows.
std::vector<uint8_t> raw_rows(DType t, int64_t N, int64_t K, uint64_t seed) {
  Rng r(seed);
  std::vector<uint8_t> bytes(dtype_row_bytes(t, K) * N);
  for (auto& b : bytes) b = static_cast<uint8_t>(r.next_u32() >> 24);
  const size_t bb = dtype_block_bytes(t);
  for (size_t at = 0; at < bytes.size(); at += bb) {
    auto set_f16 = [&](size_t off) {
      const uint16_t h = f32_to_f16(0.001f + 0.01f * r.uniform());
      std::memcpy(&bytes[at + off], &h, 2);
    };
    if (t == DType::Q6_K) {
      set_f16(offsetof(BlockQ6_K, d));
    } else if (t == DType::Q3_K) {
      set_f16(offsetof(BlockQ3_K, d));
    } else if (t == DType::Q2_K) {
      set_f16(offsetof(BlockQ2_K, d));
      set_f16(offsetof(BlockQ2_K, dmin));
    } else {
      set_f16(0);  // d first in every other block
      if (dtype_has_min(t)) set_f16(2);  // m, or the K-quants' dmin
    }
  }
  return bytes;
}

struct Matrix {
  std::vector<uint8_t> bytes;
  PageBuffer packed;
  WeightMatrix w;
};

Matrix packed_matrix(DType t, int64_t N, int64_t K, uint64_t seed) {
  Matrix m;
  m.bytes = raw_rows(t, N, K, seed);
  m.w = WeightMatrix{t, m.bytes.data(), N, K};
  m.packed = pack_panels(m.w, t);
  m.w.packed = m.packed.data();
  m.w.packed_type = t;
  return m;
}

// Panels stream about the file's bytes: exact sizes per weight (per block of 32 positions and 8 outputs:
// the scales and quants, K-quants plus a header of fp32 d (and -dmin) per 256 positions).
TEST(QuantPanels, BytesPerWeight) {
  const int64_t N = 64, K = 2048;
  struct Expect {
    DType t;
    double panel, file;  // bytes per weight
  };
  const Expect expect[] = {
      {DType::Q8_0, (32 + 256) / 256.0, 34 / 32.0},
      {DType::Q4_0, (32 + 128) / 256.0, 18 / 32.0},
      {DType::Q4_1, (64 + 128) / 256.0, 20 / 32.0},
      {DType::Q5_0, (32 + 128 + 32) / 256.0, 22 / 32.0},  // nibbles + a plane of fifth bits
      {DType::Q5_1, (64 + 128 + 32) / 256.0, 24 / 32.0},
      {DType::Q2_K, (64 + 8 * (16 + 64)) / 2048.0, 84 / 256.0},  // 2 scale | min << 4 bytes, crumbs per block
      {DType::Q3_K, (32 + 8 * (16 + 64 + 32)) / 2048.0, 110 / 256.0},  // crumbs + a plane of third bits
      {DType::Q4_K, (64 + 8 * (16 + 128)) / 2048.0, 144 / 256.0},
      {DType::Q5_K, (64 + 8 * (16 + 128 + 32)) / 2048.0, 176 / 256.0},
      {DType::Q6_K, (32 + 8 * (16 + 128 + 64)) / 2048.0, 210 / 256.0},  // two planes
      {DType::IQ4_NL, (32 + 128) / 256.0, 18 / 32.0},  // fp32 scales + the table indices as nibbles
      {DType::IQ4_XS, (32 + 128) / 256.0, 136 / 256.0},
  };
  for (const Expect& e : expect) {
    SCOPED_TRACE(dtype_name(e.t));
    Matrix m = packed_matrix(e.t, N, K, 1);
    EXPECT_EQ(read_bytes(m.w), size_t(e.panel * N * K));
    EXPECT_EQ(m.w.row_bytes() * N, size_t(e.file * N * K));
  }
  // The K-quants' panels: within 5% of the file (Q5_K 0.719 vs 0.6875, Q6_K 0.828 vs 0.820, Q4_K 0.594 vs
  // 0.5625, Q2_K 0.344 vs 0.328, Q3_K 0.453 vs 0.430 bytes per weight).
  for (DType t : {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    Matrix m = packed_matrix(t, N, K, 2);
    EXPECT_LE(double(read_bytes(m.w)), 1.06 * double(m.w.row_bytes() * N)) << dtype_name(t);
  }
}

// Output c's quant k of block b read back from the panel as matmul.h documents it: bytes q + 128, or
// nibbles (pair k / 8, even groups low) plus the high bits of the pair's plane and slot, minus the offset.
int panel_quant(DType t, const uint8_t* panel, int64_t b, int c, int k) {
  const uint8_t* quants = panel + panel_block_offset(t, b) + panel_quants_offset(t);
  const int g = k / 4, at = 4 * c + k % 4;
  if (!panel_nibbles(t)) return int(quants[g * 32 + at]) - 128;
  if (panel_crumbs(t)) {  // quad g / 4 at bits 2 (g % 4); Q3_K's third bit at bit g of its plane
    int u = (quants[g / 4 * 32 + at] >> (2 * (g % 4))) & 3;
    if (panel_high_bits(t) > 0) u |= ((quants[kPanelCrumbBytes + at] >> g) & 1) << 2;
    return u - panel_nibble_offset(t);
  }
  const int pair = g / 2;
  int u = (quants[pair * 32 + at] >> (4 * (g % 2))) & 0xF;
  if (const int bits = panel_high_bits(t); bits > 0) {
    const int per_plane = 4 / bits, slot = pair % per_plane;
    const uint8_t plane = quants[kPanelNibbleBytes + (pair / per_plane) * kPanelPlaneBytes + at];
    u |= ((plane >> (bits * slot + (g % 2 == 0 ? 4 : 0))) & ((1 << bits) - 1)) << 4;
  }
  if (panel_table(t)) return kIq4Values[u];  // IQ4: a table index
  return u - panel_nibble_offset(t);
}

TEST(QuantPanels, EveryQuantWhereTheLayoutSays) {
  for (DType t : kQuantTypes) {
    SCOPED_TRACE(dtype_name(t));
    const int64_t N = 21, K = 512;  // a partly padded last panel
    Matrix m = packed_matrix(t, N, K, 3);
    const size_t ps = panel_bytes(t, K);
    for (int64_t n = 0; n < N; n++) {
      const uint8_t* panel = m.packed.data() + (n / kPanel) * ps;
      for (int64_t b = 0; b < K / kQ8Block; b++) {
        Quants32 q;
        block32(t, m.w.row(n), b, q);
        for (int k = 0; k < kQ8Block; k++)
          ASSERT_EQ(panel_quant(t, panel, b, int(n % kPanel), k), q.q[k]) << "n=" << n << " b=" << b << " k=" << k;
      }
    }
    for (int64_t n = N; n < (N + kPanel - 1) / kPanel * kPanel; n++)  // padding: all-zero quants' bytes
      for (int64_t b = 0; b < K / kQ8Block; b++)
        for (int k = 0; k < kQ8Block; k++) {
          const int v = panel_quant(t, m.packed.data() + (n / kPanel) * ps, b, int(n % kPanel), k);
          ASSERT_EQ(v, panel_table(t) ? kIq4Values[0] : panel_nibbles(t) ? -panel_nibble_offset(t) : -128) << "n=" << n;
        }
  }
}

// Raw blocks of arbitrary bits (every nibble and high-bit pattern, every scale byte incl. Q6_K's -128):
// every instruction set's panels give the bits of the scalar kernel (the int8 chain over block32, which
// test_kernels checks against the written-out chain).
TEST(QuantPanels, ArbitraryBlocksSameBitsOnEveryInstructionSet) {
  const Isa saved = active_isa();
  const bool vnni = has_avx512_vnni();
  for (DType t : kQuantTypes) {
    SCOPED_TRACE(dtype_name(t));
    const int64_t N = 40, K = 768, M = 11;
    Matrix m = packed_matrix(t, N, K, 5);
    Rng r(9);
    std::vector<float> x(size_t(M * K));
    for (float& v : x) v = r.normal();
    std::vector<float> want(size_t(M * N));
    set_active_isa(Isa::Scalar);
    matmul(x.data(), M, m.w, want.data());
    for (int c = 0; c < 4; c++) {  // the last: AVX-512 without VNNI (its integer tiles are AVX2's)
      const Isa isa = std::array{Isa::Avx2, Isa::Avx2Vnni, Isa::Avx512, Isa::Avx512}[c];
      if (!isa_supported(isa) || (c == 2 && !vnni)) {
        std::printf("SKIPPED: CPU lacks %s%s\n", isa_name(isa).c_str(), c == 2 ? " VNNI" : "");
        continue;
      }
      set_active_isa(isa);
      set_avx512_vnni(c == 3 ? false : vnni);
      for (int64_t rows : {int64_t(1), int64_t(3), M}) {
        std::vector<float> y(size_t(rows * N));
        matmul(x.data(), rows, m.w, y.data());
        for (int64_t i = 0; i < rows * N; i++)
          ASSERT_EQ(y[i], want[i]) << isa_name(isa) << " rows=" << rows << " i=" << i;
      }
      set_avx512_vnni(vnni);
    }
  }
  set_active_isa(saved);
}

}  // namespace
}  // namespace jf
