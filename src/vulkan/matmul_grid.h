// Which matrix kernel a weight matrix uses and the grid it runs on: decided by the device and the matrix (its
// family member, matmul_family.h), never by the row count, so each output sees the same operations in a
// forward of any size (batch invariance).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "vulkan/context.h"
#include "vulkan/matmul_family.h"

namespace jf::vulkan {

// How a forward's matrix products are computed, chosen once per forward pass, never by the row count:
// - Fma: fp32 FMAs, the matrix's member of the FMA family (matmul_family.h);
// - Tiles: matmul_tiles with fp16 inputs and fp32 sums, its block products as FMAs (any device; the stand-in
//   that tests the tiles where there are no matrix units);
// - MatrixUnits: matmul_tiles on the device's matrix units (NV cooperative matrices, DeviceInfo::matrix_units).
// Tiles round weights and inputs to fp16, so logits move by ~1e-3 against Fma; each choice is batch-invariant.
enum class MatrixMath { Fma, Tiles, MatrixUnits };

// "fma", "tiles" or "matrix-units"; throws jf::Error naming the choices for anything else.
MatrixMath parse_matrix_math(const std::string& name);
const char* matrix_math_name(MatrixMath m);

struct MatmulGrid {
  uint32_t x = 1, y = 1, z = 1;
};

inline constexpr uint32_t kTileOutputs = 16;   // NT in matmul_tiles.comp
inline constexpr uint32_t kTileRows = 16;      // MT in matmul_tiles.comp

// Rows a tiles workgroup covers: 16, 32 or 64 (matmul_tiles.comp's SUB row tiles of 16; a member's
// tile_rows, or JF_VULKAN_TILE_ROWS where JF_VULKAN_MATMUL puts every matrix on the tiles), never chosen by
// the row count; with 64 a workgroup reads and dequantizes its weights once for up to 64 rows. A row's sums
// are its 16-row tile's whichever is chosen, up to the step (64 rows take 128 inputs a step, the others 256).
// parse_tile_rows throws jf::Error naming the choices for anything but "16", "32" or "64".
uint32_t parse_tile_rows(const std::string& s);
// Whether member k under `math` runs the tiles, and with how many rows a workgroup.
inline bool runs_tiles(const MatmulKernel& k, MatrixMath math) { return math != MatrixMath::Fma || k.tile_rows; }
inline uint32_t tile_rows_of(const MatmulKernel& k) { return k.tile_rows ? k.tile_rows : kTileRows; }

// The smallest K that matmul_split takes on `d`. A GPU reads a weight row coalesced only when a workgroup
// shares it, so from one step of 64 threads x 4 inputs. A software device (lavapipe) runs a workgroup's threads
// as SIMD lanes of one core, where a thread per output is 3x faster and the split's reduction only costs, so
// there the split starts where a thread per output would have too long a row.
inline uint32_t default_split_min_k(const DeviceInfo& d) { return d.software ? 2048 : 256; }

// A product's push constants (shaders/matmul_io.glsl's Params), and the buffers it binds: X, Y, the weights,
// the folded norm's gain, the GLU's up values, the second and third output matrices (unused ones bound to X
// or Y).
struct MatmulParams {
  uint32_t M = 0, N = 0, K = 0, x_off = 0, x_stride = 0, y_off = 0, y_stride = 0, accumulate = 0, norm = 0;
  float eps = 1e-5f;
  uint32_t glu = 0, n1 = 0, n2 = 0;
  uint32_t glu_out = 0;  // 1 or 2: the GLU in the epilogue (matmul_io.glsl's store_glu)
  // M rows of K inputs to N outputs, row-major, all into Y.
  static MatmulParams plain(uint32_t M, uint32_t N, uint32_t K) {
    MatmulParams p;
    p.M = M, p.N = N, p.K = K, p.x_stride = K, p.y_stride = N, p.n1 = p.n2 = N;
    return p;
  }
};
inline constexpr uint32_t kMatmulBindings = 7;
// A K-sliced member's (k_slices.glsl) two more: the slices' partial sums and a counter a tile (k_slices.h).
inline constexpr uint32_t kSlicedMatmulBindings = kMatmulBindings + 2;

// The grid for N outputs and M rows with member k (FMA, or the tiles: a tiles member, or any member under
// the tiles' math): groups of outputs along x (wrapping to z past 65535), groups of rows along y (K slices: each
// group of rows `slices` workgroups along y, its slices in order).
inline MatmulGrid matmul_grid(const MatmulKernel& k, MatrixMath math, uint32_t N, uint32_t M) {
  const bool tiles = runs_tiles(k, math);
  const uint32_t per_group = tiles ? kTileOutputs : k.outputs_per_group(), rows = tiles ? tile_rows_of(k) : k.rows_per_group();
  const uint32_t groups = (N + per_group - 1) / per_group;
  MatmulGrid g;
  g.x = std::min<uint32_t>(groups, 65535);
  g.z = (groups + g.x - 1) / g.x;
  g.y = (M + rows - 1) / rows * (tiles ? 1 : k.slices);
  return g;
}

// The pipeline a product of M rows runs for member k: k itself, or for one row (a decode step) its one-row
// twin, k compiled with R = 1 (its name says -r1; llama.cpp likewise builds its matrix-vector shaders per
// number of columns). matmul_split and matmul_vec keep each row's sums in accumulators of its own and reduce
// every row's the same way whatever R, so the twin gives the bits k gives that row in any batch (the family
// test's rows alone run it); a decode step then holds one row's sums and inputs in registers, not R rows'.
// (The tiles and matmul_serial keep their rows: their row counts are no constant of theirs.)
inline MatmulKernel dispatched_member(const MatmulKernel& k, MatrixMath math, uint32_t M) {
  if (M != 1 || runs_tiles(k, math) || k.serial || k.qmm) return k;
  MatmulKernel twin = k;
  twin.rows = 1;
  return twin;
}

// The shader of member k (or the tiles) for weights of type t ("matmul_split_sg_q4_k", ...) and its
// specialization constants.
inline std::string matmul_shader(const MatmulKernel& k, MatrixMath math, DType t) {
  if (runs_tiles(k, math)) return (math == MatrixMath::Tiles ? "matmul_tiles_" : "matmul_units_") + dtype_name(t);
  if (k.qmm) return (k.units ? "matmul_qmm_units_" : "matmul_qmm_") + dtype_name(t);
  if (k.vec) return (k.qmm_order ? "matmul_vec_qmm_" : k.dot ? "matmul_vec_dot_" : "matmul_vec_") + std::string(k.slices > 1 ? "ks_" : "") + dtype_name(t);
  return (k.serial ? "matmul_serial_" : k.subgroup ? "matmul_split_sg_" : "matmul_split_") + dtype_name(t);
}
// The buffers member k binds (under `math`): the product's, and a K-sliced member's scratch.
inline uint32_t matmul_bindings(const MatmulKernel& k, MatrixMath math) {
  return !runs_tiles(k, math) && k.slices > 1 ? kSlicedMatmulBindings : kMatmulBindings;
}
// (the tiles: SUB row tiles, and KS inputs a step: 128 for 64 rows, whose inputs would not fit 48 KB at 256)
inline std::vector<uint32_t> matmul_constants(const MatmulKernel& k, MatrixMath math) {
  if (runs_tiles(k, math)) {
    const uint32_t rows = tile_rows_of(k);
    return rows == kTileRows ? std::vector<uint32_t>{} : std::vector<uint32_t>{rows / kTileRows, rows == 64 ? 128u : 256u};
  }
  if (k.qmm) return {k.outputs, k.rows};
  return k.serial ? std::vector<uint32_t>{} : k.constants();
}

}  // namespace jf::vulkan
