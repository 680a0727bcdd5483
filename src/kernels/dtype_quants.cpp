// The quantized types' blocks as the kernels see them (block32), and GGML's reference quantizers (no
// importance matrix) for Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K, restated from the format's
// published algorithm so a file jf writes is the file the reference tools write. Evaluation order matters for the
// bits: products and sums are written in the reference's order (the build has -ffp-contract=off).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "kernels/dtype.h"

namespace jf {

void iq4_block32(DType t, const void* row, int64_t b, Quants32& out);        // dtype_iq4.cpp
void quantize_row_iq4(DType t, const float* src, void* dst, int64_t n);       // dtype_iq4.cpp

namespace {

template <class B>
const B& block_at(const void* row, int64_t i) { return static_cast<const B*>(row)[i]; }

uint32_t load_qh(const uint8_t* qh) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;
}

// 32 values of a legacy block: the low nibbles are weights 0..15, the high ones 16..31, plus qh's fifth bits.
void nibbles32(const uint8_t* qs, uint32_t qh, bool five, int offset, int8_t* q) {
  for (int j = 0; j < 16; j++) {
    int lo = qs[j] & 0xF, hi = qs[j] >> 4;
    if (five) lo |= ((qh >> j) & 1) << 4, hi |= ((qh >> (j + 16)) & 1) << 4;
    q[j] = static_cast<int8_t>(lo - offset);
    q[j + 16] = static_cast<int8_t>(hi - offset);
  }
}

}  // namespace

void block32(DType t, const void* row, int64_t b, Quants32& out) {
  out.m[0] = out.m[1] = 0.0f;
  switch (t) {
    case DType::IQ4_NL:
    case DType::IQ4_XS: iq4_block32(t, row, b, out); break;
    case DType::Q8_0: {
      const auto& blk = block_at<BlockQ8_0>(row, b);
      std::memcpy(out.q, blk.qs, kQ8Block);
      out.d[0] = f16_to_f32(blk.d);
      break;
    }
    case DType::Q4_0: {
      const auto& blk = block_at<BlockQ4_0>(row, b);
      nibbles32(blk.qs, 0, false, 8, out.q);
      out.d[0] = f16_to_f32(blk.d);
      break;
    }
    case DType::Q4_1: {
      const auto& blk = block_at<BlockQ4_1>(row, b);
      nibbles32(blk.qs, 0, false, 0, out.q);
      out.d[0] = f16_to_f32(blk.d);
      out.m[0] = f16_to_f32(blk.m);
      break;
    }
    case DType::Q5_0: {
      const auto& blk = block_at<BlockQ5_0>(row, b);
      nibbles32(blk.qs, load_qh(blk.qh), true, 16, out.q);
      out.d[0] = f16_to_f32(blk.d);
      break;
    }
    case DType::Q5_1: {
      const auto& blk = block_at<BlockQ5_1>(row, b);
      nibbles32(blk.qs, load_qh(blk.qh), true, 0, out.q);
      out.d[0] = f16_to_f32(blk.d);
      out.m[0] = f16_to_f32(blk.m);
      break;
    }
    case DType::Q4_K:
    case DType::Q5_K: {
      const int64_t sb = b / 8;
      const int j = static_cast<int>(b % 8), c = j / 2, shift = 4 * (j % 2);  // chunk c, low or high nibbles
      const bool five = t == DType::Q5_K;
      const uint8_t* head = five ? reinterpret_cast<const uint8_t*>(&block_at<BlockQ5_K>(row, sb))
                                 : reinterpret_cast<const uint8_t*>(&block_at<BlockQ4_K>(row, sb));
      uint16_t d, dmin;
      std::memcpy(&d, head, 2);
      std::memcpy(&dmin, head + 2, 2);
      const uint8_t* scales = head + 4;
      const uint8_t* qs = five ? block_at<BlockQ5_K>(row, sb).qs : block_at<BlockQ4_K>(row, sb).qs;
      uint8_t sc, m;
      kquant_scale_min(scales, j, &sc, &m);
      for (int l = 0; l < 32; l++) {
        int v = (qs[32 * c + l] >> shift) & 0xF;
        if (five) v |= ((block_at<BlockQ5_K>(row, sb).qh[l] >> j) & 1) << 4;
        out.q[l] = static_cast<int8_t>(v);
      }
      out.d[0] = f16_to_f32(d) * static_cast<float>(sc);
      out.m[0] = -(f16_to_f32(dmin) * static_cast<float>(m));
      out.sd = f16_to_f32(d), out.smin = -f16_to_f32(dmin);
      out.sc[0] = out.sc[1] = static_cast<int8_t>(sc), out.sm[0] = out.sm[1] = m;
      break;
    }
    case DType::Q6_K: {
      const auto& blk = block_at<BlockQ6_K>(row, b / 8);
      const int j = static_cast<int>(b % 8), h = j / 4, part = j % 4;  // half h, quarter `part` of it
      const uint8_t* ql = blk.ql + 64 * h + 32 * (part % 2);
      const uint8_t* qh = blk.qh + 32 * h;
      const int lshift = 4 * (part / 2), hshift = 2 * part;
      for (int l = 0; l < 32; l++)
        out.q[l] = static_cast<int8_t>((((ql[l] >> lshift) & 0xF) | (((qh[l] >> hshift) & 3) << 4)) - 32);
      const float d = f16_to_f32(blk.d);
      // weights l of the quarter use scale is + 2 * part of the half, is = l / 16
      out.d[0] = d * static_cast<float>(blk.scales[8 * h + 2 * part]);
      out.d[1] = d * static_cast<float>(blk.scales[8 * h + 2 * part + 1]);
      out.sd = d;
      out.sc[0] = blk.scales[8 * h + 2 * part], out.sc[1] = blk.scales[8 * h + 2 * part + 1];
      return;
    }
    case DType::Q2_K: {
      // Block b is step j = b % 4 of half n = (b % 8) / 4: weight l is the 2 bits at 2j of qs[32n + l], its
      // halves of 16 sub-blocks 2 (b % 8) and 2 (b % 8) + 1.
      const auto& blk = block_at<BlockQ2_K>(row, b / 8);
      const int jb = static_cast<int>(b % 8), n = jb / 4, shift = 2 * (jb % 4);
      for (int l = 0; l < 32; l++) out.q[l] = static_cast<int8_t>((blk.qs[32 * n + l] >> shift) & 3);
      const float d = f16_to_f32(blk.d), dmin = f16_to_f32(blk.dmin);
      for (int h = 0; h < 2; h++) {
        const uint8_t s = blk.scales[2 * jb + h];
        out.d[h] = d * static_cast<float>(s & 0xF);
        out.m[h] = -(dmin * static_cast<float>(s >> 4));
        out.sc[h] = static_cast<int8_t>(s & 0xF), out.sm[h] = static_cast<uint8_t>(s >> 4);
      }
      out.sd = d, out.smin = -dmin;
      return;
    }
    case DType::Q3_K: {  // as Q2_K, the third bit of weight l from bit b % 8 of hmask[l]
      const auto& blk = block_at<BlockQ3_K>(row, b / 8);
      const int jb = static_cast<int>(b % 8), n = jb / 4, shift = 2 * (jb % 4);
      for (int l = 0; l < 32; l++) {
        const int low = (blk.qs[32 * n + l] >> shift) & 3, high = (blk.hmask[l] >> jb) & 1;
        out.q[l] = static_cast<int8_t>(low - (high ? 0 : 4));
      }
      const float d = f16_to_f32(blk.d);
      for (int h = 0; h < 2; h++) {
        const int sc = q3k_scale(blk.scales, 2 * jb + h);
        out.d[h] = d * static_cast<float>(sc);
        out.sc[h] = static_cast<int8_t>(sc);
      }
      out.sd = d;
      return;
    }
    default: break;
  }
  out.d[1] = out.d[0];
  out.m[1] = out.m[0];
}

namespace {

// Legacy blocks' 5-bit quants back into nibbles + qh.
void pack5(const uint8_t* L, uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; j++) {
    qs[j] = static_cast<uint8_t>((L[j] & 0x0F) | ((L[j + 16] & 0x0F) << 4));
    qh |= ((L[j] & 0x10u) >> 4) << j;
    qh |= ((L[j + 16] & 0x10u) >> 4) << (j + 16);
  }
  std::memcpy(qh_bytes, &qh, 4);
}

// Min and max of a block (the legacy types with a min).
void min_max(const float* x, float* mn, float* mx) {
  *mn = FLT_MAX;
  *mx = -FLT_MAX;
  for (int j = 0; j < kQ8Block; j++) {
    if (x[j] < *mn) *mn = x[j];
    if (x[j] > *mx) *mx = x[j];
  }
}

// Best scale and min (returned as -min) for n values in [0, nmax] under weights, searching nstep + 1
// scales around nmax / (max - min) (GGML's make_qkx2_quants; error squared, or absolute with use_mad).
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* neg_min, float rmin,
                    float rdelta, int nstep, bool use_mad = false) {
  float mn = x[0], mx = x[0];
  float sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; i++) {
    if (x[i] < mn) mn = x[i];
    if (x[i] > mx) mx = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (mn > 0) mn = 0;
  if (mx == mn) {
    std::fill(L, L + n, 0);
    *neg_min = -mn;
    return 0.0f;
  }
  float iscale = nmax / (mx - mn);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; i++) {
    const int l = nearest_int(iscale * (x[i] - mn));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + mn - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += w[i] * diff;
  }
  uint8_t aux[32];
  for (int is = 0; is <= nstep; is++) {
    iscale = (rmin + rdelta * is + nmax) / (mx - mn);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; i++) {
      const int l = std::max(0, std::min(nmax, nearest_int(iscale * (x[i] - mn))));
      aux[i] = static_cast<uint8_t>(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; i++) {
        float diff = this_scale * aux[i] + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += w[i] * diff;
      }
      if (cur_error < best_error) {
        std::copy(aux, aux + n, L);
        best_error = cur_error;
        scale = this_scale;
        mn = this_min;
      }
    }
  }
  *neg_min = -mn;
  return scale;
}

// Q4_K / Q5_K (nmax 15 / 31): sub-block scales and mins to 6 bits of d and dmin, then the quants against the
// rounded scales. Writes d, dmin, scales[12] at `head` and the quants (0..nmax) to L.
void kquant_scales_mins(const float* x, int nmax, uint8_t* head, uint8_t* L) {
  float scales[8], mins[8], weights[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; j++) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; l++) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; l++) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = nmax == 15 ? fit_scale_min(32, 15, x + 32 * j, weights, L + 32 * j, &mins[j], -1.0f, 0.1f, 20)
                           : fit_scale_min(32, 31, x + 32 * j, weights, L + 32 * j, &mins[j], -0.5f, 0.1f, 15);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  uint8_t* sc6 = head + 4;
  std::memset(sc6, 0, 12);
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  for (int j = 0; j < 8; j++) {
    const uint8_t ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
    if (j < 4) {
      sc6[j] = ls;
      sc6[j + 4] = lm;
    } else {
      sc6[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      sc6[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      sc6[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  const uint16_t d = f32_to_f16(max_scale / 63.f), dmin = f32_to_f16(max_min / 63.f);
  std::memcpy(head, &d, 2);
  std::memcpy(head + 2, &dmin, 2);
  for (int j = 0; j < 8; j++) {
    uint8_t sc, m;
    kquant_scale_min(sc6, j, &sc, &m);
    const float dj = f16_to_f32(d) * sc;
    if (!dj) continue;  // the first pass's quants stay (what the reference does)
    const float dm = f16_to_f32(dmin) * m;
    for (int i = 0; i < 32; i++)
      L[32 * j + i] = static_cast<uint8_t>(std::max(0, std::min(nmax, nearest_int((x[32 * j + i] + dm) / dj))));
  }
}

// The value of largest magnitude in x; 0 when every |x| is below 1e-15 (the block quantizes to zeros).
float largest_magnitude(int n, const float* x) {
  float mx = 0, amax = 0;
  for (int i = 0; i < n; i++) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) amax = ax, mx = x[i];
  }
  return amax < 1e-15f ? 0.0f : mx;
}

// Q6_K's per-16 scale search (GGML's make_qx_quants with weights x^2): quants in [-nmax, nmax - 1] + nmax.
float fit_scale_symmetric(int n, int nmax, const float* x, int8_t* L) {
  const float mx = largest_magnitude(n, x);
  if (mx == 0.0f) {
    std::fill(L, L + n, 0);
    return 0.f;
  }
  auto clamp = [&](int l) { return std::max(-nmax, std::min(nmax - 1, l)); };
  float iscale = -nmax / mx;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; i++) {
    const int l = clamp(nearest_int(iscale * x[i]));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; is++) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / mx;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; i++) {
      const int l = clamp(nearest_int(iscale * x[i]));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; i++) L[i] = static_cast<int8_t>(nmax + clamp(nearest_int(iscale * x[i])));
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

void quantize_q6_k(const float* x, BlockQ6_K& y) {
  int8_t L[kQK];
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int ib = 0; ib < 16; ib++) {
    scales[ib] = fit_scale_symmetric(16, 32, x + 16 * ib, L + 16 * ib);
    if (std::fabs(scales[ib]) > max_abs_scale) max_abs_scale = std::fabs(scales[ib]), max_scale = scales[ib];
  }
  std::memset(&y, 0, sizeof(y));
  if (max_abs_scale < 1e-15f) return;  // all zero (d = +0)
  const float iscale = -128.f / max_scale;
  y.d = f32_to_f16(1 / iscale);
  for (int ib = 0; ib < 16; ib++) y.scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
  for (int j = 0; j < 16; j++) {
    const float d = f16_to_f32(y.d) * y.scales[j];
    if (!d) continue;
    for (int i = 0; i < 16; i++)
      L[16 * j + i] = static_cast<int8_t>(std::max(-32, std::min(31, nearest_int(x[16 * j + i] / d))) + 32);
  }
  for (int h = 0; h < 2; h++) {
    const int8_t* Lh = L + 128 * h;
    for (int l = 0; l < 32; l++) {
      y.ql[64 * h + l] = static_cast<uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
      y.ql[64 * h + l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
      y.qh[32 * h + l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                              ((Lh[l + 96] >> 4) << 6));
    }
  }
}

// Q3_K's per-16 scale search (GGML's make_q3_quants with rmse refinement, weights x^2): quants in
// [-nmax, nmax - 1] + nmax; starting from the largest magnitude's scale, up to 5 passes move single quants
// while that raises (sum w x l)^2 / sum w l^2.
float fit_scale_q3(int n, int nmax, const float* x, int8_t* L) {
  const float mx = largest_magnitude(n, x);
  if (mx == 0.0f) {
    std::fill(L, L + n, 0);
    return 0.f;
  }
  auto clamp = [&](int l) { return std::max(-nmax, std::min(nmax - 1, l)); };
  const float iscale = -nmax / mx;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; i++) {
    const int l = clamp(nearest_int(iscale * x[i]));
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int pass = 0; pass < 5; pass++) {
    int changed = 0;
    for (int i = 0; i < n; i++) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * L[i];
      if (slx > 0) {
        float sl2 = suml2 - w * L[i] * L[i];
        const int l = clamp(nearest_int(x[i] * sl2 / slx));
        if (l != L[i]) {
          slx += w * x[i] * l;
          sl2 += w * l * l;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(l), sumlx = slx, suml2 = sl2;
            changed++;
          }
        }
      }
    }
    if (!changed) break;
  }
  for (int i = 0; i < n; i++) L[i] = static_cast<int8_t>(L[i] + nmax);
  return sumlx / suml2;
}

// 2-bit fields of 128 weights: qs byte l holds weights l, l + 32, l + 64, l + 96 at bits 0, 2, 4, 6.
void pack_crumbs(const uint8_t* L, uint8_t* qs) {
  for (int half = 0; half < 2; half++)
    for (int l = 0; l < 32; l++) {
      const uint8_t* Lh = L + 128 * half;
      const int packed = Lh[l] | (Lh[l + 32] << 2) | (Lh[l + 64] << 4) | (Lh[l + 96] << 6);
      qs[32 * half + l] = static_cast<uint8_t>(packed);
    }
}

void quantize_q3_k(const float* x, BlockQ3_K& y) {
  int8_t L[kQK];
  float scales[16];
  float max_scale = 0, amax = 0;
  for (int j = 0; j < 16; j++) {
    scales[j] = fit_scale_q3(16, 4, x + 16 * j, L + 16 * j);
    if (std::fabs(scales[j]) > amax) amax = std::fabs(scales[j]), max_scale = scales[j];
  }
  std::memset(&y, 0, sizeof(y));
  if (max_scale != 0) {
    const float iscale = -32.f / max_scale;
    for (int j = 0; j < 16; j++) {
      const int l = std::max(-32, std::min(31, nearest_int(iscale * scales[j]))) + 32;
      if (j < 8) y.scales[j] = static_cast<uint8_t>(l & 0xF);
      else y.scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
      y.scales[8 + j % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
    }
    y.d = f32_to_f16(1 / iscale);
  }
  for (int j = 0; j < 16; j++) {
    const float d = f16_to_f32(y.d) * q3k_scale(y.scales, j);
    if (!d) continue;
    for (int i = 0; i < 16; i++)
      L[16 * j + i] = static_cast<int8_t>(std::max(-4, std::min(3, nearest_int(x[16 * j + i] / d))) + 4);
  }
  uint8_t low[kQK];
  for (int j = 0; j < kQK; j++) {  // weight j's third bit: bit j / 32 of hmask[j % 32]
    if (L[j] > 3) y.hmask[j % 32] |= static_cast<uint8_t>(1 << (j / 32));
    low[j] = static_cast<uint8_t>(L[j] & 3);
  }
  pack_crumbs(low, y.qs);
}

void quantize_q2_k(const float* x, BlockQ2_K& y) {
  uint8_t L[kQK];
  float scales[16], mins[16], weights[16];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 16; j++) {
    for (int l = 0; l < 16; l++) weights[l] = std::fabs(x[16 * j + l]);
    scales[j] = fit_scale_min(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, true);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  std::memset(&y, 0, sizeof(y));
  if (max_scale > 0) {
    const float iscale = 15.f / max_scale;
    for (int j = 0; j < 16; j++) y.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
    y.d = f32_to_f16(max_scale / 15.f);
  }
  if (max_min > 0) {
    const float iscale = 15.f / max_min;
    for (int j = 0; j < 16; j++) y.scales[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
    y.dmin = f32_to_f16(max_min / 15.f);
  }
  for (int j = 0; j < 16; j++) {
    const float d = f16_to_f32(y.d) * (y.scales[j] & 0xF);
    if (!d) continue;
    const float dm = f16_to_f32(y.dmin) * (y.scales[j] >> 4);
    for (int i = 0; i < 16; i++)
      L[16 * j + i] = static_cast<uint8_t>(std::max(0, std::min(3, nearest_int((x[16 * j + i] + dm) / d))));
  }
  pack_crumbs(L, y.qs);
}

}  // namespace

void quantize_row_other(DType t, const float* src, void* dst, int64_t n) {
  switch (t) {
    case DType::Q4_1:
    case DType::Q5_1: {
      const bool five = t == DType::Q5_1;
      for (int64_t i = 0; i < n / kQ8Block; i++) {
        const float* x = src + i * kQ8Block;
        float mn, mx;
        min_max(x, &mn, &mx);
        const float d = (mx - mn) / (five ? 31 : 15);
        const float id = d ? 1.0f / d : 0.0f;
        uint8_t L[kQ8Block];
        for (int j = 0; j < kQ8Block; j++) {  // (the 4-bit reference clamps at 15; the 5-bit one does not)
          const float v = (x[j] - mn) * id + 0.5f;
          L[j] = five ? static_cast<uint8_t>(v) : static_cast<uint8_t>(std::min(15, static_cast<int>(static_cast<int8_t>(v))));
        }
        if (five) {
          auto& b = static_cast<BlockQ5_1*>(dst)[i];
          b.d = f32_to_f16(d), b.m = f32_to_f16(mn);
          pack5(L, b.qs, b.qh);
        } else {
          auto& b = static_cast<BlockQ4_1*>(dst)[i];
          b.d = f32_to_f16(d), b.m = f32_to_f16(mn);
          for (int j = 0; j < 16; j++) b.qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
        }
      }
      return;
    }
    case DType::Q5_0: {
      for (int64_t i = 0; i < n / kQ8Block; i++) {
        const float* x = src + i * kQ8Block;
        float amax = 0.0f, m = 0.0f;
        for (int j = 0; j < kQ8Block; j++)
          if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), m = x[j];
        const float d = m / -16;
        const float id = d ? 1.0f / d : 0.0f;
        uint8_t L[kQ8Block];
        for (int j = 0; j < kQ8Block; j++)
          L[j] = static_cast<uint8_t>(std::min(31, static_cast<int>(static_cast<int8_t>(x[j] * id + 16.5f))));
        auto& b = static_cast<BlockQ5_0*>(dst)[i];
        b.d = f32_to_f16(d);
        pack5(L, b.qs, b.qh);
      }
      return;
    }
    case DType::Q4_K: {
      for (int64_t i = 0; i < n / kQK; i++) {
        auto& b = static_cast<BlockQ4_K*>(dst)[i];
        uint8_t L[kQK];
        kquant_scales_mins(src + i * kQK, 15, reinterpret_cast<uint8_t*>(&b), L);
        for (int c = 0; c < 4; c++)
          for (int l = 0; l < 32; l++) b.qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + l + 32] << 4));
      }
      return;
    }
    case DType::Q5_K: {
      for (int64_t i = 0; i < n / kQK; i++) {
        auto& b = static_cast<BlockQ5_K*>(dst)[i];
        uint8_t L[kQK];
        kquant_scales_mins(src + i * kQK, 31, reinterpret_cast<uint8_t*>(&b), L);
        std::memset(b.qh, 0, sizeof(b.qh));
        for (int c = 0; c < 4; c++)
          for (int l = 0; l < 32; l++) {
            const int lo = L[64 * c + l], hi = L[64 * c + l + 32];
            if (lo > 15) b.qh[l] |= static_cast<uint8_t>(1 << (2 * c));
            if (hi > 15) b.qh[l] |= static_cast<uint8_t>(2 << (2 * c));
            b.qs[32 * c + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
          }
      }
      return;
    }
    case DType::Q6_K: {
      for (int64_t i = 0; i < n / kQK; i++) quantize_q6_k(src + i * kQK, static_cast<BlockQ6_K*>(dst)[i]);
      return;
    }
    case DType::Q3_K: {
      for (int64_t i = 0; i < n / kQK; i++) quantize_q3_k(src + i * kQK, static_cast<BlockQ3_K*>(dst)[i]);
      return;
    }
    case DType::Q2_K: {
      for (int64_t i = 0; i < n / kQK; i++) quantize_q2_k(src + i * kQK, static_cast<BlockQ2_K*>(dst)[i]);
      return;
    }
    case DType::IQ4_NL:
    case DType::IQ4_XS: return quantize_row_iq4(t, src, dst, n);
    default: return;
  }
}

}  // namespace jf
