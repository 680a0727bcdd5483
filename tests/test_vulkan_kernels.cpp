// The Vulkan backend's matrix kernels against a CPU reference, per weight type and for every kernel variant
// (FMAs: a thread per output below 256 inputs, a workgroup per 4 outputs from 256; fp16 tiles with FMAs, and
// on the device's matrix units where it has them), and their batch invariance: a row's result is the same
// bits in any tile of any row count.
#include <cmath>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "kernels/dtype.h"
#include "vulkan/buffer.h"
#include "vulkan/kernels.h"
#include "vulkan/matmul_grid.h"
#include "vulkan/recorder.h"
#include "vulkan_support.h"

namespace jf {
namespace {

using vulkan::Buffer;

struct Fixture {
  explicit Fixture(int device) : ctx(device), kernels(ctx) {}
  vulkan::Context ctx;
  vulkan::Kernels kernels;
};

std::vector<float> random_floats(size_t n, uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = r.uniform() * 2.0f - 1.0f;
  return v;
}

// y = x W^T on the device for the M rows of x starting at row `first` (a Host buffer, so no staging); with a
// gain, x's rows RMS-normalised by it first (the norm folded into the product).
std::vector<float> device_matmul(Fixture& f, DType t, const std::vector<uint8_t>& w, int64_t N, int64_t K, const std::vector<float>& x,
                                 uint32_t first, uint32_t M, vulkan::MatrixMath math, const std::vector<float>* gain = nullptr) {
  Buffer wb(f.ctx, (w.size() + 3) / 4 * 4, Buffer::Kind::Host), xb(f.ctx, x.size() * 4, Buffer::Kind::Host), yb(f.ctx, M * N * 4, Buffer::Kind::Host);
  Buffer gb(f.ctx, gain ? gain->size() * 4 : 16, Buffer::Kind::Host);
  std::memcpy(wb.mapped(), w.data(), w.size());
  std::memcpy(xb.mapped(), x.data(), x.size() * 4);
  if (gain) std::memcpy(gb.mapped(), gain->data(), gain->size() * 4);
  const vulkan::MatmulGrid g = vulkan::matmul_grid(uint32_t(N), uint32_t(K), M, 256, math);
  struct {
    uint32_t M, N, K, x_off, x_stride, y_off, y_stride, accumulate, norm;
    float eps;
  } p{M, uint32_t(N), uint32_t(K), uint32_t(first * K), uint32_t(K), 0, uint32_t(N), 0, gain ? 1u : 0u, 1e-5f};
  vulkan::Recorder rec(f.ctx);
  rec.begin();
  rec.dispatch(f.kernels.get(vulkan::matmul_kernel_prefix(g, math) + dtype_name(t), 4), {xb.view(), yb.view(), wb.view(), gb.view()}, p,
               g.x, g.y, g.z);
  rec.finish();
  const float* y = static_cast<const float*>(yb.mapped());
  return std::vector<float>(y, y + M * N);
}

class VulkanMatmul : public ::testing::TestWithParam<std::tuple<DType, int>> {};

float round_f16(float v) { return f16_to_f32(f32_to_f16(v)); }

TEST_P(VulkanMatmul, MatchesTheDequantizedReferenceAndIsBatchInvariant) {
  JF_VULKAN_DEVICE(device);
  const auto [type, K] = GetParam();
  const int64_t N = 70, M = 19;  // N past a workgroup of outputs and not a multiple of 4; M over 3 tiles of 8, 2 of 16
  Fixture f(device);
  const std::vector<float> wf = random_floats(static_cast<size_t>(N * K), 7);
  const size_t row_bytes = dtype_row_bytes(type, K);
  std::vector<uint8_t> w(row_bytes * N);
  for (int64_t n = 0; n < N; n++) quantize_row(type, &wf[n * K], &w[n * row_bytes], K);
  const std::vector<float> x = random_floats(static_cast<size_t>(M * K), 9);
  for (vulkan::MatrixMath math : test::matrix_maths(device)) {
    const std::string what = dtype_name(type) + " K=" + std::to_string(K) + " " + vulkan::matrix_math_name(math);
    const bool fp16 = math != vulkan::MatrixMath::Fma;
    const std::vector<float> y = device_matmul(f, type, w, N, K, x, 0, M, math);
    // The FMA kernels sum exact fp32 products; the tiles fp16-rounded weights and inputs (a device may round
    // to nearest or toward zero, so the reference rounds to nearest and allows the difference).
    std::vector<float> row(static_cast<size_t>(K));
    for (int64_t n = 0; n < N; n++) {
      dequantize_row(type, &w[n * row_bytes], row.data(), K);
      for (int64_t m = 0; m < M; m++) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < K; k++) {
          const float xv = x[m * K + k], wv = row[k];
          ref += fp16 ? double(round_f16(xv)) * round_f16(wv) : double(xv) * wv;
          mag += std::fabs(double(xv) * wv);
        }
        ASSERT_NEAR(y[m * N + n], ref, (fp16 ? 2e-3 : 2e-6) * mag + 1e-6) << what << " row " << m << " output " << n;
      }
    }
    // Each row again alone, and rows 3..9 and 5..17 as batches (other tiles, other neighbours): the same bits.
    for (uint32_t m : {0u, 5u, 10u, 18u}) {
      const std::vector<float> alone = device_matmul(f, type, w, N, K, x, m, 1, math);
      ASSERT_EQ(0, std::memcmp(alone.data(), &y[m * N], N * 4)) << what << " row " << m << " alone";
    }
    for (auto [first, count] : {std::pair<uint32_t, uint32_t>{3, 7}, {5, 13}}) {
      const std::vector<float> part = device_matmul(f, type, w, N, K, x, first, count, math);
      ASSERT_EQ(0, std::memcmp(part.data(), &y[first * N], count * N * 4)) << what << " rows " << first << ".." << first + count - 1;
    }
    // The RMSNorm before it folded in: the normalised rows' product, the same bits alone and in batches.
    const std::vector<float> g = random_floats(static_cast<size_t>(K), 11);
    const std::vector<float> yn = device_matmul(f, type, w, N, K, x, 0, M, math, &g);
    for (int64_t m = 0; m < M; m++) {
      double ss = 0;
      for (int64_t k = 0; k < K; k++) ss += double(x[m * K + k]) * x[m * K + k];
      const double inv = 1.0 / std::sqrt(ss / double(K) + 1e-5);
      for (int64_t n = 0; n < N; n++) {
        dequantize_row(type, &w[n * row_bytes], row.data(), K);
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < K; k++) {
          const double xv = double(x[m * K + k]) * g[k] * inv;
          ref += xv * row[k];
          mag += std::fabs(xv * row[k]);
        }
        ASSERT_NEAR(yn[m * N + n], ref, (fp16 ? 2e-3 : 2e-6) * mag + 1e-6) << what << " normed, row " << m << " output " << n;
      }
    }
    for (uint32_t m : {0u, 10u, 18u})
      ASSERT_EQ(0, std::memcmp(device_matmul(f, type, w, N, K, x, m, 1, math, &g).data(), &yn[m * N], N * 4)) << what << " normed, row " << m;
    const std::vector<float> part = device_matmul(f, type, w, N, K, x, 5, 13, math, &g);
    ASSERT_EQ(0, std::memcmp(part.data(), &yn[5 * N], 13 * N * 4)) << what << " normed, rows 5..17";
  }
}

std::vector<std::tuple<DType, int>> matmul_cases() {
  std::vector<std::tuple<DType, int>> c;
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q4_K,
                  DType::Q5_K, DType::Q6_K})
    for (int K : {t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K ? 256 : 128, 2304})
      c.emplace_back(t, K);  // 128: a thread per output; 256: one step of a workgroup per 4 outputs; 2304: 9 steps
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_1}) c.emplace_back(t, 288);  // a last step of one unit
  c.emplace_back(DType::F32, 100);                     // float types need no whole units: serial
  c.emplace_back(DType::F32, 301);                     // ... nor whole groups of 4: split, unaligned rows
  c.emplace_back(DType::F16, 258);
  return c;
}

INSTANTIATE_TEST_SUITE_P(Types, VulkanMatmul, ::testing::ValuesIn(matmul_cases()), [](const auto& info) {
  return dtype_name(std::get<0>(info.param)) + "_K" + std::to_string(std::get<1>(info.param));
});

// Embedding rows come out as the CPU dequantizes them.
TEST(VulkanGetRows, MatchesDequantizeRowPerType) {
  JF_VULKAN_DEVICE(device);
  Fixture f(device);
  const int64_t K = 512, rows = 9;
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q4_K,
                  DType::Q5_K, DType::Q6_K}) {
    const std::vector<float> wf = random_floats(static_cast<size_t>(rows * K), 3);
    const size_t rb = dtype_row_bytes(t, K);
    Buffer wb(f.ctx, rb * rows, Buffer::Kind::Host), ids(f.ctx, 16, Buffer::Kind::Host), out(f.ctx, 2 * K * 4, Buffer::Kind::Host);
    for (int64_t r = 0; r < rows; r++) quantize_row(t, &wf[r * K], static_cast<uint8_t*>(wb.mapped()) + r * rb, K);
    const int32_t pick[2] = {7, 2};
    std::memcpy(ids.mapped(), pick, sizeof pick);
    struct {
      uint32_t n_rows, K, rows_off, out_off;
      float scale;
    } p{2, uint32_t(K), 0, 0, 1.0f};
    vulkan::Recorder rec(f.ctx);
    rec.begin();
    rec.dispatch(f.kernels.get("get_rows_" + dtype_name(t), 3), {ids.view(), out.view(), wb.view()}, p, 2);
    rec.finish();
    std::vector<float> ref(static_cast<size_t>(K));
    for (int i = 0; i < 2; i++) {
      dequantize_row(t, static_cast<const uint8_t*>(wb.mapped()) + pick[i] * rb, ref.data(), K);
      const float* got = static_cast<const float*>(out.mapped()) + i * K;
      for (int64_t k = 0; k < K; k++) ASSERT_NEAR(got[k], ref[k], 1e-6f * (1 + std::fabs(ref[k]))) << dtype_name(t) << " k " << k;
    }
  }
}

}  // namespace
}  // namespace jf
