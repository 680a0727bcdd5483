// The fp16 tiles' row family (matmul_tiles.comp: 16, 32 or 64 rows a workgroup, the weights read once for
// all of them): each against the CPU's dequantized reference, batch-invariant across row counts that fill one,
// two or several workgroups, 32-row tiles the same bits as 16-row ones (only the weights' reads are shared),
// the tile-position probe over a whole 64-row workgroup, and a forward that runs them.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/dtype.h"
#include "vulkan/matmul_grid.h"
#include "vulkan/tile_probe.h"
#include "vulkan_matmul_support.h"
#include "vulkan_support.h"

namespace jf {
namespace {

using vulkan::MatrixMath;

using test::Fixture;
using test::random_floats;
using test::round_f16;

// y = x W^T with the tiles of `tile_rows` (the tiles member of that many rows; `math` says on matrix units or
// with FMAs) for the M rows of x from row `first`.
std::vector<float> tiles_product(Fixture& f, MatrixMath math, uint32_t tile_rows, DType t, const std::vector<uint8_t>& w, uint32_t N,
                                 uint32_t K, const std::vector<float>& x, uint32_t first, uint32_t M) {
  vulkan::MatmulKernel tiles;
  tiles.tile_rows = tile_rows;
  return test::device_matmul(f, t, w, N, K, x, first, M, tiles, math);
}

std::vector<MatrixMath> tile_maths(int device) {
  std::vector<MatrixMath> m;
  for (MatrixMath math : test::matrix_maths(device))
    if (math != MatrixMath::Fma) m.push_back(math);
  return m;
}

TEST(VulkanTileRows, EachMatchesTheReferenceAndIsBatchInvariant) {
  JF_VULKAN_DEVICE(device);
  Fixture f(device);
  const uint32_t N = 24, M = 70;  // 70 rows: two 64-row workgroups (the second with 6), three of 32, five of 16
  for (auto [type, K] : {std::pair<DType, uint32_t>{DType::Q4_K, 512}, {DType::Q8_0, 352}}) {
    const size_t row_bytes = dtype_row_bytes(type, K);
    const std::vector<float> wf = random_floats(size_t{N} * K, 3);
    std::vector<uint8_t> w(row_bytes * N);
    for (uint32_t n = 0; n < N; n++) quantize_row(type, &wf[size_t{n} * K], &w[n * row_bytes], K);
    const std::vector<float> x = random_floats(size_t{M} * K, 5);
    std::vector<float> deq(size_t{N} * K);
    for (uint32_t n = 0; n < N; n++) dequantize_row(type, &w[n * row_bytes], &deq[size_t{n} * K], K);
    for (MatrixMath math : tile_maths(device)) {
      std::vector<float> y16;
      for (uint32_t tile_rows : {16u, 32u, 64u}) {
        const std::string what = dtype_name(type) + " " + vulkan::matrix_math_name(math) + " " + std::to_string(tile_rows) + " rows";
        const std::vector<float> y = tiles_product(f, math, tile_rows, type, w, N, K, x, 0, M);
        for (uint32_t m = 0; m < M; m++)
          for (uint32_t n = 0; n < N; n++) {
            double ref = 0, mag = 0;
            for (uint32_t k = 0; k < K; k++) {
              ref += double(round_f16(x[size_t{m} * K + k])) * round_f16(deq[size_t{n} * K + k]);
              mag += std::fabs(double(x[size_t{m} * K + k]) * deq[size_t{n} * K + k]);
            }
            ASSERT_NEAR(y[size_t{m} * N + n], ref, 2e-3 * mag + 1e-6) << what << " row " << m << " output " << n;
          }
        // A row alone, at the start of a batch, inside one, in the second workgroup: the same bits.
        for (auto [first, count] : {std::pair<uint32_t, uint32_t>{0, 1}, {66, 1}, {9, 61}, {30, 33}}) {
          const std::vector<float> part = tiles_product(f, math, tile_rows, type, w, N, K, x, first, count);
          ASSERT_EQ(0, std::memcmp(part.data(), &y[size_t{first} * N], size_t{count} * N * 4)) << what << " rows " << first << ".." << first + count - 1;
        }
        // 32 rows a workgroup: two 16-row tiles' products of the same steps, so 16-row tiles' bits; 64 rows
        // take steps of 128 inputs (their quarters hold other inputs: other sums, as close to the reference).
        if (tile_rows == 16) y16 = y;
        if (tile_rows == 32) {
          EXPECT_EQ(0, std::memcmp(y.data(), y16.data(), y.size() * 4)) << what;
        }
      }
    }
  }
}

TEST(VulkanTileRows, PositionProbeOverEveryWorkgroupSize) {
  JF_VULKAN_DEVICE(device);
  Fixture f(device);
  for (MatrixMath math : tile_maths(device))
    for (uint32_t tile_rows : {32u, 64u}) {
      const vulkan::TileProbe probe = vulkan::probe_tile_positions(f.ctx, f.kernels, math, tile_rows);
      EXPECT_TRUE(probe.ok()) << vulkan::matrix_math_name(math) << " " << tile_rows << ": " << probe.detail;
    }
}

TEST(VulkanTileRows, BadValuesAreRefused) {
  for (const char* bad : {"8", "48", "", "sixty-four", "128"}) {
    try {
      vulkan::parse_tile_rows(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("use 16, 32 or 64"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(vulkan::parse_tile_rows("64"), 64u);
}

}  // namespace
}  // namespace jf
