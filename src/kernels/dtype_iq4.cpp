// IQ4_NL and IQ4_XS: their blocks as the int8 kernels see them (table values with one fp32 scale per 32,
// so they run Q8_0's kernels) and GGML's reference quantizer without importance matrix, restated from the
// format's published algorithm (a scale search over 15 candidates per block of 32, then IQ4_XS's 6-bit
// sub-block scales under one fp16 d). The build has -ffp-contract=off: products and sums round as written.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/dtype.h"

namespace jf {

namespace {

// Index of the table value nearest to x (ties to the lower one's upper neighbour, as the reference).
int best_index(float x) {
  if (x <= kIq4Values[0]) return 0;
  if (x >= kIq4Values[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < kIq4Values[mid]) hi = mid;
    else lo = mid;
  }
  return x - kIq4Values[hi - 1] < kIq4Values[hi] - x ? hi - 1 : hi;
}

// The weighted least-squares scale of a block of 32 (weights x^2) after trying 15 inverse scales around
// -127 / max; 0 for an all-(near-)zero block.
float best_scale(const float* x) {
  constexpr int kTries = 7;
  float weight[kQ8Block];
  for (int j = 0; j < kQ8Block; j++) weight[j] = x[j] * x[j];
  float amax = 0, max = 0;
  for (int j = 0; j < kQ8Block; j++) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) amax = ax, max = x[j];
  }
  if (amax < 1e-15f) return 0.0f;
  float id = 1 / (-max / kIq4Values[0]);
  float sumqx = 0, sumq2 = 0;
  for (int j = 0; j < kQ8Block; j++) {
    const float q = kIq4Values[best_index(id * x[j])];
    sumqx += weight[j] * q * x[j];
    sumq2 += weight[j] * q * q;
  }
  float d = sumqx / sumq2;
  float best = d * sumqx;
  for (int t = -kTries; t <= kTries; t++) {
    id = (t + kIq4Values[0]) / max;
    sumqx = sumq2 = 0;
    for (int j = 0; j < kQ8Block; j++) {
      const float q = kIq4Values[best_index(id * x[j])];
      sumqx += weight[j] * q * x[j];
      sumq2 += weight[j] * q * q;
    }
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) d = sumqx / sumq2, best = d * sumqx;
  }
  return d;
}

// 32 indices for the values x * inverse_scale, packed as nibbles (byte j: j low, j + 16 high).
void pack_indices(const float* x, float inverse_scale, uint8_t* qs) {
  for (int j = 0; j < 16; j++)
    qs[j] = static_cast<uint8_t>(best_index(inverse_scale * x[j]) | (best_index(inverse_scale * x[j + 16]) << 4));
}

void quantize_iq4_xs_block(const float* x, BlockIQ4_XS& y) {
  float scales[kQK / kQ8Block];
  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < kQK / kQ8Block; ib++) {
    scales[ib] = best_scale(x + ib * kQ8Block);
    if (std::fabs(scales[ib]) > amax_scale) amax_scale = std::fabs(scales[ib]), max_scale = scales[ib];
  }
  const float d = -max_scale / 32;
  y.d = f32_to_f16(d);
  y.scales_h = 0;
  std::memset(y.scales_l, 0, sizeof(y.scales_l));
  const float id = d ? 1 / d : 0.0f;
  for (int ib = 0; ib < kQK / kQ8Block; ib++) {
    const int l = std::max(-32, std::min(31, nearest_int(id * scales[ib])));
    const float dl = d * l;
    pack_indices(x + ib * kQ8Block, dl ? 1 / dl : 0.0f, y.qs + ib * 16);
    const int u = l + 32;
    y.scales_l[ib / 2] |= static_cast<uint8_t>((u & 0xF) << (4 * (ib % 2)));
    y.scales_h |= static_cast<uint16_t>((u >> 4) << (2 * ib));
  }
}

}  // namespace

void iq4_block32(DType t, const void* row, int64_t b, Quants32& out) {
  const uint8_t* qs;
  if (t == DType::IQ4_NL) {
    const auto& blk = static_cast<const BlockIQ4_NL*>(row)[b];
    out.d[0] = f16_to_f32(blk.d);
    qs = blk.qs;
  } else {
    const auto& blk = static_cast<const BlockIQ4_XS*>(row)[b / 8];
    const int j = static_cast<int>(b % 8);
    const int ls = ((blk.scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | (((blk.scales_h >> (2 * j)) & 3) << 4);
    out.d[0] = f16_to_f32(blk.d) * static_cast<float>(ls - 32);
    qs = blk.qs + 16 * j;
  }
  for (int j = 0; j < 16; j++) {
    out.q[j] = kIq4Values[qs[j] & 0xF];
    out.q[j + 16] = kIq4Values[qs[j] >> 4];
  }
}

void quantize_row_iq4(DType t, const float* src, void* dst, int64_t n) {
  if (t == DType::IQ4_NL) {
    for (int64_t i = 0; i < n / kQ8Block; i++) {
      auto& y = static_cast<BlockIQ4_NL*>(dst)[i];
      const float d = best_scale(src + i * kQ8Block);
      y.d = f32_to_f16(d);
      pack_indices(src + i * kQ8Block, d ? 1 / d : 0.0f, y.qs);  // from the fp32 scale, as the reference
    }
    return;
  }
  for (int64_t i = 0; i < n / kQK; i++) quantize_iq4_xs_block(src + i * kQK, static_cast<BlockIQ4_XS*>(dst)[i]);
}

}  // namespace jf
