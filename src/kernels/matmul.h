// y = x W^T for a batch of rows x and a weight matrix W stored row-major in any DType.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "base/aligned.h"
#include "base/mapped_file.h"
#include "kernels/dtype.h"

namespace jf {

// A weight matrix of `rows` output features by `cols` input features, row-major (GGUF/GGML layout:
// the input dimension is contiguous). Non-owning.
struct WeightMatrix {
  DType type = DType::F32;
  const void* data = nullptr;
  int64_t rows = 0;  // N: output features
  int64_t cols = 0;  // K: input features
  // Optional second copy in the panel layout (see pack_panels), owned elsewhere; the SIMD kernels use it.
  // packed_type Q8_0 (with or without the copy) selects int8 activations for a Q8_0 matrix, see matmul.
  const uint8_t* packed = nullptr;
  DType packed_type = DType::F32;
  size_t row_bytes() const { return dtype_row_bytes(type, cols); }
  const uint8_t* row(int64_t n) const { return static_cast<const uint8_t*>(data) + n * row_bytes(); }
};

// y[m][n] = sum_k x[m][k] * W[n][k] for m < M, n < W.rows; x is M x W.cols, y is M x W.rows (row-major).
// Each weight is read from memory once per call for all M rows. Batch invariant: every y[m][n] is
// computed by the same sequence of floating-point operations whatever M, the row's index m and the
// thread count, so a row's result is bit-identical alone or inside any batch.
// A Q8_0 or Q4_0 matrix whose packed_type is its own type multiplies the rows quantized to int8 (Q8Rows),
// on every instruction set (the scalar kernels, and any without the panel copy, from the row-major
// weights). Without that (e.g. --no-panels) it multiplies fp32 rows with dequantized weights. threads = false keeps it on the calling thread (for callers already inside a parallel
// loop).
void matmul(const float* x, int64_t M, const WeightMatrix& w, float* y, bool threads = true);

// y_j = x W_j^T for several matrices over the same rows (q, k, v; gate, up): the same results as a
// matmul per matrix, but when all are int8 panels the rows are quantized once and the matrices' panels
// share one parallel loop, so the threads wait once instead of once per matrix.
struct MatmulOutput {
  const WeightMatrix* w;
  float* y;
};
void matmul_shared_input(const float* x, int64_t M, std::initializer_list<MatmulOutput> outputs, bool threads = true);

// Panel layout: the weights in panels of kPanel output features, k-major inside a panel, so a kernel
// multiplies one broadcast x value with 8 outputs' weights at once and needs no horizontal sums (the cost
// that dominates the row-major kernels at small K) and converts each weight vector once for several rows.
//   F32 / F16 / BF16: panel p is K groups of 8 values, group k = W[8p .. 8p+8)[k].
//   Q8_0: panel p is K/32 blocks, each 8 fp32 scales, then 8 groups of 32 bytes: group g holds, for each
//   output c of the panel, its quants k = 4g .. 4g+3 as q + 128 (unsigned), bytes 4c .. 4c+3.
//   Q4_0: the same with 4-bit quants as in the file (q + 8, unsigned): 4 pairs of groups of 32 bytes, pair
//   h holding group 2h in the low nibbles and group 2h + 1 in the high ones.
//   Q4_1, Q5_0, Q5_1, per block of 32 (block32's values): 8 fp32 scales, then 8 fp32 mins (Q4_1, Q5_1),
//   then the quants as nibbles as Q4_0 (unsigned as in the file: Q4_1 / Q5_1 q, Q5_0 q + 16), then Q5_0's /
//   Q5_1's fifth bits in a high-bit plane (below).
//   K-quants keep the file's integer sub-block scales, so the panels stream about the file's bytes (at most
//   1.05x): per super-block of 256 positions a header (the 8 outputs' fp32 d, then -dmin for Q2_K / Q4_K /
//   Q5_K), then 8 blocks of 32: 8 int8 sub-block scales (Q2_K, Q3_K, Q6_K: 8 for each half of 16), as many
//   mins (Q4_K, Q5_K; Q2_K's 4-bit min shares its scale's byte, scale | min << 4), the quants as nibbles
//   (unsigned: Q3_K q + 4, Q6_K q + 32, the others q; Q5_K's and Q6_K's low 4 bits), then Q5_K's 1 and
//   Q6_K's 2 bits above the nibble in planes of 32 bytes (panel_high_bits).
//   Q2_K / Q3_K hold their low 2 bits as crumbs instead: 2 quads of groups of 32 bytes, quad p holding
//   groups 4p .. 4p + 3 at bits 0, 2, 4, 6 of byte 4c + i (so a quad is one half of 16 positions); Q3_K's
//   third bit (of q + 4) in one plane, group g's at bit g of byte 4c + i.
//   IQ4_NL / IQ4_XS, per block of 32: 8 fp32 scales (IQ4_XS: d * (ls - 32)), then the table indices as
//   nibbles as Q4_0; the tile looks each up (pshufb) and multiplies the table value.
//   High-bit planes: with b bits per quant a plane serves s = 4 / b pairs of groups; pair h is in plane
//   h / s, slot p = h % s: byte 4c + i holds the high bits of output c's position i of group 2h at bits
//   4 + b p .. and of group 2h + 1 at bits b p .., so one 16-bit shift each way and a mask put them at bit 4
//   of the nibbles' bytes (see panel_tiles::dot_nibble_pairs).
// Rows past N are zero. Per output element the order is acc = fma(x[k], w[k], acc) for k = 0 .. K-1 from
// acc = 0, whatever M or the tile shape (w[k] as fp32; Q8_0 weights in fp32 panels are q * d rounded to
// fp32). Q8_0 panels multiply int8 activations instead, see Q8Rows.
constexpr int64_t kPanel = 8;
// F32 / F16 / BF16 matrices with at most this many input features get an fp32 panel copy (see
// model/weights.h pack_matrices).
constexpr int64_t kPackMaxCols = 512;
size_t panel_bytes(DType type, int64_t K);  // bytes of one panel
inline int64_t panel_count(const WeightMatrix& w) { return (w.rows + kPanel - 1) / kPanel; }
// Quantized panels: bytes of a super-block header (K-quants), of a block of 32 positions, where block b
// starts, where its super-block's header starts, and where its quants start inside it.
constexpr size_t panel_head_bytes(DType t) { return dtype_is_kquant(t) ? kPanel * sizeof(float) * (dtype_has_min(t) ? 2 : 1) : 0; }
// Quant bits kept above the nibble (the crumb, Q3_K), in planes after them (0: none).
constexpr int panel_high_bits(DType t) {
  return t == DType::Q5_0 || t == DType::Q5_1 || t == DType::Q5_K || t == DType::Q3_K ? 1 : t == DType::Q6_K ? 2 : 0;
}
// Q2_K / Q3_K: the quants' low 2 bits as crumbs, four groups per byte (a special case of panel_nibbles).
constexpr bool panel_crumbs(DType t) { return t == DType::Q2_K || t == DType::Q3_K; }
// IQ4_NL / IQ4_XS: nibble panels of the file's table indices, looked up in the tile (V::table_q).
constexpr bool panel_table(DType t) { return t == DType::IQ4_NL || t == DType::IQ4_XS; }
constexpr bool panel_nibbles(DType t) {
  return t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q2_K || t == DType::Q3_K || t == DType::Q4_K ||
         panel_high_bits(t) > 0 || panel_table(t);
}
// What nibble panels add to block32's q to make it unsigned (as the files' quants: Q4_0 q + 8, Q5_0 q + 16,
// Q3_K q + 4, Q6_K q + 32).
constexpr int panel_nibble_offset(DType t) {
  return t == DType::Q4_0 ? 8 : t == DType::Q5_0 ? 16 : t == DType::Q3_K ? 4 : t == DType::Q6_K ? 32 : 0;
}
// K-quants: an int8 scale per sub-block and output (two per block for the types with sub-blocks of 16),
// then as many mins (Q2_K: one byte per half, scale | min << 4, as its file holds them); the others: fp32
// scales (and mins).
constexpr bool panel_scale_min_byte(DType t) { return t == DType::Q2_K; }
constexpr size_t panel_quants_offset(DType t) {
  return dtype_is_kquant(t) ? kPanel * dtype_scales_per_32(t) * (dtype_has_min(t) && !panel_scale_min_byte(t) ? 2 : 1)
                            : kPanel * sizeof(float) * (dtype_has_min(t) ? 2 : 1);
}
constexpr size_t kPanelNibbleBytes = kPanel * kQ8Block / 2;  // a block's nibbles: 4 pairs of groups
constexpr size_t kPanelCrumbBytes = kPanel * kQ8Block / 4;   // a block's crumbs: 2 quads of groups
constexpr size_t kPanelPlaneBytes = kPanel * 4;  // a high-bit plane: a byte per output and place in a group
constexpr size_t panel_block_bytes(DType t) {
  return panel_quants_offset(t) +
         (panel_crumbs(t) ? kPanelCrumbBytes : panel_nibbles(t) ? kPanelNibbleBytes : kPanel * kQ8Block) +
         size_t(panel_high_bits(t)) * kPanelPlaneBytes;
}
constexpr size_t panel_head_offset(DType t, int64_t b) {
  return dtype_is_kquant(t) ? size_t(b / 8) * (panel_head_bytes(t) + 8 * panel_block_bytes(t)) : 0;
}
constexpr size_t panel_block_offset(DType t, int64_t b) {
  return dtype_is_kquant(t) ? panel_head_offset(t, b) + panel_head_bytes(t) + size_t(b % 8) * panel_block_bytes(t)
                            : size_t(b) * panel_block_bytes(t);
}
size_t read_bytes(const WeightMatrix& w);   // bytes the kernels read for one pass over w (its panels if any)
// The panel copy of w in `type` (F32, or w's own type).
PageBuffer pack_panels(const WeightMatrix& w, DType type);

// Activations for Q8_0 panels, quantized like the weights: per row and group of values, d = max|x| / 127 and
// q = x * (127 / max|x|) rounded to nearest even (a group with max|x| < 1e-30 is all zero; one holding inf
// or NaN gets d = NaN, which every output it reaches then carries). A group is a block of 32, or for the
// K-quants a super-block of 256 (as the reference engine's Q8_K; d is then stored for each of its blocks).
// With them each output is exact integer block dot products chained as acc = fma(float(sum_k qx * qw),
// dw * dx, acc), blocks in order from 0 (qw: block32's q; the types with a min add acc = fma(sum_k qx * dx,
// m, acc) after each block's sum). K-quants chain per super-block: u = fma(float(sum), d * sc, u) over its
// sub-blocks (of 32, or of 16 for Q2_K, Q3_K, Q6_K), then for the types with mins u = fma(float(sum over
// sub-blocks of m * sum_k qx), -dmin, u), then acc = fma(u, dx, acc): d * sc is exact (an integer of at most
// 8 bits times an fp16 value), so the tiles form it once per vector and multiply no dx per block, and the
// mins' sum is an exact integer dot product. Every integer sum is below 2^24, so converting it is exact:
// the same bits on every instruction set (integer sums do not depend on their order), for any M or thread
// count. int8 products are 4-8x cheaper than fp32 FMAs with VNNI; the error they add is that of the
// weights' own quantization (|q| <= 127 per block of 32).
struct Q8Rows {
  int64_t M = 0, K = 0;
  int64_t group = 32;         // values per scale: 32, or 256 for K-quant weights (q8_group)
  aligned_vector<int8_t> q;   // M x K quants
  std::vector<float> d;       // M x K/32 scales (equal within a group)
  std::vector<int32_t> bias;  // M x K/32: -128 * (sum of the block's quants), undoes the weights' + 128
  // -o * (sum of the quants), the start of a block's integer sum that undoes a nibble offset o
  // (panel_nibble_offset): per block for Q4_0 (8) and Q5_0 (16), per half block for Q3_K (4) and Q6_K (32).
  // Read with a broadcast, which takes no vector ALU slot (shifting bias per row and output took one).
  std::vector<int32_t> start8, start16, start4_half, start32_half;
  // The sums of quants times d (fp32, rounded once) per block: what Q4_1's and Q5_1's mins multiply
  // (sum_k qx * dx), computed once per row instead of once per row and output.
  std::vector<float> sum_dx;
  // The sums of quants of two blocks (or two half blocks) as the low and high 16 bits of one value: what
  // the K-quants' integer mins multiply, two per instruction (K/64 and K/32 per row).
  std::vector<int32_t> xsum_pairs, xsum16_pairs;
  const int8_t* row_q(int64_t m) const { return q.data() + m * K; }
  const float* row_d(int64_t m) const { return d.data() + m * (K / kQ8Block); }
  const int32_t* row_bias(int64_t m) const { return bias.data() + m * (K / kQ8Block); }
  // The starts for panels of type t (nullptr for types without a nibble offset).
  const int32_t* offset_starts(DType t) const;
};
// Quantizes M rows of K (a multiple of `group`) values with a scale per group of 32 or 256; every
// instruction set gives the same bits. Of the starts and sums it fills only what the group's weight types
// read: per 256, the half-block starts and the pairs; per 32, start8, start16 and sum_dx.
void quantize_rows_q8(const float* x, int64_t M, int64_t K, Q8Rows& out, bool threads = false,
                      int64_t group = kQ8Block);
// The activations' group for weights of type t: a super-block for the K-quants, else a block.
constexpr int64_t q8_group(DType t) { return dtype_is_kquant(t) ? kQK : kQ8Block; }
constexpr float kQ8MinAbsMax = 1e-30f;  // blocks below this are all zero (127 / max|x| stays finite)
constexpr float kQ8NotFinite = __builtin_nanf("");  // the scale of a block holding inf or NaN

namespace scalar {
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
// Outputs [n0, n1) of a quantized matrix from quantized activations (the row-major weights), as the
// panels do.
void matmul_cols_q8(const Q8Rows& x, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
void quantize_row_q8(const float* x, int64_t K, int8_t* q, float* d, int32_t* bias, int64_t group = kQ8Block);
}
// Weight rows per column tile in the SIMD kernels; a thread's column range starts at a multiple of it.
constexpr int64_t kColTile = 12;
namespace avx2 {
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
// Panels [p0, p1) of y = x W^T from w.packed.
void matmul_panels(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1);
// The same from Q8_0 panels and quantized activations (pmaddubsw), and the quantization of one row.
void matmul_panels_q8(const Q8Rows& x, const WeightMatrix& w, float* y, int64_t p0, int64_t p1);
void quantize_row_q8(const float* x, int64_t K, int8_t* q, float* d, int32_t* bias, int64_t group = kQ8Block);
}  // namespace avx2
namespace avx2vnni {
// avx2::matmul_panels_q8 with AVX-VNNI dot products: the same bits.
void matmul_panels_q8(const Q8Rows& x, const WeightMatrix& w, float* y, int64_t p0, int64_t p1);
}  // namespace avx2vnni
namespace avx512 {
void matmul_cols(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t n0, int64_t n1);
// Same results as avx2::matmul_panels, 16 lanes at a time.
void matmul_panels(const float* x, int64_t M, const WeightMatrix& w, float* y, int64_t p0, int64_t p1);
// Same results as avx2::matmul_panels_q8, with AVX-512 VNNI dot products over two panels at a time (needs
// has_avx512_vnni()).
void matmul_panels_q8(const Q8Rows& x, const WeightMatrix& w, float* y, int64_t p0, int64_t p1);
}  // namespace avx512

}  // namespace jf
