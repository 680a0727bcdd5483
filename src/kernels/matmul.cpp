#include "kernels/matmul.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "kernels/cpu.h"
#include "kernels/parallel.h"

namespace jf {

namespace scalar {

// Reference kernel: dequantize one weight row, then plain dot products in k order.
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1) {
  const int64_t K = w.cols, N = w.rows;
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(K));
  for (int64_t n = n0; n < n1; n++) {
    dequantize_row(w.type, w.row(n), row.data(), K);
    for (int64_t m = 0; m < M; m++) {
      const float* xm = x + m * K;
      float s = 0.0f;
      for (int64_t k = 0; k < K; k++) s += xm[k] * row[k];
      y[m * N + n] = s;
    }
  }
}

void quantize_row_q8(const float* x, int64_t K, int8_t* q, float* d, int32_t* bias, int64_t group) {
  for (int64_t g0 = 0; g0 < K; g0 += group) {
    float amax = 0.0f;
    bool finite = true;
    for (int64_t i = g0; i < g0 + group; i++) {
      amax = std::max(amax, std::fabs(x[i]));
      finite = finite && x[i] - x[i] == 0.0f;
    }
    for (int64_t b = g0 / kQ8Block; b < (g0 + group) / kQ8Block; b++) {
      const float* xb = x + b * kQ8Block;
      int8_t* qb = q + b * kQ8Block;
      int32_t sum = 0;
      if (!finite || amax < kQ8MinAbsMax) {
        std::fill(qb, qb + kQ8Block, 0);
        d[b] = finite ? 0.0f : kQ8NotFinite;
      } else {
        d[b] = amax / 127.0f;
        const float inv = 127.0f / amax;
        for (int i = 0; i < kQ8Block; i++) {
          qb[i] = static_cast<int8_t>(std::nearbyint(std::min(127.0f, std::max(-127.0f, xb[i] * inv))));
          sum += qb[i];
        }
      }
      bias[b] = -128 * sum;
    }
  }
}

namespace {

// One output's chain over a K-quant row (see Q8Rows): per super-block, the sub-blocks' exact sums times
// d * sc, the mins' integer dot product times -dmin, then times the super-block's dx.
float kquant_chain(const Quants32* blocks, const int8_t* q, const float* d, int64_t nb, bool has_min, int parts) {
  const int width = kQ8Block / parts;
  float acc = 0.0f;
  for (int64_t s = 0; s < nb; s += 8) {
    float u = 0.0f;
    int32_t mins = 0;
    for (int64_t b = s; b < s + 8; b++) {
      const Quants32& wb = blocks[b];
      for (int h = 0; h < parts; h++) {
        int32_t sum = 0, xsum = 0;
        for (int i = width * h; i < width * (h + 1); i++) {
          const int32_t qx = q[b * kQ8Block + i];
          sum += qx * wb.q[i];
          xsum += qx;
        }
        u = std::fma(static_cast<float>(sum), wb.sd * static_cast<float>(wb.sc[h]), u);
        mins += xsum * wb.sm[h];
      }
    }
    if (has_min) u = std::fma(static_cast<float>(mins), blocks[s].smin, u);
    acc = std::fma(u, d[s], acc);
  }
  return acc;
}

}  // namespace

void matmul_cols_q8(const Q8Rows& x, const WeightMatrix& w, float* y, int64_t n0, int64_t n1) {
  const int64_t K = w.cols, N = w.rows, nb = K / kQ8Block;
  const bool has_min = dtype_has_min(w.type), halves = dtype_scales_per_32(w.type) == 2;
  std::vector<Quants32> blocks(static_cast<size_t>(nb));
  for (int64_t n = n0; n < n1; n++) {
    for (int64_t b = 0; b < nb; b++) block32(w.type, w.row(n), b, blocks[b]);
    for (int64_t m = 0; m < x.M; m++) {
      const int8_t* q = x.row_q(m);
      const float* d = x.row_d(m);
      if (dtype_is_kquant(w.type)) {
        JF_CHECK(x.group == kQK, "K-quant weights need activations quantized per 256");
        y[m * N + n] = kquant_chain(blocks.data(), q, d, nb, has_min, halves ? 2 : 1);
        continue;
      }
      float acc = 0.0f;
      for (int64_t b = 0; b < nb; b++) {  // the block's scale times dx, and the min (if any) times sum(qx) * dx
        const Quants32& wb = blocks[b];
        const int8_t* qb = q + b * kQ8Block;
        int32_t sum = 0, xsum = 0;
        for (int i = 0; i < kQ8Block; i++) sum += int32_t(qb[i]) * wb.q[i], xsum += qb[i];
        acc = std::fma(static_cast<float>(sum), wb.d[0] * d[b], acc);
        if (has_min) acc = std::fma(static_cast<float>(xsum) * d[b], wb.m[0], acc);
      }
      y[m * N + n] = acc;
    }
  }
}

}  // namespace scalar

namespace {

// An activation sum (below 2^15 in magnitude) as the low or high 16 bits of a pair (V::dot2's operand).
void put_pair_half(int32_t& pair, int32_t sum, bool high) {
  pair = high ? pair | static_cast<int32_t>(static_cast<uint32_t>(sum) << 16) : (sum & 0xffff);
}

}  // namespace

void quantize_rows_q8(const float* x, int64_t M, int64_t K, Q8Rows& out, bool threads, int64_t group) {
  JF_CHECK(group == kQ8Block || group == kQK, "activations are quantized per 32 or per 256 values");
  JF_CHECK(K % group == 0, "quantized activations need a multiple of " + std::to_string(group) + " values per row");
  const int64_t nb = K / kQ8Block;
  out.M = M;
  out.K = K;
  out.group = group;
  out.q.resize(size_t(M * K));
  out.d.resize(size_t(M * nb));
  out.bias.resize(size_t(M * nb));
  // The sums and starts only the weight types of this group read (K-quants per 256, the others per 32).
  const bool kquants = group == kQK;
  for (auto* v : {&out.start8, &out.start16, &out.xsum16_pairs}) v->resize(size_t(M * nb));
  for (auto* v : {&out.start4_half, &out.start32_half}) v->resize(size_t(M * nb * 2));
  out.xsum_pairs.resize(size_t(M * nb / 2));
  out.sum_dx.resize(size_t(M * nb));
  const bool simd = active_isa() != Isa::Scalar;
  parallel_for(M, threads && M > 1 && M * K >= (1 << 14), [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; m++) {
      auto* quantize = simd ? avx2::quantize_row_q8 : scalar::quantize_row_q8;
      quantize(x + m * K, K, out.q.data() + m * K, out.d.data() + m * nb, out.bias.data() + m * nb, group);
      const int8_t* q = out.q.data() + m * K;
      const float* d = out.d.data() + m * nb;
      for (int64_t b = 0; b < nb; b++) {
        const int32_t sum = out.bias[m * nb + b] / -128;
        if (kquants) {  // Q4_K, Q5_K's mins; Q2_K's, Q3_K's and Q6_K's halves
          if (b / 2 < nb / 2) put_pair_half(out.xsum_pairs[m * (nb / 2) + b / 2], sum, b % 2 == 1);
          int32_t first = 0;
          for (int i = 0; i < 16; i++) first += q[kQ8Block * b + i];
          for (int h = 0; h < 2; h++) {
            const int32_t half = h == 0 ? first : sum - first;
            out.start4_half[m * 2 * nb + 2 * b + h] = -4 * half;
            out.start32_half[m * 2 * nb + 2 * b + h] = -32 * half;
            put_pair_half(out.xsum16_pairs[m * nb + b], half, h == 1);
          }
          continue;
        }
        out.start8[m * nb + b] = -8 * sum;  // Q4_0, Q5_0; Q4_1's and Q5_1's mins
        out.start16[m * nb + b] = -16 * sum;
        out.sum_dx[m * nb + b] = static_cast<float>(sum) * d[b];
      }
    }
  });
}

const int32_t* Q8Rows::offset_starts(DType t) const {
  switch (panel_nibble_offset(t)) {
    case 4: return start4_half.data();
    case 8: return start8.data();
    case 16: return start16.data();
    case 32: return start32_half.data();
    default: return nullptr;
  }
}

size_t panel_bytes(DType type, int64_t K) {
  if (dtype_is_block_quantized(type)) return size_t(K / kQ8Block) * panel_block_bytes(type) + size_t(K / kQK) * panel_head_bytes(type);
  return size_t(K) * kPanel * dtype_row_bytes(type, 1);
}

size_t read_bytes(const WeightMatrix& w) {
  if (!w.packed) return w.rows * w.row_bytes();
  return panel_count(w) * panel_bytes(w.packed_type, w.cols);
}

namespace {

// The table index of an IQ4 value (the table's values are distinct).
int iq4_index(int8_t value) {
  for (int i = 0; i < 16; i++)
    if (kIq4Values[i] == value) return i;
  return 0;
}

}  // namespace

PageBuffer pack_panels(const WeightMatrix& w, DType type) {
  JF_CHECK(type == DType::F32 || type == w.type, "panels hold fp32 or the matrix's own type");
  const int64_t K = w.cols, N = w.rows, n_panels = panel_count(w);
  const size_t ps = panel_bytes(type, K);
  PageBuffer packed(ps * n_panels);  // zero-filled: rows past N stay zero
  parallel_for(n_panels, n_panels > 1, [&](int64_t p0, int64_t p1) {
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t n = p0 * kPanel; n < std::min(N, p1 * kPanel); n++) {
      uint8_t* panel = packed.data() + (n / kPanel) * ps;
      const int64_t c = n % kPanel;
      if (type == DType::F32) {
        dequantize_row(w.type, w.row(n), row.data(), K);
        for (int64_t k = 0; k < K; k++) std::memcpy(panel + (k * kPanel + c) * 4, &row[k], 4);
      } else if (dtype_is_block_quantized(type)) {  // unsigned: bytes q + 128, nibbles q + panel_nibble_offset
        Quants32 q;
        const bool nib = panel_nibbles(type), kquant = dtype_is_kquant(type);
        const int nib_offset = panel_nibble_offset(type), high_bits = panel_high_bits(type);
        for (int64_t b = 0; b < K / kQ8Block; b++) {
          uint8_t* bp = panel + panel_block_offset(type, b);
          block32(type, w.row(n), b, q);
          if (kquant) {  // integer scales per block, the super-block's d and -dmin in its header
            uint8_t* head = panel + panel_head_offset(type, b);
            std::memcpy(head + c * sizeof(float), &q.sd, sizeof(float));
            if (dtype_has_min(type)) std::memcpy(head + (kPanel + c) * sizeof(float), &q.smin, sizeof(float));
            const int scales = dtype_scales_per_32(type);  // then as many mins, if any
            for (int h = 0; h < scales; h++) {
              if (panel_scale_min_byte(type)) {  // both 4-bit
                bp[h * kPanel + c] = static_cast<uint8_t>(q.sc[h] | q.sm[h] << 4);
                continue;
              }
              bp[h * kPanel + c] = static_cast<uint8_t>(q.sc[h]);
              if (dtype_has_min(type)) bp[(scales + h) * kPanel + c] = q.sm[h];
            }
          } else {
            std::memcpy(bp + c * sizeof(float), &q.d[0], sizeof(float));
            if (dtype_has_min(type)) std::memcpy(bp + (kPanel + c) * sizeof(float), &q.m[0], sizeof(float));
          }
          uint8_t* quants = bp + panel_quants_offset(type);
          for (int kk = 0; kk < kQ8Block; kk++) {  // group g = kk / 4: output c's bytes 4c .. 4c+3
            const int g = kk / 4, at = c * 4 + kk % 4;
            if (!nib) {
              quants[g * (4 * kPanel) + at] = static_cast<uint8_t>(q.q[kk] + 128);
              continue;
            }
            const int u = panel_table(type) ? iq4_index(q.q[kk]) : q.q[kk] + nib_offset;
            if (panel_crumbs(type)) {  // quad g / 4, bits 2 (g % 4); Q3_K's third bit at bit g of its plane
              quants[g / 4 * (4 * kPanel) + at] |= static_cast<uint8_t>((u & 3) << (2 * (g % 4)));
              if (high_bits > 0) quants[kPanelCrumbBytes + at] |= static_cast<uint8_t>(((u >> 2) & 1) << g);
              continue;
            }
            const int pair = g / 2;  // even groups in the low nibbles
            quants[pair * (4 * kPanel) + at] |= static_cast<uint8_t>((u & 0xF) << (4 * (g % 2)));
            if (high_bits > 0) {  // the bits above the nibble: plane and slot of the pair (matmul.h)
              const int per_plane = 4 / high_bits, slot = pair % per_plane;
              const int shift = high_bits * slot + (g % 2 == 0 ? 4 : 0);
              uint8_t* plane = quants + kPanelNibbleBytes + (pair / per_plane) * kPanelPlaneBytes;
              plane[at] |= static_cast<uint8_t>((u >> 4) << shift);
            }
          }
        }
      } else {  // F16 / BF16: 2-byte values moved as they are
        const uint8_t* src = w.row(n);
        for (int64_t k = 0; k < K; k++) std::memcpy(panel + (k * kPanel + c) * 2, src + k * 2, 2);
      }
    }
  });
  return packed;
}

namespace {

// Panels [p0, p1) of y = x W^T from int8 panels and quantized rows.
void panels_q8(Isa isa, const Q8Rows& xq, const WeightMatrix& w, float* y, int64_t p0, int64_t p1) {
  switch (isa) {
    case Isa::Avx512:  // its int8 tiles need VNNI; the AVX2 ones give the same bits
      return has_avx512_vnni() ? avx512::matmul_panels_q8(xq, w, y, p0, p1) : avx2::matmul_panels_q8(xq, w, y, p0, p1);
    case Isa::Avx2Vnni: return avx2vnni::matmul_panels_q8(xq, w, y, p0, p1);
    default: return avx2::matmul_panels_q8(xq, w, y, p0, p1);
  }
}

// The calling thread's quantized rows. Lambdas do not capture thread_local variables (a worker naming it
// would get its own): callers pass the reference on.
Q8Rows& calling_threads_rows() {
  thread_local Q8Rows rows;
  return rows;
}

// Quantized panels: quantize the rows, then integer block dot products (see Q8Rows).
void matmul_q8(const float* x, int64_t M, const WeightMatrix& w, float* y, bool parallel) {
  Q8Rows& xq = calling_threads_rows();
  quantize_rows_q8(x, M, w.cols, xq, parallel, q8_group(w.type));
  const Isa isa = active_isa();
  if (isa == Isa::Scalar || !w.packed) {
    parallel_for(w.rows, parallel, [&](int64_t n0, int64_t n1) { scalar::matmul_cols_q8(xq, w, y, n0, n1); });
    return;
  }
  parallel_for(panel_count(w), parallel, [&](int64_t p0, int64_t p1) { panels_q8(isa, xq, w, y, p0, p1); });
}

bool int8_panels(const WeightMatrix& w) {
  return dtype_is_block_quantized(w.type) && w.packed_type == w.type && w.packed != nullptr;
}

}  // namespace

void matmul_shared_input(const float* x, int64_t M, std::initializer_list<MatmulOutput> outputs, bool threads) {
  const Isa isa = active_isa();
  int64_t total_panels = 0, work = 0;
  bool shared = isa != Isa::Scalar && M > 0;
  for (const MatmulOutput& o : outputs) {
    const WeightMatrix& first = *outputs.begin()->w;
    shared = shared && int8_panels(*o.w) && o.w->cols == first.cols && q8_group(o.w->type) == q8_group(first.type);
    total_panels += panel_count(*o.w);
    work += M * o.w->rows * o.w->cols;
  }
  if (!shared) {
    for (const MatmulOutput& o : outputs) matmul(x, M, *o.w, o.y, threads);
    return;
  }
  const bool parallel = threads && work >= (1 << 17);
  Q8Rows& xq = calling_threads_rows();
  quantize_rows_q8(x, M, outputs.begin()->w->cols, xq, parallel, q8_group(outputs.begin()->w->type));
  // Pieces of the matrices' panels one after another; a piece may end one matrix and start the next.
  parallel_for(total_panels, parallel, [&](int64_t p0, int64_t p1) {
    int64_t first = 0;
    for (const MatmulOutput& o : outputs) {
      const int64_t n = panel_count(*o.w);
      const int64_t a = std::max(p0, first), b = std::min(p1, first + n);
      if (a < b) panels_q8(isa, xq, *o.w, o.y, a - first, b - first);
      first += n;
    }
  });
}

void matmul(const float* x, int64_t M, const WeightMatrix& w, float* y, bool threads) {
  JF_CHECK(w.data != nullptr && w.rows > 0 && w.cols > 0, "empty weight matrix");
  if (M <= 0) return;
  const Isa isa = active_isa();
  const bool parallel = threads && M * w.rows * w.cols >= (1 << 17);
  if (dtype_is_block_quantized(w.type) && w.packed_type == w.type) return matmul_q8(x, M, w, y, parallel);
  if (w.packed && isa != Isa::Scalar) {
    parallel_for(panel_count(w), parallel, [&](int64_t p0, int64_t p1) {
      if (isa == Isa::Avx512)
        avx512::matmul_panels(x, M, w, y, p0, p1);
      else
        avx2::matmul_panels(x, M, w, y, p0, p1);
    });
    return;
  }
  // Split the output columns into tiles; a thread gets a contiguous run of whole tiles. The row-major SIMD
  // kernels have tiles for Q8_0 only: other quantized types without panels (--no-panels) take the scalar one.
  const Isa cols_isa = dtype_is_block_quantized(w.type) && w.type != DType::Q8_0 ? Isa::Scalar : isa;
  const int64_t tile = cols_isa == Isa::Scalar ? 8 : kColTile;
  const int64_t n_tiles = (w.rows + tile - 1) / tile;
  parallel_for(n_tiles, parallel, [&](int64_t t0, int64_t t1) {
    int64_t n0 = t0 * tile, n1 = std::min(t1 * tile, w.rows);
    switch (cols_isa) {
      case Isa::Avx512: avx512::matmul_cols(x, M, w, y, n0, n1); break;
      case Isa::Avx2:
      case Isa::Avx2Vnni: avx2::matmul_cols(x, M, w, y, n0, n1); break;
      case Isa::Scalar: scalar::matmul_cols(x, M, w, y, n0, n1); break;
    }
  });
}

}  // namespace jf
