// Kernels against scalar references, and the batch invariance every kernel promises.
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "base/rng.h"
#include "kernels/cpu.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "test_support.h"

namespace jf {
namespace {

std::vector<float> randn(int64_t n, uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = r.normal();
  return v;
}

struct Weights {
  std::vector<uint8_t> bytes;
  PageBuffer packed;
  WeightMatrix w;
};

const DType kTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q8_0, DType::Q4_0,   DType::Q4_1,  DType::Q5_0,
                        DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL,
                        DType::IQ4_XS};

// K-quants need rows of 256: the test shapes' K (multiples of 32) mapped to 256, 512 or 768.
int64_t cols_for(DType t, int64_t K) { return dtype_has_256_blocks(t) ? kQK * (K / kQ8Block % 3 + 1) : K; }

// The int8 kernels' chain for one output (matmul.h, Q8Rows), written out from the file's quantities: exact
// integer sums per block (per half for Q2_K, Q3_K, Q6_K), acc = fma(sum, dw * dx, acc), and for the types
// with a min acc = fma(sum of x's quants * dx, m, acc). K-quants (activations quantized per 256, xd equal
// within a super-block): per super-block u = fma(sum, d * sc, u) over its sub-blocks, u = fma(sum over
// sub-blocks of m * sum of x's quants, -dmin, u) for the types with mins, then acc = fma(u, dx, acc).
float int8_chain(DType t, const uint8_t* wrow, const int8_t* xq, const float* xd, int64_t K) {
  float acc = 0.0f, u = 0.0f;
  int64_t mins = 0;
  const int parts = dtype_scales_per_32(t), width = kQ8Block / parts;
  const bool kquant = dtype_is_kquant(t);
  for (int64_t b = 0; b < K / kQ8Block; b++) {
    Quants32 wb;
    block32(t, wrow, b, wb);
    const int8_t* x = xq + b * kQ8Block;
    for (int h = 0; h < parts; h++) {
      int32_t sum = 0, xsum = 0;
      for (int k = width * h; k < width * (h + 1); k++) sum += x[k] * wb.q[k], xsum += x[k];
      if (kquant) {
        u = std::fma(float(sum), wb.sd * float(wb.sc[h]), u);
        mins += int64_t(wb.sm[h]) * xsum;
        continue;
      }
      acc = std::fma(float(sum), wb.d[h] * xd[b], acc);
      if (dtype_has_min(t)) acc = std::fma(float(xsum) * xd[b], wb.m[h], acc);
    }
    if (kquant && b % 8 == 7) {
      EXPECT_LT(std::abs(mins), int64_t(1) << 24);
      if (dtype_has_min(t)) u = std::fma(float(mins), wb.smin, u);
      acc = std::fma(u, xd[b], acc);
      u = 0.0f;
      mins = 0;
    }
  }
  return acc;
}

// Which copy the SIMD kernels use: the row-major weights, fp32 panels, or panels in the weights' own type.
enum class Layout { RowMajor, PanelsF32, PanelsOwn };
const Layout kLayouts[] = {Layout::RowMajor, Layout::PanelsF32, Layout::PanelsOwn};
const char* layout_name(Layout l) {
  return l == Layout::RowMajor ? "row-major" : l == Layout::PanelsF32 ? "f32 panels" : "own-type panels";
}

Weights make_weights(DType t, int64_t N, int64_t K, uint64_t seed, Layout layout = Layout::RowMajor) {
  Weights out;
  auto f = randn(N * K, seed);
  out.bytes.resize(dtype_row_bytes(t, K) * N);
  for (int64_t n = 0; n < N; n++) quantize_row(t, &f[n * K], out.bytes.data() + n * dtype_row_bytes(t, K), K);
  out.w = WeightMatrix{t, out.bytes.data(), N, K};
  if (layout != Layout::RowMajor) {
    const DType pt = layout == Layout::PanelsF32 ? DType::F32 : t;
    out.packed = pack_panels(out.w, pt);
    out.w.packed = out.packed.data();
    out.w.packed_type = pt;
  }
  return out;
}

// y = x W^T in double precision from the dequantized weights.
std::vector<double> reference(const std::vector<float>& x, int64_t M, const WeightMatrix& w) {
  std::vector<float> row(static_cast<size_t>(w.cols));
  std::vector<double> y(static_cast<size_t>(M * w.rows));
  for (int64_t n = 0; n < w.rows; n++) {
    dequantize_row(w.type, w.row(n), row.data(), w.cols);
    for (int64_t m = 0; m < M; m++) {
      double s = 0;
      for (int64_t k = 0; k < w.cols; k++) s += double(x[m * w.cols + k]) * row[k];
      y[m * w.rows + n] = s;
    }
  }
  return y;
}

// The rows a matmul over w effectively multiplies: x itself, or for Q8_0 panels x quantized per block of 32
// and dequantized (see Q8Rows).
std::vector<float> effective_rows(const std::vector<float>& x, int64_t M, const WeightMatrix& w) {
  if (!(dtype_is_block_quantized(w.type) && w.packed_type == w.type)) return x;
  Q8Rows q;
  quantize_rows_q8(x.data(), M, w.cols, q, false, q8_group(w.type));
  std::vector<float> out(x.size());
  for (int64_t m = 0; m < M; m++)
    for (int64_t k = 0; k < w.cols; k++) out[m * w.cols + k] = q.row_q(m)[k] * q.row_d(m)[k / kQ8Block];
  return out;
}

class IsaTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "SKIPPED: CPU lacks " << isa_name(GetParam());
    saved_ = active_isa();
    set_active_isa(GetParam());
  }
  void TearDown() override {
    set_active_isa(saved_);
    set_num_threads(0);
  }
  Isa saved_ = Isa::Scalar;
};

TEST_P(IsaTest, MatmulMatchesReferenceAllTypes) {
  for (Layout layout : kLayouts)
    for (DType t : kTypes) {
      for (auto [M, N, K] :
           {std::tuple<int64_t, int64_t, int64_t>{1, 37, 64}, {5, 29, 96}, {13, 50, 160}, {33, 12, 32}}) {
        if (!dtype_is_block_quantized(t) && K == 96) K = 100;  // exercise the k tail for element types
        K = cols_for(t, K);
        Weights w = make_weights(t, N, K, 7, layout);
        auto x = randn(M * K, 11);
        std::vector<float> y(static_cast<size_t>(M * N));
        matmul(x.data(), M, w.w, y.data());
        auto ref = reference(effective_rows(x, M, w.w), M, w.w);
        for (size_t i = 0; i < y.size(); i++)
          ASSERT_NEAR(y[i], ref[i], 1e-4 * std::sqrt(double(K)) * 4)
              << dtype_name(t) << " " << layout_name(layout) << " M=" << M << " i=" << i;
      }
    }
}

// The panel layout's promise, exactly: every output is the FMA chain acc = fma(x[k], w[k], acc) over
// k = 0..K-1 from 0 (Q8_0 in its own panels: exact integer block sums of quantized rows, then
// acc = fma(sum, dw * dx, acc), on every instruction set including the scalar one), for any batch size and
// any number of output features (padding included), in both fp32 panels and panels of the weights' own type.
TEST_P(IsaTest, PanelMatmulIsTheSequentialFmaChain) {
  for (Layout layout : {Layout::PanelsF32, Layout::PanelsOwn})
    for (DType t : kTypes) {
      // Q8_0 / Q4_0 in their own panels: integer block sums of the quantized rows, scaled once per block.
      const bool q8_blocks = dtype_is_block_quantized(t) && layout == Layout::PanelsOwn;
      if (GetParam() == Isa::Scalar && !q8_blocks) continue;  // the scalar kernels do not use fp32 panels
      for (auto [M, N, K] :
           {std::tuple<int64_t, int64_t, int64_t>{1, 37, 64}, {6, 9, 32}, {11, 70, 160}, {4, 200, 96}, {2, 50, 32}, {15, 90, 64}, {13, 40, 96},
            {5, 7300, 32}}) {  // the last spans several cache-sized panel groups (run_panels)
        K = cols_for(t, K);
        Weights w = make_weights(t, N, K, 21, layout);
        auto x = randn(M * K, 23);
        std::vector<float> y(static_cast<size_t>(M * N)), row(static_cast<size_t>(K));
        matmul(x.data(), M, w.w, y.data());
        std::vector<int8_t> xq(static_cast<size_t>(K));
        std::vector<float> xd(static_cast<size_t>(K / kQ8Block));
        std::vector<int32_t> bias(xd.size());
        for (int64_t n = 0; n < N; n++) {
          dequantize_row(t, w.w.row(n), row.data(), K);
          for (int64_t m = 0; m < M; m++) {
            float acc = 0.0f;
            if (q8_blocks) {
              scalar::quantize_row_q8(&x[m * K], K, xq.data(), xd.data(), bias.data(), q8_group(t));
              acc = int8_chain(t, w.w.row(n), xq.data(), xd.data(), K);
            } else {
              for (int64_t k = 0; k < K; k++) acc = std::fma(x[m * K + k], row[k], acc);
            }
            ASSERT_EQ(y[m * N + n], acc)
                << dtype_name(t) << " " << layout_name(layout) << " M=" << M << " m=" << m << " n=" << n;
          }
        }
      }
    }
}

// Quantizing activations: the SIMD code gives the scalar definition's bits, including ties, tiny, zero,
// infinite and NaN blocks; each quant is the nearest multiple of the scale (|x - q d| <= d / 2); the bias
// undoes the weights' +128.
TEST_P(IsaTest, ActivationQuantizationIsTheScalarDefinition) {
  const int64_t K = 32 * 12;
  auto x = randn(K, 31);
  for (int i = 0; i < 32; i++) x[i] = 0.0f;                              // block 0: zero
  for (int i = 32; i < 64; i++) x[i] *= 1e-31f;                          // block 1: below kQ8MinAbsMax
  x[70] = INFINITY;                                                      // block 2: inf
  x[100] = NAN;                                                          // block 3: NaN
  for (int i = 128; i < 160; i++) x[i] = float(i - 144) * 0.5f;          // block 4: a ramp
  x[160] = 127.0f;                                                       // block 5: scale 1, with ties
  x[161] = 2.5f;
  x[162] = 3.5f;
  x[163] = -2.5f;
  for (int i = 192; i < 224; i++) x[i] = -std::fabs(x[i]) - 1.0f;        // block 6: all negative
  Q8Rows got;
  quantize_rows_q8(x.data(), 1, K, got);
  std::vector<int8_t> q(K);
  std::vector<float> d(K / 32);
  std::vector<int32_t> bias(K / 32);
  scalar::quantize_row_q8(x.data(), K, q.data(), d.data(), bias.data());
  for (int64_t k = 0; k < K; k++) ASSERT_EQ(got.q[k], q[k]) << "k=" << k;
  for (int64_t b = 0; b < K / 32; b++) {
    if (b == 2 || b == 3) {
      EXPECT_TRUE(std::isnan(got.d[b]) && std::isnan(d[b])) << "a block with inf or NaN has a NaN scale";
    } else {
      ASSERT_EQ(got.d[b], d[b]) << "b=" << b;
    }
    ASSERT_EQ(got.bias[b], bias[b]) << "b=" << b;
    int32_t sum = 0;
    for (int i = 0; i < 32; i++) {
      const float xi = x[b * 32 + i];
      sum += q[b * 32 + i];
      if (b >= 4) {
        ASSERT_LE(std::fabs(double(xi) - double(q[b * 32 + i]) * d[b]), d[b] * 0.5 * (1 + 1e-5)) << b * 32 + i;
      }
    }
    EXPECT_EQ(bias[b], -128 * sum);
  }
  EXPECT_EQ(d[0], 0.0f);
  EXPECT_EQ(d[1], 0.0f);
  EXPECT_EQ(q[160], 127);
  EXPECT_EQ(q[161], 2);  // ties go to the even neighbour
  EXPECT_EQ(q[162], 4);
  EXPECT_EQ(q[163], -2);
}

// Per 256 (the K-quants' activations): one scale per super-block, the largest |x| of all its blocks, the
// SIMD code gives the scalar definition's bits, and inf or NaN anywhere makes the whole super-block NaN.
TEST_P(IsaTest, ActivationQuantizationPer256) {
  const int64_t K = 256 * 3;
  auto x = randn(K, 37);
  x[40] = 9.0f;          // super-block 0's largest, in its second block
  x[256 + 200] = NAN;    // super-block 1: not finite
  for (int i = 512; i < 768; i++) x[i] = 0.0f;  // super-block 2: zero
  Q8Rows got;
  quantize_rows_q8(x.data(), 1, K, got, false, 256);
  std::vector<int8_t> q(K);
  std::vector<float> d(K / 32);
  std::vector<int32_t> bias(K / 32);
  scalar::quantize_row_q8(x.data(), K, q.data(), d.data(), bias.data(), 256);
  for (int64_t k = 0; k < K; k++) ASSERT_EQ(got.q[k], q[k]) << "k=" << k;
  for (int64_t b = 0; b < K / 32; b++) {
    ASSERT_EQ(got.bias[b], bias[b]) << "b=" << b;
    if (b / 8 == 1) {
      EXPECT_TRUE(std::isnan(got.d[b]) && std::isnan(d[b])) << "b=" << b;
      continue;
    }
    ASSERT_EQ(got.d[b], d[b]) << "b=" << b;
    ASSERT_EQ(d[b], b < 8 ? 9.0f / 127.0f : 0.0f) << "b=" << b;
    for (int i = 0; i < 32; i++)
      ASSERT_LE(std::fabs(double(x[b * 32 + i]) - double(q[b * 32 + i]) * d[b]), d[b] * 0.5 * (1 + 1e-5));
  }
  EXPECT_EQ(q[40], 127);
  EXPECT_THROW(quantize_rows_q8(x.data(), 1, 32 * 9, got, false, 256), std::logic_error);
}

// Q8_0 panels on every instruction set give the same bits, also for quants of -128 (possible in files)
// and a NaN activation, which must reach the outputs it feeds.
TEST(Q8Panels, AllInstructionSetsAgreeAndNaNPropagates) {
  for (DType type : kTypes) {
  if (!dtype_is_block_quantized(type)) continue;
  SCOPED_TRACE(dtype_name(type));
  const int64_t N = 45, K = cols_for(type, 128), M = 9;
  Weights w = make_weights(type, N, K, 41);
  if (type == DType::Q8_0) {
    auto* blocks = reinterpret_cast<BlockQ8_0*>(w.bytes.data());
    for (int64_t i = 0; i < N * K / kQ8Block; i += 3) blocks[i].qs[i % kQ8Block] = -128;
  }
  PageBuffer packed = pack_panels(w.w, type);
  w.w.packed = packed.data();
  w.w.packed_type = type;
  auto x = randn(M * K, 43);
  x[5 * K + 40] = NAN;  // row 5
  const Isa saved = active_isa();
  std::vector<float> first;
  const bool vnni = has_avx512_vnni();
  // The last case: AVX-512 as on a CPU without VNNI (its float kernels, the AVX2 integer tiles).
  for (int c = 0; c < 5; c++) {
    const Isa isa = c == 4 ? Isa::Avx512 : std::array{Isa::Scalar, Isa::Avx2, Isa::Avx2Vnni, Isa::Avx512}[c];
    if (!isa_supported(isa)) {
      std::printf("SKIPPED: CPU lacks %s\n", isa_name(isa).c_str());
      continue;
    }
    set_active_isa(isa);
    set_avx512_vnni(c == 4 ? false : vnni);
    std::vector<float> y(static_cast<size_t>(M * N));
    matmul(x.data(), M, w.w, y.data());
    set_avx512_vnni(vnni);
    for (int64_t n = 0; n < N; n++) ASSERT_TRUE(std::isnan(y[5 * N + n])) << isa_name(isa) << " n=" << n;
    if (first.empty()) first = y;
    for (size_t i = 0; i < y.size(); i++)
      if (!std::isnan(first[i])) {
        ASSERT_EQ(y[i], first[i]) << isa_name(isa) << " i=" << i;
      }
  }
  set_active_isa(saved);
  }
}

// The property that makes parallel decoding exactly lossless: a row's result does not depend on the
// batch around it, its index in the batch, or the thread count.
TEST_P(IsaTest, MatmulBatchInvariant) {
  for (Layout layout : kLayouts)
    for (DType t : kTypes) {
      const int64_t N = 77, K = dtype_has_256_blocks(t) ? 256 : dtype_is_block_quantized(t) ? 128 : 131;
      Weights w = make_weights(t, N, K, 3, layout);
      const int64_t Mmax = 70;
      auto x = randn(Mmax * K, 5);
      std::vector<float> single(static_cast<size_t>(Mmax * N));
      set_num_threads(1);
      for (int64_t m = 0; m < Mmax; m++) matmul(&x[m * K], 1, w.w, &single[m * N]);
      for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        for (int64_t M : {2, 3, 4, 5, 8, 17, 33, 70}) {
          for (int64_t off : {int64_t(0), Mmax - M}) {
            std::vector<float> y(static_cast<size_t>(M * N));
            matmul(&x[off * K], M, w.w, y.data());
            for (int64_t i = 0; i < M * N; i++)
              ASSERT_EQ(y[i], single[off * N + i]) << dtype_name(t) << " " << layout_name(layout)
                                                   << " M=" << M << " off=" << off << " threads=" << threads;
          }
        }
      }
    }
}

// Several matrices over the same rows in one parallel loop: each output is the bits of its own matmul
// (mixed int8 panel types, pieces that end one matrix and start the next, any thread count), and a mix
// with a matrix that is not int8 panels falls back to one matmul each.
TEST_P(IsaTest, SharedInputMatmulIsEachMatmul) {
  const int64_t K = 512;
  const std::vector<std::vector<std::pair<DType, int64_t>>> groups = {
      {{DType::Q4_K, 200}, {DType::Q6_K, 24}, {DType::Q8_0, 9}},  // like q, k, v of a model in a K-quant mix
      {{DType::Q4_0, 96}, {DType::Q4_0, 96}},                    // like gate, up
      {{DType::Q8_0, 40}, {DType::F32, 33}}};                    // not all int8 panels: one matmul each
  for (const auto& group : groups) {
    std::vector<Weights> ws;
    for (size_t j = 0; j < group.size(); j++)
      ws.push_back(make_weights(group[j].first, group[j].second, K, 40 + j, Layout::PanelsOwn));
    for (int threads : {1, 2, 3}) {
      set_num_threads(threads);
      for (int64_t M : {1, 2, 5, 9}) {
        auto x = randn(M * K, 50 + M);
        std::vector<std::vector<float>> alone(group.size()), shared(group.size());
        for (size_t j = 0; j < group.size(); j++) {
          alone[j].resize(size_t(M * ws[j].w.rows));
          shared[j].assign(alone[j].size(), -1.0f);
          matmul(x.data(), M, ws[j].w, alone[j].data());
        }
        if (group.size() == 2)
          matmul_shared_input(x.data(), M, {{&ws[0].w, shared[0].data()}, {&ws[1].w, shared[1].data()}});
        else
          matmul_shared_input(x.data(), M,
                              {{&ws[0].w, shared[0].data()}, {&ws[1].w, shared[1].data()}, {&ws[2].w, shared[2].data()}});
        for (size_t j = 0; j < group.size(); j++)
          for (size_t i = 0; i < alone[j].size(); i++)
            ASSERT_EQ(shared[j][i], alone[j][i]) << dtype_name(group[j].first) << " M=" << M << " threads=" << threads
                                                 << " i=" << i;
      }
    }
  }
}

TEST_P(IsaTest, RowOpsMatchScalarAndAreRowLocal) {
  for (int64_t n : {8, 13, 64, 172}) {
    auto x = randn(n, 1), g = randn(n, 2), up = randn(n, 3);
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    rmsnorm(x.data(), g.data(), n, 1e-5f, a.data());
    scalar::rmsnorm(x.data(), g.data(), n, 1e-5f, b.data());
    for (int64_t i = 0; i < n; i++) ASSERT_NEAR(a[i], b[i], 1e-5 * std::fabs(b[i]) + 1e-6);
    a = x, b = x;
    silu_mul(a.data(), up.data(), n);
    scalar::silu_mul(b.data(), up.data(), n);
    for (int64_t i = 0; i < n; i++) ASSERT_NEAR(a[i], b[i], 1e-5 * std::fabs(b[i]) + 1e-6);
  }
}

// GeGLU and the soft-cap (vector tanh on the SIMD sets, std::tanh on scalar) against their definitions in
// double precision: both branches of the vector tanh (|x| <= 0.625 polynomial, exp form above) and the
// boundary, tiny and huge values, infinities and NaN, lengths with a vector tail.
TEST_P(IsaTest, GeluAndSoftcapMatchTheirDefinitions) {
  std::vector<float> x;
  for (int i = -4000; i <= 4000; i++) x.push_back(static_cast<float>(i) * 0.01f);  // -40 .. 40
  for (float v : {0.625f, -0.625f, 0.62500006f, 1e-3f, -1e-7f, 1e-30f, 0.0f, -0.0f, 1e6f, -1e30f})
    x.push_back(v);
  x.push_back(INFINITY), x.push_back(-INFINITY);
  const auto up = randn(static_cast<int64_t>(x.size()), 5);
  const double k = std::sqrt(2.0 / M_PI);
  for (int64_t n : {int64_t(x.size()), int64_t(x.size()) - 3}) {
    std::vector<float> capped(x.begin(), x.begin() + n), gated = capped;
    softcap(capped.data(), n, 30.0f);
    gelu_tanh_mul(gated.data(), up.data(), n);
    for (int64_t i = 0; i < n; i++) {
      const double v = x[i];
      const double want_cap = 30.0 * std::tanh(v / 30.0);
      ASSERT_NEAR(capped[i], want_cap, 1e-6 * std::fabs(want_cap) + 1e-30) << "x=" << v;
      if (!std::isfinite(v)) continue;  // gelu(+-inf) is inf * up or 0 * inf: not compared
      const double want_gelu = 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v))) * up[i];
      // 1 + tanh cancels for large negative x (in float as in any float implementation): an absolute term
      ASSERT_NEAR(gated[i], want_gelu, 1e-5 * std::fabs(want_gelu) + 2e-7 * std::fabs(v * up[i])) << "x=" << v;
    }
  }
  float nan[9] = {NAN, 1, 1, 1, 1, 1, 1, 1, NAN};
  softcap(nan, 9, 30.0f);
  EXPECT_TRUE(std::isnan(nan[0]) && std::isnan(nan[8]) && !std::isnan(nan[1]));
  // The SIMD sets run the vector kernels (not std::tanh): the same bits as calling them directly.
  if (GetParam() == Isa::Scalar) return;
  const int64_t n = int64_t(x.size()) - 2;  // the finite values
  std::vector<float> a(x.begin(), x.begin() + n), b = a, c = a, d = a;
  gelu_tanh_mul(a.data(), up.data(), n);
  avx2::gelu_tanh_mul(b.data(), up.data(), n);
  softcap(c.data(), n, 30.0f);
  avx2::softcap(d.data(), n, 30.0f);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), n * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(c.data(), d.data(), n * sizeof(float)));
}

// The vector argmax agrees with the scalar definition (lowest index on ties, NaN never wins) on lengths
// around the vector width, with ties, infinities and NaNs in every position class.
TEST_P(IsaTest, ArgmaxMatchesScalarDefinition) {
  Rng rng(11);
  for (int64_t n : {1, 7, 8, 9, 31, 512, 515}) {
    for (int trial = 0; trial < 200; trial++) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& e : x) e = static_cast<float>(rng.below(5)) - 2.0f;  // many ties
      const int specials = static_cast<int>(rng.below(4));
      for (int s = 0; s < specials; s++) {
        const float pick[] = {NAN, INFINITY, -INFINITY};
        x[rng.below(static_cast<uint32_t>(n))] = pick[rng.below(3)];
      }
      if (trial == 0) std::fill(x.begin(), x.end(), NAN);
      if (trial == 1) std::fill(x.begin(), x.end(), -INFINITY);
      ASSERT_EQ(argmax(x.data(), n), scalar::argmax(x.data(), n)) << "n=" << n << " trial=" << trial;
    }
  }
}

// Keys in the blocked cache layout (kernels/ops.h) from slot-major rows.
std::vector<float> blocked_keys(const std::vector<float>& rows, int n_slots, int hd) {
  std::vector<float> keys(static_cast<size_t>((n_slots + kKeyBlock - 1) / kKeyBlock * kKeyBlock * hd), 0.0f);
  for (int s = 0; s < n_slots; s++)
    for (int i = 0; i < hd; i++) keys[key_offset(s, i, hd)] = rows[s * hd + i];
  return keys;
}

TEST_P(IsaTest, AttentionMatchesReferenceAndDependsOnlyOnSlotList) {
  for (int hd : {8, 12, 16, 64}) {
    const int stride = 3 * hd, slots_total = 90;
    auto krows = randn(slots_total * hd, 4), v = randn(slots_total * stride, 5), q = randn(hd, 6);
    const auto keys = blocked_keys(krows, slots_total, hd);
    // whole blocks (0..23), a partial block, scattered slots
    std::vector<int32_t> slots;
    for (int s = 0; s < 24; s++) slots.push_back(s);
    for (int s : {25, 26, 29, 34, 40, 41, 42, 43, 44, 45, 46, 47, 55, 89}) slots.push_back(s);
    const int64_t n = static_cast<int64_t>(slots.size());
    std::vector<float> scores(attention_scratch(1, static_cast<int64_t>(slots.size()))), out(hd);
    attend_head(q.data(), keys.data(), v.data() + hd, stride, hd, slots.data(), n, 0.25f, scores.data(), out.data());
    // double-precision reference
    std::vector<double> s(slots.size());
    double mx = -1e30, sum = 0;
    for (size_t j = 0; j < slots.size(); j++) {
      double d = 0;
      for (int i = 0; i < hd; i++) d += double(q[i]) * krows[slots[j] * hd + i];
      s[j] = d * 0.25;
      mx = std::max(mx, s[j]);
    }
    for (auto& e : s) sum += (e = std::exp(e - mx));
    for (int i = 0; i < hd; i++) {
      double o = 0;
      for (size_t j = 0; j < slots.size(); j++) o += s[j] / sum * v[slots[j] * stride + hd + i];
      ASSERT_NEAR(out[i], o, 1e-5) << "hd=" << hd;
    }
    // The same keys and values under other slot numbers (shifted so that whole blocks become partial ones,
    // or packed so that scattered slots become whole blocks) give identical bits.
    for (int shift : {-1, 3}) {
      std::vector<float> k2(slots_total * hd * 2), v2(slots_total * stride * 2);
      std::vector<int32_t> moved(slots.size());
      for (size_t j = 0; j < slots.size(); j++) {
        moved[j] = shift < 0 ? static_cast<int32_t>(j) : slots[j] + shift;
        std::copy_n(&krows[slots[j] * hd], hd, &k2[moved[j] * hd]);
        std::copy_n(&v[slots[j] * stride], stride, &v2[moved[j] * stride]);
      }
      const auto keys2 = blocked_keys(k2, 2 * slots_total, hd);
      std::vector<float> out2(hd);
      attend_head(q.data(), keys2.data(), v2.data() + hd, stride, hd, moved.data(), n, 0.25f, scores.data(), out2.data());
      for (int i = 0; i < hd; i++) ASSERT_EQ(out[i], out2[i]) << "hd=" << hd << " shift=" << shift;
    }
  }
}

// A GQA group through attention together gives each head exactly what it gets alone.
TEST_P(IsaTest, AttentionGroupEqualsHeadByHead) {
  Rng rng(9);
  for (int hd : {8, 16, 64}) {
    // Long enough lists that the weighted sum is cut into ranges (kernels/ops_avx2.cpp) for every head_dim.
    const int slots_total = hd == 8 ? 700 : hd == 16 ? 400 : 120, stride = 3 * hd;
    auto krows = randn(slots_total * hd, 3), v = randn(slots_total * stride, 4);
    const auto keys = blocked_keys(krows, slots_total, hd);
    for (int heads : {1, 2, 3, 4, 7, 8}) {
      auto q = randn(heads * hd, 10 + heads);
      std::vector<int32_t> slots;
      for (int s = 0; s < slots_total - 50 + heads; s++) slots.push_back(s);
      for (int s = slots_total - 30; s < slots_total; s += 1 + static_cast<int>(rng.below(5))) slots.push_back(s);
      const int64_t n = static_cast<int64_t>(slots.size());
      std::vector<float> scores(attention_scratch(heads, n)), group(heads * hd), one(hd);
      attend_group(q.data(), heads, keys.data(), v.data() + hd, stride, hd, slots.data(), n, 0.2f, scores.data(), group.data());
      for (int h = 0; h < heads; h++) {
        attend_head(q.data() + h * hd, keys.data(), v.data() + hd, stride, hd, slots.data(), n, 0.2f, scores.data(), one.data());
        for (int i = 0; i < hd; i++) ASSERT_EQ(group[h * hd + i], one[i]) << "hd=" << hd << " heads=" << heads << " h=" << h;
      }
    }
  }
}

// Keys and values stored as fp16 (an F16 KV cache) give exactly the result of the fp32 path on the same,
// rounded, values: the kernels only convert on load.
TEST_P(IsaTest, AttentionOverFp16StorageIsTheFp32PathOnRoundedValues) {
  Rng rng(4);
  for (int hd : {8, 12, 16, 64, 128}) {
    const int slots_total = 150, stride = hd;
    auto krows = randn(slots_total * hd, 7), v = randn(slots_total * stride, 8);
    auto round16 = [](std::vector<float>& x) {
      for (float& e : x) e = f16_to_f32(f32_to_f16(e));
    };
    round16(krows);
    round16(v);
    const auto keys = blocked_keys(krows, slots_total, hd);
    std::vector<uint16_t> keys16(keys.size()), v16(v.size());
    for (size_t i = 0; i < keys.size(); i++) keys16[i] = f32_to_f16(keys[i]);
    for (size_t i = 0; i < v.size(); i++) v16[i] = f32_to_f16(v[i]);
    for (int heads : {1, 3, 8}) {
      auto q = randn(heads * hd, 9 + heads);
      std::vector<int32_t> slots;
      for (int s = 0; s < 100 + heads; s++) slots.push_back(s);
      for (int s = 110; s < slots_total; s += 1 + static_cast<int>(rng.below(4))) slots.push_back(s);
      const int64_t n = static_cast<int64_t>(slots.size());
      std::vector<float> scores(attention_scratch(heads, n)), a(heads * hd), b(heads * hd);
      attend_group(q.data(), heads, keys.data(), v.data(), stride, hd, slots.data(), n, 0.2f, scores.data(), a.data());
      attend_group(q.data(), heads, keys16.data(), v16.data(), stride, hd, slots.data(), n, 0.2f, scores.data(), b.data());
      for (int i = 0; i < heads * hd; i++) ASSERT_EQ(a[i], b[i]) << "hd=" << hd << " heads=" << heads;
    }
  }
}

// The AVX-512 attention (16-lane scores and exponentials) gives the AVX2 bits, for any list length and
// any mix of whole and partial key blocks, soft-capped or not, so machines with and without AVX-512 decode alike.
TEST(Attention, Avx512MatchesAvx2Bitwise) {
  if (!isa_supported(Isa::Avx512)) GTEST_SKIP() << "SKIPPED: CPU lacks avx512";
  Rng rng(5);
  for (int hd : {8, 16, 32, 48, 64, 96, 128, 256}) {  // 48: the scalar fallback of both
    const int slots_total = 200, stride = 2 * hd;
    auto krows = randn(slots_total * hd, 7), v = randn(slots_total * stride, 8), q = randn(hd, 9);
    for (float& e : q) e *= 3.0f;  // sharper softmax: some exponentials underflow
    const auto keys = blocked_keys(krows, slots_total, hd);
    for (int trial = 0; trial < 40; trial++) {
      std::vector<int32_t> slots;
      const int prefix = static_cast<int>(rng.below(150));
      for (int s = 0; s < prefix; s++) slots.push_back(s);
      for (int s = prefix; s < slots_total; s++)
        if (rng.below(4) == 0) slots.push_back(s);
      if (slots.empty()) slots.push_back(0);
      const int64_t n = static_cast<int64_t>(slots.size());
      const int heads = 1 + trial % 9;  // up to 9: several passes of 4 heads (AVX-512) or 2 (AVX2)
      std::vector<float> scores(attention_scratch(heads, n)), a(hd * heads), b(hd * heads), qs(hd * heads);
      for (int h = 0; h < heads; h++)
        for (int i = 0; i < hd; i++) qs[h * hd + i] = q[i] * (1.0f - 0.3f * h);
      const float cap = trial % 2 ? 2.0f : 0.0f;  // gemma2's soft-capped scores on every other trial
      const int64_t scalar_before = avx2::attend_values_scalar_calls();
      avx2::attend_group(qs.data(), heads, keys.data(), v.data(), stride, hd, slots.data(), n, 0.3f, scores.data(), a.data(),
                         cap);
      avx512::attend_group(qs.data(), heads, keys.data(), v.data(), stride, hd, slots.data(), n, 0.3f, scores.data(),
                           b.data(), cap);
      for (int i = 0; i < hd * heads; i++)
        ASSERT_EQ(a[i], b[i]) << "hd=" << hd << " n=" << n << " heads=" << heads << " cap=" << cap;
      // Equal bits would not show both sets falling back to their scalar loop: count it.
      ASSERT_EQ(avx2::attend_values_scalar_calls() - scalar_before, hd == 48 ? 2 : 0) << "hd=" << hd;
    }
  }
}

// Every head size of a supported architecture (TinyLlama / Llama 64, phi3 96, Llama 3 / Qwen 128, gemma
// 256, and the small test shapes) runs AVX2's vector weighted sums, not the scalar loop.
TEST(Attention, Avx2WeightedSumsAreVectorForModelHeadSizes) {
  if (!isa_supported(Isa::Avx2)) GTEST_SKIP() << "SKIPPED: CPU lacks avx2";
  for (int hd : {8, 16, 32, 48, 64, 96, 128, 256}) {
    const int n = 20, heads = 2;
    const auto krows = randn(n * hd, 3), v = randn(n * hd, 4), q = randn(hd * heads, 5);
    const auto keys = blocked_keys(krows, n, hd);
    std::vector<int32_t> slots(n);
    for (int s = 0; s < n; s++) slots[s] = s;
    std::vector<float> scores(attention_scratch(heads, n)), out(hd * heads);
    const int64_t before = avx2::attend_values_scalar_calls();
    avx2::attend_group(q.data(), heads, keys.data(), v.data(), hd, hd, slots.data(), n, 0.3f, scores.data(), out.data());
    EXPECT_EQ(avx2::attend_values_scalar_calls() - before, hd == 48 ? 1 : 0) << "hd=" << hd;  // 48: no model has it
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, IsaTest, ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx2Vnni, Isa::Avx512),
                         [](const auto& info) { return isa_name(info.param); });

// Q4_0 as GGML lays it out: byte j holds weight j (low nibble) and j + 16 (high), weight = d * (q - 8); the
// reference quantizer maps the value of largest magnitude to -8 exactly and every weight within one step.
TEST(Dtype, Q4_0LayoutAndQuantization) {
  BlockQ4_0 blk{};
  blk.d = f32_to_f16(0.5f);
  for (int j = 0; j < 16; j++) blk.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  float out[32];
  dequantize_row(DType::Q4_0, &blk, out, 32);
  for (int j = 0; j < 16; j++) {
    EXPECT_EQ(out[j], 0.5f * (j - 8));
    EXPECT_EQ(out[j + 16], 0.5f * (7 - j));
  }
  auto x = randn(32 * 20, 77);
  std::vector<BlockQ4_0> q(20);
  quantize_row(DType::Q4_0, x.data(), q.data(), 32 * 20);
  std::vector<float> back(32 * 20);
  dequantize_row(DType::Q4_0, q.data(), back.data(), 32 * 20);
  for (int b = 0; b < 20; b++) {
    int big = 0;
    for (int j = 1; j < 32; j++)
      if (std::fabs(x[b * 32 + j]) > std::fabs(x[b * 32 + big])) big = j;
    const float d = f16_to_f32(q[b].d);
    EXPECT_NEAR(back[b * 32 + big], x[b * 32 + big], std::fabs(x[b * 32 + big]) * 2e-3);  // -8 * d (fp16 d)
    for (int j = 0; j < 32; j++) ASSERT_LE(std::fabs(back[b * 32 + j] - x[b * 32 + j]), std::fabs(d) * 1.01) << b << " " << j;
  }
}

TEST(Dtype, HalfConversionsRoundTrip) {
  for (uint32_t h = 0; h < 65536; h++) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_f16(f), h) << h;
  }
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds to inf
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);  // tie to even
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(f32_to_bf16(3.140625f)), 3.140625f);
}

TEST(Ops, ArgmaxLowestIndexOnTies) {
  std::vector<float> x = {1, 3, 3, -1};
  EXPECT_EQ(argmax(x.data(), 4), 1);
}

}  // namespace
}  // namespace jf
