// The Vulkan backend's matrix kernels against a CPU reference, per weight type and for every kernel variant
// (FMAs: a thread per output below 256 inputs, a workgroup per 4 outputs from 256; fp16 tiles with FMAs, and
// on the device's matrix units where it has them), and their batch invariance: a row's result is the same
// bits in any tile of any row count.
#include <algorithm>
#include <set>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/rng.h"
#include "kernels/dtype.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "vulkan/buffer.h"
#include "vulkan/kernels.h"
#include "vulkan/matmul_grid.h"
#include "vulkan/recorder.h"
#include "vulkan/tile_probe.h"
#include "vulkan_matmul_support.h"
#include "vulkan_support.h"

namespace jf {
namespace {

using vulkan::Buffer;

using test::Fixture;
using test::device_matmul;
using test::random_floats;
using test::round_f16;

class VulkanMatmul : public ::testing::TestWithParam<std::tuple<DType, int>> {};

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
  const vulkan::MatmulKernel kernel = vulkan::default_matmul_kernel(uint32_t(K), 256);  // a GPU's rule
  for (vulkan::MatrixMath math : test::matrix_maths(device)) {
    const std::string what = dtype_name(type) + " K=" + std::to_string(K) + " " + vulkan::matrix_math_name(math);
    const bool fp16 = math != vulkan::MatrixMath::Fma;
    const std::vector<float> y = device_matmul(f, type, w, N, K, x, 0, M, kernel, math);
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
      const std::vector<float> alone = device_matmul(f, type, w, N, K, x, m, 1, kernel, math);
      ASSERT_EQ(0, std::memcmp(alone.data(), &y[m * N], N * 4)) << what << " row " << m << " alone";
    }
    for (auto [first, count] : {std::pair<uint32_t, uint32_t>{3, 7}, {5, 13}}) {
      const std::vector<float> part = device_matmul(f, type, w, N, K, x, first, count, kernel, math);
      ASSERT_EQ(0, std::memcmp(part.data(), &y[first * N], count * N * 4)) << what << " rows " << first << ".." << first + count - 1;
    }
    // The RMSNorm before it folded in: the normalised rows' product, the same bits alone and in batches.
    const std::vector<float> g = random_floats(static_cast<size_t>(K), 11);
    const std::vector<float> yn = device_matmul(f, type, w, N, K, x, 0, M, kernel, math, &g);
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
      ASSERT_EQ(0, std::memcmp(device_matmul(f, type, w, N, K, x, m, 1, kernel, math, &g).data(), &yn[m * N], N * 4)) << what << " normed, row " << m;
    const std::vector<float> part = device_matmul(f, type, w, N, K, x, 5, 13, kernel, math, &g);
    ASSERT_EQ(0, std::memcmp(part.data(), &yn[5 * N], 13 * N * 4)) << what << " normed, rows 5..17";
  }
}

std::vector<std::tuple<DType, int>> matmul_cases() {
  std::vector<std::tuple<DType, int>> c;
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K,
                  DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS})
    for (int K : {dtype_block_size(t) == 256 ? 256 : 128, 2304})
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

// Every member of the FMA family the device runs (matmul_family.h): close to the dequantized reference, and
// each row the same bits alone and in other batches, plain and with the norm folded in. A GPU compiles a
// member in milliseconds and runs every member on every weight type; lavapipe takes ~1 s a member (LLVM), so
// there each member runs on one or two of the sixteen cases below, spread so that every case still meets every
// value of every shape parameter (pairs or fours, folded or not, subgroup or tree sums, 64-256 threads, 1-4
// outputs, 4 or 8 rows; TheSpreadCoversEveryMember checks both). A case of a type with an offset (w = a q - c)
// also checks that its first folded member's bits are not its unfolded twin's: the fold's code path ran.
class VulkanMatmulFamily : public ::testing::TestWithParam<std::tuple<DType, int>> {};

const std::vector<std::tuple<DType, int>> kFamilyCases = {
    {DType::F32, 2304},  {DType::F32, 301},   {DType::F16, 2306},  {DType::BF16, 2304},   {DType::Q8_0, 2336},   {DType::Q4_0, 2304},
    {DType::Q4_1, 2304}, {DType::Q5_0, 2304}, {DType::Q5_1, 2304}, {DType::Q2_K, 2304},   {DType::Q3_K, 2304},   {DType::Q4_K, 2304},
    {DType::Q5_K, 2304}, {DType::Q6_K, 2304}, {DType::IQ4_NL, 2304}, {DType::IQ4_XS, 2304}};

bool member_runs_on_case(size_t member, size_t c, bool every) {
  const size_t n = kFamilyCases.size();
  return every || member % n == c || (member / n + member) % n == c;
}
// The vec members' types, in the order that spreads the members over them.
const std::vector<DType> kVecTypes(std::begin(vulkan::kVecTypes), std::end(vulkan::kVecTypes));
// Whether the family test runs `member` (of `family`) on case c: a vec member on one of its six types in turn
// (the i-th fp32 vec member on kVecTypes[i % 6], and the i-th -dot member likewise: each type meets 2-3 of the
// output counts, 4 and 8 rows, 32-128 threads, of each kind). A deeper member runs here on a GPU only: on
// lavapipe DeeperMembersGiveTheBitsOfTheirDepthOneTwins holds a spread of them to their depth-1 twins' bits
// (those twins run here), at a few minutes of LLVM a pipeline fewer.)
bool runs(const std::vector<vulkan::MatmulKernel>& family, size_t member, size_t c, bool every) {
  const vulkan::MatmulKernel& k = family[member];
  const DType type = std::get<0>(kFamilyCases[c]);
  if (!vulkan::member_runs_type(k, type) || (k.depth > 1 && !every)) return false;
  if (k.qmm || k.qmm_order) {  // (8-9 qmm and 9 -qmm members, ~1 s each on lavapipe, cold seconds: all on Q8_0, Q4_K and
                               // Q6_K, the tiles' code for each type; spread over Q5_K, Q3_K and IQ4_XS, a third each)
    if (every || type == DType::Q8_0 || type == DType::Q4_K || type == DType::Q6_K) return true;
    const DType spread[] = {DType::Q5_K, DType::Q3_K, DType::IQ4_XS};
    return spread[static_cast<size_t>(std::count_if(family.begin(), family.begin() + member, [](const auto& m) { return m.qmm_bits() && m.depth == 1; })) % 3] == type;
  }
  if (!k.vec) return member_runs_on_case(member, c, every);
  const size_t vec_index =
      static_cast<size_t>(std::count_if(family.begin(), family.begin() + member, [&](const auto& m) { return m.vec && m.dot == k.dot && !m.qmm_order && m.depth == 1; }));
  return every || kVecTypes[vec_index % kVecTypes.size()] == type;
}

TEST_P(VulkanMatmulFamily, EveryMemberMatchesTheReferenceAndIsBatchInvariant) {
  JF_VULKAN_DEVICE(device);
  const auto [type, K] = GetParam();
  const int64_t N = 70, M = 19;
  Fixture f(device);
  const std::vector<float> wf = random_floats(static_cast<size_t>(N * K), 17);
  const size_t row_bytes = dtype_row_bytes(type, K);
  std::vector<uint8_t> w(row_bytes * N);
  for (int64_t n = 0; n < N; n++) quantize_row(type, &wf[n * K], &w[n * row_bytes], K);
  const std::vector<float> x = random_floats(static_cast<size_t>(M * K), 19), gain = random_floats(static_cast<size_t>(K), 23);
  // The references, plain and normalised, with the sums of magnitudes that bound fp32 rounding.
  std::vector<double> ref(M * N), mag(M * N), ref_n(M * N), mag_n(M * N);
  std::vector<float> row(static_cast<size_t>(K));
  for (int64_t n = 0; n < N; n++) {
    dequantize_row(type, &w[n * row_bytes], row.data(), K);
    for (int64_t m = 0; m < M; m++) {
      double ss = 0;
      for (int64_t k = 0; k < K; k++) ss += double(x[m * K + k]) * x[m * K + k];
      const double inv = 1.0 / std::sqrt(ss / double(K) + 1e-5);
      for (int64_t k = 0; k < K; k++) {
        const double p = double(x[m * K + k]) * row[k], pn = p * gain[k] * inv;
        ref[m * N + n] += p, mag[m * N + n] += std::fabs(p), ref_n[m * N + n] += pn, mag_n[m * N + n] += std::fabs(pn);
      }
    }
  }
  // The CPU's int8 path (its quantized inputs and integer block sums, kernels/matmul.h Q8Rows), which the -dot
  // members follow: the same int8 inputs, so the same result but for fp32 rounding in a different order.
  std::vector<float> ref8(static_cast<size_t>(M * N));
  if (vulkan::member_runs_type(vulkan::parse_matmul_kernel("vec-wg64-o2-r4-dot"), type)) {
    Q8Rows xq;
    quantize_rows_q8(x.data(), M, K, xq, false, q8_group(type));
    scalar::matmul_cols_q8(xq, WeightMatrix{type, w.data(), N, K}, ref8.data(), 0, N);
  }
  const std::vector<vulkan::MatmulKernel> family = vulkan::matmul_family(f.ctx.info());
  ASSERT_GE(family.size(), 40u) << "the family on " << f.ctx.info().name;
  const size_t c = std::find(kFamilyCases.begin(), kFamilyCases.end(), GetParam()) - kFamilyCases.begin();
  int tested = 0;
  bool twin_compared = false, dot_compared = false;
  const bool has_offset = type == DType::Q4_1 || type == DType::Q5_1 || type == DType::Q2_K || type == DType::Q4_K || type == DType::Q5_K;
  std::vector<vulkan::KernelSpec> specs;  // (compiled several at once: a GPU driver takes its time a pipeline)
  for (size_t i = 0; i < family.size(); i++)
    if (runs(family, i, c, !f.ctx.info().software))
      specs.push_back({vulkan::matmul_shader(family[i], vulkan::MatrixMath::Fma, type), vulkan::matmul_bindings(family[i], vulkan::MatrixMath::Fma),
                       vulkan::matmul_constants(family[i], vulkan::MatrixMath::Fma), family[i].name()});
  f.kernels.prepare(specs);
  for (size_t i = 0; i < family.size(); i++) {
    const vulkan::MatmulKernel& k = family[i];
    if (!runs(family, i, c, !f.ctx.info().software)) continue;
    tested++;
    const std::string what = dtype_name(type) + " K=" + std::to_string(K) + " " + k.name();
    const auto run = [&](uint32_t first, uint32_t count, bool norm) {
      return device_matmul(f, type, w, N, K, x, first, count, k, vulkan::MatrixMath::Fma, norm ? &gain : nullptr);
    };
    const std::vector<float> y = run(0, M, false), yn = run(0, M, true);
    // (the tiles round weights and inputs to fp16; -dot members round inputs to int8s, by up to 1/254 of a block's
    // or super-block's largest; each also within fp32 rounding of the CPU's int8 product, ref8)
    const bool int8 = k.dot || k.qmm;  // (-qmm members are -dot ones)
    const double tolerance = k.tile_rows ? 2e-3 : int8 ? 1e-3 : 2e-6;
    for (int64_t i = 0; i < M * N; i++) {
      if (int8) {
        ASSERT_NEAR(y[i], ref8[i], 2e-6 * mag[i] + 1e-6) << what << " row " << i / N << " output " << i % N << ": the CPU's int8 result";
      }
      ASSERT_NEAR(y[i], ref[i], tolerance * mag[i] + 1e-6) << what << " row " << i / N << " output " << i % N;
      ASSERT_NEAR(yn[i], ref_n[i], tolerance * mag_n[i] + 1e-6) << what << " normed, row " << i / N << " output " << i % N;
    }
    ASSERT_EQ(0, std::memcmp(run(18, 1, false).data(), &y[18 * N], N * 4)) << what << " row 18 alone";
    ASSERT_EQ(0, std::memcmp(run(3, 7, false).data(), &y[3 * N], 7 * N * 4)) << what << " rows 3..9";
    ASSERT_EQ(0, std::memcmp(run(10, 1, true).data(), &yn[10 * N], N * 4)) << what << " normed, row 10 alone";
    const auto expect_other_bits_than = [&](vulkan::MatmulKernel twin) {  // (its own code path ran)
      const std::vector<float> yt = device_matmul(f, type, w, N, K, x, 0, M, twin, vulkan::MatrixMath::Fma, nullptr);
      EXPECT_NE(0, std::memcmp(yt.data(), y.data(), y.size() * 4)) << what << ": the same bits as " << twin.name();
    };
    if (k.fold && has_offset && !twin_compared) {
      vulkan::MatmulKernel twin = k;
      twin.fold = false;
      expect_other_bits_than(twin);
      twin_compared = true;
    }
    if (k.dot && !k.qmm_order && !dot_compared) {  // its int8 path ran: not the bits of its fp32 twin
      vulkan::MatmulKernel twin = k;
      twin.dot = false;
      expect_other_bits_than(twin);
      dot_compared = true;
    }
  }
  EXPECT_GE(tested, 6) << dtype_name(type);
  EXPECT_TRUE(twin_compared || !has_offset) << dtype_name(type) << ": no folded member ran";
}

// A member of depth 2 or 4 issues its loads of several steps before it uses the first, but takes the same
// weights in the same order: its depth-1 twin's bits, for many rows, one row (its one-row twin) and with the
// norm folded in, where K leaves the last steps partly empty. Every deeper member on a GPU; on lavapipe a
// spread over the shaders' paths (vec fp32 and int8, split fours, pairs and folded pairs; odd-aligned blocks).
TEST(VulkanMatmulFamily, DeeperMembersGiveTheBitsOfTheirDepthOneTwins) {
  JF_VULKAN_DEVICE(device);
  Fixture f(device);
  const std::vector<vulkan::MatmulKernel> family = vulkan::matmul_family(f.ctx.info());
  std::vector<std::pair<DType, vulkan::MatmulKernel>> cases;
  if (f.ctx.info().software) {
    for (const auto& [t, name] : std::vector<std::pair<DType, const char*>>{
             {DType::Q4_K, "vec-wg32-o2-r4-d4"}, {DType::Q4_K, "split-wg64-o2-r4-d4-sg"}, {DType::Q4_K, "split-wg64-o1-r4-d4-pair-fold-sg"},
             {DType::Q6_K, "vec-wg64-o4-r4-d2-dot"}, {DType::Q6_K, "split-wg128-o2-r4-d2-pair-sg"}, {DType::Q8_0, "vec-wg32-o1-r4-d4-dot"},
             {DType::Q8_0, "split-wg64-o4-r4-d2-sg"}, {DType::Q3_K, "vec-wg32-o2-r4-d2"}})
      cases.emplace_back(t, vulkan::parse_matmul_kernel(name));
  } else {  // (each on one of the benchmarked types in turn: the family test runs each on every type)
    const DType types[] = {DType::Q4_K, DType::Q6_K, DType::Q8_0, DType::Q3_K, DType::IQ4_XS};
    for (const vulkan::MatmulKernel& k : family)
      if (k.depth > 1) cases.emplace_back(types[cases.size() % std::size(types)], k);
  }
  ASSERT_FALSE(cases.empty()) << f.ctx.info().name << " runs no deeper members";
  const int64_t N = 70, M = 19;
  for (const auto& [type, k] : cases) {
    ASSERT_NE(std::find(family.begin(), family.end(), k), family.end()) << k.name() << " is not in the family";
    const int64_t K = type == DType::Q8_0 ? 2336 : 2304;  // (73 blocks of 32; 9 super-blocks of 256)
    const std::vector<float> wf = random_floats(static_cast<size_t>(N * K), 31), x = random_floats(static_cast<size_t>(M * K), 32),
                             gain = random_floats(static_cast<size_t>(K), 33);
    const size_t row_bytes = dtype_row_bytes(type, K);
    std::vector<uint8_t> w(row_bytes * N);
    for (int64_t n = 0; n < N; n++) quantize_row(type, &wf[n * K], &w[n * row_bytes], K);
    vulkan::MatmulKernel twin = k;
    twin.depth = 1;
    const std::string what = dtype_name(type) + " " + k.name();
    for (const std::vector<float>* g : {static_cast<const std::vector<float>*>(nullptr), &gain})
      for (const auto& [first, count] : std::vector<std::pair<uint32_t, uint32_t>>{{0, M}, {18, 1}}) {
        const std::vector<float> deep = device_matmul(f, type, w, N, K, x, first, count, k, vulkan::MatrixMath::Fma, g),
                                 flat = device_matmul(f, type, w, N, K, x, first, count, twin, vulkan::MatrixMath::Fma, g);
        EXPECT_EQ(0, std::memcmp(deep.data(), flat.data(), deep.size() * 4))
            << what << (g ? " normed" : "") << ", rows " << first << ".." << first + count - 1 << ": not the bits of " << twin.name();
      }
  }
}

// The qmm members add each sub-block's products as integers and the blocks (Q8_0) or super-blocks (K-quants) in
// fp32 in order, so every member gives every other's bits whatever its outputs and rows a workgroup, on the
// matrix units or not (-mu, where the device has int8 ones), and so do the vec -qmm members: row r's
// outputs are the same bits computed alone by one member and among 70 rows (past a workgroup of 64) by another,
// plain and with the norm folded in (on lavapipe the -qmm members of depth 1 and those of 2 outputs: every
// depth; Q5_K, Q3_K and IQ4_XS, whose code differs from the others' only in the weights' staging and the
// pieces' sums, a quarter of the tiles and of the -qmm members). Their own path ran: not the bits of the vec -dot
// member, which quantizes the inputs alike but adds in another order.
TEST(VulkanMatmulFamily, QmmMembersGiveEachOthersBitsAtEveryRowCount) {
  JF_VULKAN_DEVICE(device);
  Fixture f(device);
  const std::vector<vulkan::MatmulKernel> family = vulkan::matmul_family(f.ctx.info());
  const bool vec_twins = f.ctx.info().int_dot && f.ctx.info().subgroup_shuffle;  // (the vec -qmm members)
  ASSERT_GE(std::count_if(family.begin(), family.end(), [](const auto& k) { return k.qmm; }), 8)
      << f.ctx.info().name;  // (o64-r64: 42 KB of shared memory, not on lavapipe's 32)
  EXPECT_EQ(std::count_if(family.begin(), family.end(), [](const auto& k) { return k.units; }) > 0,
            f.ctx.info().int8_matrix_units);
  const auto vec_qmm = std::count_if(family.begin(), family.end(), [](const auto& k) { return k.qmm_order; });
  EXPECT_TRUE(vec_twins ? vec_qmm >= 20 : vec_qmm == 0) << vec_qmm;  // (24; wg128-o2-d4's Q8_0 entries take 37 KB)
  for (const DType type : {DType::Q8_0, DType::Q4_K, DType::Q6_K, DType::Q5_K, DType::Q3_K, DType::IQ4_XS}) {
    std::vector<vulkan::MatmulKernel> qmm;  // (the tiles first: qmm[0] a qmm member)
    for (const vulkan::MatmulKernel& k : family)
      if (k.qmm) qmm.push_back(k);
    for (const vulkan::MatmulKernel& k : family)
      if (k.qmm_order && vulkan::member_runs_type(k, type) && (k.depth == 1 || !f.ctx.info().software || k.outputs == 2)) qmm.push_back(k);
    if (f.ctx.info().software && (type == DType::Q5_K || type == DType::Q3_K || type == DType::IQ4_XS)) {  // (cold pipelines: minutes)
      std::vector<vulkan::MatmulKernel> some;
      for (size_t i = 0; i < qmm.size(); i++)
        if (i % 4 == 0) some.push_back(qmm[i]);
      qmm = some;
    }
    // (N and M past a workgroup's 64; a last step part empty)
    const int64_t N = 70, M = 70, K = type == DType::Q8_0 ? 2336 : 2304;
    const std::vector<float> wf = random_floats(static_cast<size_t>(N * K), 41),
                             x = random_floats(static_cast<size_t>(M * K), 42),
                             gain = random_floats(static_cast<size_t>(K), 43);
    const size_t row_bytes = dtype_row_bytes(type, K);
    std::vector<uint8_t> w(row_bytes * N);
    for (int64_t n = 0; n < N; n++) quantize_row(type, &wf[n * K], &w[n * row_bytes], K);
    for (const std::vector<float>* g : {static_cast<const std::vector<float>*>(nullptr), &gain}) {
      const std::vector<float> all =
          device_matmul(f, type, w, N, K, x, 0, M, qmm[0], vulkan::MatrixMath::Fma, g);
      for (size_t i = 0; i < qmm.size(); i++) {
        const std::string what = qmm[i].name() + (g ? " normed" : "");
        const std::vector<float> many =
            device_matmul(f, type, w, N, K, x, 0, M, qmm[i], vulkan::MatrixMath::Fma, g);
        EXPECT_EQ(0, std::memcmp(many.data(), all.data(), all.size() * 4))
            << dtype_name(type) << " " << what << ": 70 rows, not " << qmm[0].name() << "'s bits";
        const uint32_t r = static_cast<uint32_t>((i * 23 + 5) % M);
        const std::vector<float> one =
            device_matmul(f, type, w, N, K, x, r, 1, qmm[(i + 4) % qmm.size()], vulkan::MatrixMath::Fma, g);
        EXPECT_EQ(0, std::memcmp(one.data(), &all[r * N], N * 4))
            << dtype_name(type) << " " << qmm[(i + 4) % qmm.size()].name() << (g ? " normed" : "") << ": row " << r << " alone";
        if (qmm[i].qmm_order) {  // (3 rows: a workgroup of 4 part empty, a row on its own)
          const std::vector<float> few = device_matmul(f, type, w, N, K, x, 20, 3, qmm[i], vulkan::MatrixMath::Fma, g);
          EXPECT_EQ(0, std::memcmp(few.data(), &all[20 * N], 3 * N * 4)) << dtype_name(type) << " " << what << ": rows 20..22";
        }
      }
      if (vulkan::member_runs_type(vulkan::parse_matmul_kernel("vec-wg64-o2-r4-dot"), type) &&
          f.ctx.info().int_dot && f.ctx.info().subgroup_shuffle) {
        const std::vector<float> dot =
            device_matmul(f, type, w, N, K, x, 0, M, vulkan::parse_matmul_kernel("vec-wg64-o2-r4-dot"),
                          vulkan::MatrixMath::Fma, g);
        EXPECT_NE(0, std::memcmp(dot.data(), all.data(), all.size() * 4))
            << dtype_name(type) << ": the qmm members gave vec-wg64-o2-r4-dot's bits";
      }
    }
  }
}

// The GPUs' shaders, their fixed-count loops unrolled, and the rolled twins a software device runs
// (common.glsl's UNROLL) give the same bits: the family tests on lavapipe stand for what a GPU runs. (On a
// GPU both fixtures run the unrolled shaders.)
TEST(VulkanKernels, UnrolledShadersGiveTheBitsOfTheirRolledTwins) {
  JF_VULKAN_DEVICE(device);
  Fixture rolled(device), unrolled(device);
  unrolled.kernels.run_unrolled();
  const int64_t N = 12, K = 512, M = 5;
  for (DType type : {DType::Q4_K, DType::Q8_0}) {
    const std::vector<float> wf = random_floats(static_cast<size_t>(N * K), 5), x = random_floats(static_cast<size_t>(M * K), 6),
                             gain = random_floats(static_cast<size_t>(K), 7);
    const size_t row_bytes = dtype_row_bytes(type, K);
    std::vector<uint8_t> w(row_bytes * N);
    for (int64_t n = 0; n < N; n++) quantize_row(type, &wf[n * K], &w[n * row_bytes], K);
    for (const char* name : {"split-wg64-o2-r4-pair-fold", "vec-wg32-o2-r4"}) {
      const vulkan::MatmulKernel k = vulkan::parse_matmul_kernel(name);
      for (const std::vector<float>* g : {static_cast<const std::vector<float>*>(nullptr), &gain}) {
        const std::vector<float> a = device_matmul(rolled, type, w, N, K, x, 0, M, k, vulkan::MatrixMath::Fma, g),
                                 b = device_matmul(unrolled, type, w, N, K, x, 0, M, k, vulkan::MatrixMath::Fma, g);
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << dtype_name(type) << " " << name << (g ? " normed" : "");
      }
      const auto shader = [&](Fixture& f) {
        return f.kernels.get(vulkan::matmul_shader(k, vulkan::MatrixMath::Fma, type), vulkan::kMatmulBindings,
                             vulkan::matmul_constants(k, vulkan::MatrixMath::Fma)).shader;
      };
      EXPECT_EQ(shader(rolled), vulkan::matmul_shader(k, vulkan::MatrixMath::Fma, type) + (rolled.ctx.info().software ? "_rolled" : ""));
      EXPECT_EQ(shader(unrolled), vulkan::matmul_shader(k, vulkan::MatrixMath::Fma, type));
    }
  }
}

// prepare() makes pipelines several at once: get() then returns them (the label kept, a duplicate made once);
// a shader not in the build is refused after the others are made.
TEST(VulkanKernels, PrepareMakesThePipelinesGetFinds) {
  JF_VULKAN_DEVICE(device);
  Fixture f(device);
  const vulkan::MatmulKernel a = vulkan::parse_matmul_kernel("split-wg64-o2-r4"), b = vulkan::parse_matmul_kernel("split-wg128-o1-r8-pair");
  const auto spec = [](const vulkan::MatmulKernel& k) {
    return vulkan::KernelSpec{vulkan::matmul_shader(k, vulkan::MatrixMath::Fma, DType::Q8_0), vulkan::kMatmulBindings,
                              vulkan::matmul_constants(k, vulkan::MatrixMath::Fma), k.name()};
  };
  f.kernels.prepare({spec(a), spec(b), spec(a)});
  const vulkan::Kernel& ka = f.kernels.get(spec(a).name, vulkan::kMatmulBindings, spec(a).constants, "other label");
  EXPECT_NE(ka.pipeline, VK_NULL_HANDLE);
  EXPECT_NE(ka.name.find("split-wg64-o2-r4"), std::string::npos) << ka.name;  // prepare's, not get's label
  EXPECT_NE(f.kernels.get(spec(b).name, vulkan::kMatmulBindings, spec(b).constants).pipeline, ka.pipeline);
  EXPECT_THROW(f.kernels.prepare({{"no_such_shader", 2, {}, ""}, spec(b)}), Error);
}

// Over the cases, every member runs on lavapipe too (the spread above misses none), and each case meets every
// value of every shape parameter.
TEST(VulkanMatmulFamily, TheSpreadCoversEveryMember) {
  JF_VULKAN_DEVICE(device);
  const std::vector<vulkan::MatmulKernel> family = vulkan::matmul_family(vulkan::Context(device).info());
  for (size_t i = 0; i < family.size(); i++) {
    bool covered = false;
    for (size_t c = 0; c < kFamilyCases.size(); c++) covered = covered || runs(family, i, c, false);
    EXPECT_TRUE(covered || family[i].depth > 1) << family[i].name();  // (deeper members: against their twins)
    EXPECT_EQ(vulkan::parse_matmul_kernel(family[i].name()), family[i]);  // the name is the member
  }
  if (std::none_of(family.begin(), family.end(), [](const auto& k) { return k.vec; })) return;  // (no subgroups)
  for (DType t : kVecTypes) {  // each vec type runs members of most output counts and both row counts
    std::set<uint32_t> outputs, rows;
    for (size_t i = 0; i < family.size(); i++)
      for (size_t c = 0; c < kFamilyCases.size(); c++)
        if (family[i].vec && std::get<0>(kFamilyCases[c]) == t && runs(family, i, c, false)) outputs.insert(family[i].outputs), rows.insert(family[i].rows);
    EXPECT_GE(outputs.size(), 2u) << dtype_name(t);
    EXPECT_EQ(rows.size(), 2u) << dtype_name(t);
    bool dot_runs = false;  // and, where the device has OpSDot, -dot members
    for (size_t i = 0; i < family.size(); i++)
      for (size_t c = 0; c < kFamilyCases.size(); c++) dot_runs = dot_runs || (family[i].dot && std::get<0>(kFamilyCases[c]) == t && runs(family, i, c, false));
    EXPECT_EQ(dot_runs, vulkan::Context(device).info().int_dot) << dtype_name(t);
  }
  const vulkan::DeviceInfo info = vulkan::Context(device).info();  // (so the -dot members' tests run in CI)
  EXPECT_TRUE(info.int_dot || !info.software) << info.name << ": lavapipe (Mesa 22.3) has VK_KHR_shader_integer_dot_product";
  EXPECT_THROW(vulkan::parse_matmul_kernel("split-wg128-o4-r8-fold"), Error);  // fold comes with pair only
  EXPECT_EQ(vulkan::parse_matmul_kernel("tiles-r64").tile_rows, 64u);  // (the tiles members: on matrix units only)
  EXPECT_TRUE(vulkan::parse_matmul_kernel("vec-wg32-o2-r4").vec);           // (Q3_K-Q6_K, IQ4_XS, Q8_0)
  EXPECT_THROW(vulkan::parse_matmul_kernel("vec-wg256-o2-r4"), Error);
  EXPECT_THROW(vulkan::parse_matmul_kernel("vec-wg64-o2-r4-sg"), Error);
  EXPECT_TRUE(vulkan::parse_matmul_kernel("vec-wg64-o2-r4-dot").dot);  // (OpSDot on int8s)
  EXPECT_THROW(vulkan::parse_matmul_kernel("vec-wg64-o2-r4-dot-dot"), Error);
  EXPECT_EQ(vulkan::parse_matmul_kernel("vec-wg64-o2-r4-d4-dot").depth, 4u);  // (loads of 4 steps in flight)
  EXPECT_EQ(vulkan::parse_matmul_kernel("split-wg64-o1-r4-d4-pair-fold-sg").depth, 4u);
  EXPECT_THROW(vulkan::parse_matmul_kernel("vec-wg64-o2-r8-d2"), Error);        // (4 rows only)
  EXPECT_THROW(vulkan::parse_matmul_kernel("vec-wg64-o4-r4-d4"), Error);        // (at most 8 pieces)
  EXPECT_THROW(vulkan::parse_matmul_kernel("split-wg64-o2-r4-d2-pair"), Error);  // (subgroup members only)
  EXPECT_THROW(vulkan::parse_matmul_kernel("split-wg64-o2-r4-d3-sg"), Error);
  EXPECT_THROW(vulkan::parse_matmul_kernel("vec-wg64-o2-r4-dot-d2"), Error);    // (the depth first)
  EXPECT_THROW(vulkan::parse_matmul_kernel("split-wg64-o2-r4-dot"), Error);
  EXPECT_TRUE(vulkan::parse_matmul_kernel("vec-wg64-o8-r4").vec);
  EXPECT_THROW(vulkan::parse_matmul_kernel("vec-wg64-o8-r8"), Error);  // (registers)
  EXPECT_EQ(vulkan::parse_matmul_kernel("vec-wg64-o2-r4-d2-dot-k4").slices, 4u);  // (K slices: last)
  EXPECT_THROW(vulkan::parse_matmul_kernel("vec-wg64-o2-r4-k4-dot"), Error);
  EXPECT_THROW(vulkan::parse_matmul_kernel("vec-wg64-o2-r4-qmm-k2"), Error);  // (the qmm order chains super-blocks)
  EXPECT_THROW(vulkan::parse_matmul_kernel("vec-wg64-o2-r4-k3"), Error);
  EXPECT_THROW(vulkan::parse_matmul_kernel("split-wg64-o2-r4-k2"), Error);
  {  // K slices only on long-K, short-N matrices (K >= 2N)
    const vulkan::MatmulKernel k = vulkan::parse_matmul_kernel("vec-wg64-o1-r4-k2");
    EXPECT_TRUE(vulkan::member_runs(k, {2048, 8192, DType::Q4_K}));
    EXPECT_FALSE(vulkan::member_runs(k, {2048, 2048, DType::Q4_K}));
    EXPECT_FALSE(vulkan::member_runs(k, {2048, 8192, DType::Q2_K}));
    EXPECT_TRUE(vulkan::member_runs(vulkan::parse_matmul_kernel("vec-wg64-o1-r4"), {2048, 2048, DType::Q4_K}));
  }
  EXPECT_THROW(vulkan::parse_matmul_kernel("split-wg64-o8-r4"), Error);
  EXPECT_TRUE(vulkan::member_runs_type(vulkan::parse_matmul_kernel("vec-wg64-o1-r8"), DType::Q4_K));
  EXPECT_TRUE(vulkan::member_runs_type(vulkan::parse_matmul_kernel("vec-wg64-o1-r8"), DType::Q6_K));
  EXPECT_FALSE(vulkan::member_runs_type(vulkan::parse_matmul_kernel("vec-wg64-o1-r8"), DType::Q2_K));
  EXPECT_THROW(vulkan::parse_matmul_kernel("tiles-r48"), Error);
  EXPECT_THROW(vulkan::parse_matmul_kernel("split-wg128-o4-r8-pair-sg-fold"), Error);
  for (size_t c = 0; c < kFamilyCases.size(); c++) {
    std::set<uint32_t> wg, outputs, rows, pair, fold, sg;
    for (size_t i = 0; i < family.size(); i++)
      if (!family[i].serial && !family[i].tile_rows && !family[i].vec && !family[i].qmm && runs(family, i, c, false))
        wg.insert(family[i].wg), outputs.insert(family[i].outputs), rows.insert(family[i].rows), pair.insert(family[i].pair),
            fold.insert(family[i].fold), sg.insert(family[i].subgroup);
    EXPECT_EQ(wg.size(), 3u) << c;
    EXPECT_EQ(outputs.size(), 3u) << c;
    EXPECT_EQ(rows.size(), 2u) << c;
    EXPECT_EQ(pair.size(), 2u) << c;
    EXPECT_EQ(fold.size(), 2u) << c;
    EXPECT_EQ(sg.size(), vulkan::Context(device).info().subgroup_shuffle ? 2u : 1u) << c;
  }
}

INSTANTIATE_TEST_SUITE_P(Types, VulkanMatmulFamily, ::testing::ValuesIn(kFamilyCases),
                         [](const auto& info) { return dtype_name(std::get<0>(info.param)) + "_K" + std::to_string(std::get<1>(info.param)); });

// A product with the GLU folded into its inputs (the down projection reading act(gate) * up) matches the CPU's
// activation followed by the product; a concatenated matrix's outputs split over three matrices are the bits of
// the plain product's columns. For every kind of kernel: a thread per output, a split-family member, the tiles.
TEST(VulkanMatmul, GluFoldedIntoTheInputsAndOutputsSplitOverThreeMatrices) {
  JF_VULKAN_DEVICE(device);
  Fixture f(device);
  const uint32_t N = 70, K = 512, M = 5, n1 = 20, n2 = 50;
  const std::vector<float> wf = random_floats(size_t{N} * K, 31), gate = random_floats(size_t{M} * K, 32), up = random_floats(size_t{M} * K, 33);
  const size_t row_bytes = dtype_row_bytes(DType::Q8_0, K);
  std::vector<uint8_t> w(row_bytes * N);
  for (uint32_t n = 0; n < N; n++) quantize_row(DType::Q8_0, &wf[n * K], &w[n * row_bytes], K);
  Buffer wb(f.ctx, (w.size() + 3) / 4 * 4, Buffer::Kind::Host), gb(f.ctx, gate.size() * 4, Buffer::Kind::Host),
      ub(f.ctx, up.size() * 4, Buffer::Kind::Host);
  std::memcpy(wb.mapped(), w.data(), w.size());
  std::memcpy(gb.mapped(), gate.data(), gate.size() * 4);
  std::memcpy(ub.mapped(), up.data(), up.size() * 4);
  std::vector<std::pair<vulkan::MatmulKernel, vulkan::MatrixMath>> kernels = {
      {vulkan::parse_matmul_kernel("serial"), vulkan::MatrixMath::Fma},
      {vulkan::parse_matmul_kernel("split-wg128-o2-r4-pair"), vulkan::MatrixMath::Fma}};
  for (vulkan::MatrixMath math : test::matrix_maths(device))
    if (math != vulkan::MatrixMath::Fma) kernels.push_back({vulkan::MatmulKernel{}, math});
  for (const auto& [kernel, math] : kernels) {
    const std::string what = kernel.name() + " " + vulkan::matrix_math_name(math);
    const bool fp16 = math != vulkan::MatrixMath::Fma;
    const vulkan::Kernel& k = f.kernels.get(vulkan::matmul_shader(kernel, math, DType::Q8_0), vulkan::kMatmulBindings,
                                            vulkan::matmul_constants(kernel, math));
    const vulkan::MatmulGrid g = vulkan::matmul_grid(kernel, math, N, M);
    // y = act(gate) * up, times W: silu, then tanh-gelu.
    for (uint32_t glu : {1u, 2u}) {
      Buffer yb(f.ctx, size_t{M} * N * 4, Buffer::Kind::Host);
      vulkan::MatmulParams p = vulkan::MatmulParams::plain(M, N, K);
      p.glu = glu;
      vulkan::Recorder rec(f.ctx);
      rec.begin();
      rec.dispatch(k, {gb.view(), yb.view(), wb.view(), gb.view(), ub.view(), yb.view(), yb.view()}, p, g.x, g.y, g.z);
      rec.finish();
      std::vector<float> act = gate, row(K);
      glu == 2 ? gelu_tanh_mul(act.data(), up.data(), M * K) : silu_mul(act.data(), up.data(), M * K);
      const float* y = static_cast<const float*>(yb.mapped());
      for (uint32_t n = 0; n < N; n++) {
        dequantize_row(DType::Q8_0, &w[n * row_bytes], row.data(), K);
        for (uint32_t m = 0; m < M; m++) {
          double ref = 0, mag = 0;
          for (uint32_t i = 0; i < K; i++) ref += double(act[m * K + i]) * row[i], mag += std::fabs(double(act[m * K + i]) * row[i]);
          ASSERT_NEAR(y[m * N + n], ref, (fp16 ? 2e-3 : 1e-5) * mag + 1e-6) << what << " glu " << glu << " row " << m << " output " << n;
        }
      }
    }
    // Outputs 0..19 to Y, 20..49 to Y2, 50..69 to Y3, each a row-major matrix of its own: the plain product's bits.
    Buffer whole(f.ctx, size_t{M} * N * 4, Buffer::Kind::Host), y1(f.ctx, size_t{M} * n1 * 4, Buffer::Kind::Host),
        y2(f.ctx, size_t{M} * (n2 - n1) * 4, Buffer::Kind::Host), y3(f.ctx, size_t{M} * (N - n2) * 4, Buffer::Kind::Host);
    vulkan::MatmulParams plain = vulkan::MatmulParams::plain(M, N, K), split = plain;
    split.n1 = split.y_stride = n1, split.n2 = n2;
    vulkan::Recorder rec(f.ctx);
    rec.begin();
    rec.dispatch(k, {gb.view(), whole.view(), wb.view(), gb.view(), gb.view(), whole.view(), whole.view()}, plain, g.x, g.y, g.z);
    rec.dispatch(k, {gb.view(), y1.view(), wb.view(), gb.view(), gb.view(), y2.view(), y3.view()}, split, g.x, g.y, g.z);
    rec.finish();
    const float* all = static_cast<const float*>(whole.mapped());
    const float* parts[3] = {static_cast<const float*>(y1.mapped()), static_cast<const float*>(y2.mapped()), static_cast<const float*>(y3.mapped())};
    for (uint32_t m = 0; m < M; m++)
      for (uint32_t n = 0; n < N; n++) {
        const uint32_t part = n < n1 ? 0 : n < n2 ? 1 : 2, first = part == 0 ? 0 : part == 1 ? n1 : n2, width = part == 0 ? n1 : part == 1 ? n2 - n1 : N - n2;
        ASSERT_EQ(std::memcmp(&parts[part][m * width + n - first], &all[m * N + n], 4), 0) << what << " row " << m << " output " << n;
      }
  }
}

// What batch invariance rests on with fp16 tiles (tile_probe.h): a row's bits are the same at every position
// of a tile, beside rows of huge, tiny, fp32-denormal and zero values, on the FMA tiles here and on the
// matrix units where the device has them; and a row of inputs past fp16's range (1e6) still sums to finite
// values near the reference (the tiles scale it by a power of two), where unscaled it would be infinite.
TEST(VulkanTiles, TilePositionInvarianceBesideHugeTinyDenormalAndZeroRows) {
  JF_VULKAN_DEVICE(device);
  Fixture f(device);
  for (vulkan::MatrixMath math : test::matrix_maths(device)) {
    if (math == vulkan::MatrixMath::Fma) continue;
    const vulkan::TileProbe probe = vulkan::probe_tile_positions(f.ctx, f.kernels, math);
    EXPECT_TRUE(probe.invariant) << vulkan::matrix_math_name(math) << ": " << probe.detail;
    EXPECT_TRUE(probe.finite) << vulkan::matrix_math_name(math) << ": " << probe.detail;
  }
}

struct GetRowsParams {  // shaders/get_rows.comp's
  uint32_t n_rows, K, rows_off, out_off;
  float scale;
  uint32_t mode, from_off;
};

// Embedding rows come out as the CPU dequantizes them.
TEST(VulkanGetRows, MatchesDequantizeRowPerType) {
  JF_VULKAN_DEVICE(device);
  Fixture f(device);
  const int64_t K = 512, rows = 9;
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K,
                  DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS}) {
    const std::vector<float> wf = random_floats(static_cast<size_t>(rows * K), 3);
    const size_t rb = dtype_row_bytes(t, K);
    Buffer wb(f.ctx, (rb * rows + 3) / 4 * 4, Buffer::Kind::Host), ids(f.ctx, 16, Buffer::Kind::Host), out(f.ctx, 2 * K * 4, Buffer::Kind::Host);
    for (int64_t r = 0; r < rows; r++) quantize_row(t, &wf[r * K], static_cast<uint8_t*>(wb.mapped()) + r * rb, K);
    const int32_t pick[2] = {7, 2};
    std::memcpy(ids.mapped(), pick, sizeof pick);
    const GetRowsParams p{2, uint32_t(K), 0, 0, 1.0f, 0, 0};
    vulkan::Recorder rec(f.ctx);
    rec.begin();
    rec.dispatch(f.kernels.get("get_rows_" + dtype_name(t), 6), {ids.view(), out.view(), wb.view(), out.view(), out.view(), ids.view()}, p, 2);
    rec.finish();
    std::vector<float> ref(static_cast<size_t>(K));
    for (int i = 0; i < 2; i++) {
      dequantize_row(t, static_cast<const uint8_t*>(wb.mapped()) + pick[i] * rb, ref.data(), K);
      const float* got = static_cast<const float*>(out.mapped()) + i * K;
      for (int64_t k = 0; k < K; k++) ASSERT_NEAR(got[k], ref[k], 1e-6f * (1 + std::fabs(ref[k]))) << dtype_name(t) << " k " << k;
    }
  }
}

// The draft layer's input in one dispatch: hidden + scale * embedding, added to the rows in place (mode 1) or to
// rows gathered from another matrix (mode 2), as a product rounded and then a sum rounded (no fused multiply-add:
// every draft path gets the same bits), the embedding rows as mode 0 reads them.
TEST(VulkanGetRows, AddsScaledEmbeddingsToHiddenStatesInOneDispatch) {
  JF_VULKAN_DEVICE(device);
  Fixture f(device);
  const uint32_t K = 96, rows = 5, n = 3;
  for (DType t : {DType::F32, DType::Q8_0, DType::Q4_K}) {
    const uint32_t k_used = t == DType::Q4_K ? 256 : K;  // (a whole super-block)
    const size_t rb = dtype_row_bytes(t, k_used);
    const std::vector<float> wf = random_floats(size_t{rows} * k_used, 8), hidden = random_floats(size_t{rows} * k_used, 9),
                             scale = random_floats(k_used, 10, 3.0f);
    Buffer wb(f.ctx, (rb * rows + 3) / 4 * 4, Buffer::Kind::Host), ids(f.ctx, 32, Buffer::Kind::Host);
    Buffer emb(f.ctx, n * k_used * 4, Buffer::Kind::Host), x(f.ctx, n * k_used * 4, Buffer::Kind::Host), y(f.ctx, n * k_used * 4, Buffer::Kind::Host);
    Buffer from(f.ctx, rows * k_used * 4, Buffer::Kind::Host), sb(f.ctx, k_used * 4, Buffer::Kind::Host);
    for (uint32_t r = 0; r < rows; r++) quantize_row(t, &wf[r * k_used], static_cast<uint8_t*>(wb.mapped()) + r * rb, k_used);
    const int32_t picks[6] = {4, 0, 2, /* from rows: */ 1, 4, 3};
    std::memcpy(ids.mapped(), picks, sizeof picks);
    std::memcpy(x.mapped(), hidden.data(), n * k_used * 4);
    std::memcpy(from.mapped(), hidden.data(), rows * k_used * 4);
    std::memcpy(sb.mapped(), scale.data(), k_used * 4);
    vulkan::Recorder rec(f.ctx);
    rec.begin();
    const vulkan::Kernel& kernel = f.kernels.get("get_rows_" + dtype_name(t), 6);
    rec.dispatch(kernel, {ids.view(), emb.view(), wb.view(), sb.view(), from.view(), ids.view()}, GetRowsParams{n, k_used, 0, 0, 1.0f, 0, 0}, n);
    rec.dispatch(kernel, {ids.view(), x.view(), wb.view(), sb.view(), from.view(), ids.view()}, GetRowsParams{n, k_used, 0, 0, 1.0f, 1, 0}, n);
    rec.dispatch(kernel, {ids.view(), y.view(), wb.view(), sb.view(), from.view(), ids.view()}, GetRowsParams{n, k_used, 0, 0, 1.0f, 2, 3}, n);
    rec.finish();
    const float *e = static_cast<const float*>(emb.mapped()), *in_place = static_cast<const float*>(x.mapped()),
                *gathered = static_cast<const float*>(y.mapped());
    for (uint32_t r = 0; r < n; r++)
      for (uint32_t k = 0; k < k_used; k++) {
        volatile float product = scale[k] * e[r * k_used + k];  // (volatile: rounded before the sum, never contracted)
        const float want1 = hidden[r * k_used + k] + product, want2 = hidden[picks[3 + r] * k_used + k] + product;
        ASSERT_EQ(in_place[r * k_used + k], want1) << dtype_name(t) << " in place, row " << r << " k " << k;
        ASSERT_EQ(gathered[r * k_used + k], want2) << dtype_name(t) << " gathered, row " << r << " k " << k;
      }
  }
}

}  // namespace
}  // namespace jf
