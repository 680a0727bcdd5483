// The FMA matrix-product kernels as a family: members differ in shape (threads, outputs and rows a workgroup,
// two fours of weights a thread whose bytes are read once, the reduction through subgroup shuffles) and in
// where the weights' scale and offset apply (fold: once a four, not a weight; pair members only, to keep the
// device sweep short), set as specialization constants of shaders/matmul_split.comp, plus matmul_serial.comp
// (a thread per output). Every member is batch-invariant by construction: a row's sum depends on K, the member and the
// device, never on the row count or the row's place in it. Which member each matrix shape runs is chosen by
// timing them on the device (`jf tune --kernels`, kernel_sweep.h) and kept per device and driver in jf's
// cache; an untimed shape runs the default.
#pragma once
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kernels/dtype.h"
#include "vulkan/attention_sweep.h"
#include "vulkan/context.h"

namespace jf::vulkan {

struct MatmulKernel {
  bool serial = false;  // matmul_serial (the shape fields below unused)
  // A tiles member ("tiles-r16", -r32, -r64): matmul_tiles on the device's matrix units, that many rows a
  // workgroup (matmul_grid.h); 0 for the FMA members. Only on devices whose matrix units pass the probe.
  uint32_t tile_rows = 0;
  // A vec member ("vec-wgW-oO-rR"): matmul_vec.comp, Q3_K-Q6_K, IQ4_XS and Q8_0 only (eight threads a group of
  // 256 weights, each weight byte read once in whole words; the shape fields below its wg, outputs and rows;
  // subgroup sums).
  bool vec = false;
  // A vec member "-dot": the same pieces dotted as packed int8s by OpSDot (DeviceInfo::int_dot), its weights
  // packed once a group for all rows and each row's inputs quantized to int8 as the CPU's int8 kernels quantize
  // them (Q8Rows): less arithmetic a row than fp32 FMAs, each product the CPU's int8 one but for fp32 rounding.
  bool dot = false;
  // A qmm member ("qmm-oO-rR", "-mu" on the matrix units): matmul_qmm.comp, the vec types, O outputs and R rows
  // (16, 32 or 64) a workgroup of 128 threads, the inputs quantized as the CPU's, each sub-block's products
  // added as integers and only (super-)blocks in fp32, in order: every qmm member gives every other's bits, with or
  // without the matrix units (DeviceInfo::int8_matrix_units), whatever O and R.
  bool qmm = false, units = false;
  // A vec member "-qmm" (a -dot member, 4 rows, the vec types): the integer sums of each super-block over its
  // eight lanes and the super-blocks (blocks) added in fp32 in order as a qmm member adds them, so it gives the qmm
  // members' bits: a bandwidth-shaped twin for one row beside the matrix units' tiles for many.
  bool qmm_order = false;
  // Whether the member gives the qmm members' bits (a qmm member or a vec -qmm member): such members compete
  // as one and serve as twins by row count (KernelChoices::Choice::by_rows).
  bool qmm_bits() const { return qmm || qmm_order; }
  uint32_t wg = 64, outputs = 4, rows = 8;
  bool pair = false, fold = false, subgroup = false;  // fold only with pair
  // Steps whose weight loads a thread issues before it uses the first ("-d2", "-d4"; vec and subgroup split
  // members of 4 rows): more bytes in flight for a latency-bound GPU. A thread takes the same weights in the
  // same order whatever the depth, so a member gives its depth-1 twin's bits (tested), and the sweep times
  // the depths of the fastest depth-1 members only (kernel_sweep.h).
  uint32_t depth = 1;
  // K slices ("-k2", "-k4"; vec fp32 and -dot members): the workgroups of a tile of outputs and rows split K into
  // that many fixed ranges of super-blocks, each adds its own in the member's order, and the last to finish adds
  // the slices' sums in slice order (shaders/k_slices.glsl): more workgroups for a long-K, short-N matrix (the
  // down projection) whose outputs alone leave SMs idle. A row's sum is a function of K and the member still.
  // Only where K >= 2N (member_runs).
  uint32_t slices = 1;
  // "serial", "vec-wg64-o2-r4-d2-dot" or "split-wg128-o4-r8-pair-fold-sg": what the cache, the profile and
  // JF_VULKAN_KERNELS say.
  std::string name() const;
  // The specialization constants of matmul_split.comp (constant ids 0..5), or matmul_vec.comp's (0..3).
  std::vector<uint32_t> constants() const {
    if (vec && slices > 1) return {wg, outputs, rows, depth, slices};
    return vec ? std::vector<uint32_t>{wg, outputs, rows, depth}
               : std::vector<uint32_t>{wg, outputs, rows, pair ? 1u : 0u, fold ? 1u : 0u, depth};
  }
  uint32_t outputs_per_group() const { return tile_rows ? 16 : serial ? 64 : outputs; }
  uint32_t rows_per_group() const { return tile_rows ? tile_rows : serial ? 8 : rows; }
  bool operator==(const MatmulKernel& o) const { return name() == o.name(); }
};

// Throws jf::Error naming the form for a string that is not a member's name.
MatmulKernel parse_matmul_kernel(const std::string& name);

// The weight types the vec and qmm members have kernels for (src/vulkan/CMakeLists.txt builds matmul_vec_<type>,
// matmul_vec_qmm_<type> and matmul_qmm_<type> for each; a member on a type without one would fail to find its
// shader, which the family test would meet).
inline constexpr DType kVecTypes[] = {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_0, DType::Q3_K, DType::IQ4_XS};

// Whether member k has a kernel for weights of type t (a vec or qmm member: kVecTypes; the others: all).
inline bool member_runs_type(const MatmulKernel& k, DType t) {
  return !(k.vec || k.qmm) || std::find(std::begin(kVecTypes), std::end(kVecTypes), t) != std::end(kVecTypes);
}

// Every member `d` can run: its shared memory within the device's, subgroup members only where the device
// has subgroup shuffles and subgroups of 8 or more, tiles members only where it has matrix units (whether they
// pass the tile-position probe is checked where they are timed or used: tile_probe.h).
std::vector<MatmulKernel> matmul_family(const DeviceInfo& d);
// Throws jf::Error, naming what it may lack, where `d` cannot run member k (k is not in matmul_family(d)).
void require_member(const DeviceInfo& d, const MatmulKernel& k);
// Shared memory a member uses, in bytes.
uint32_t matmul_shared_bytes(const MatmulKernel& k);

// What an untimed matrix of K inputs runs: a thread per output below split_min_k (matmul_grid.h), else 64
// threads, 2 outputs, 4 rows on a hardware GPU (at one row 2.5-3.7x faster than 4 outputs, 8 rows on every
// shape the H200 timed: docs/device-runs/2026-11-29-h200.md), 4 outputs, 8 rows on a software one.
MatmulKernel default_matmul_kernel(uint32_t K, uint32_t split_min_k, bool software = true);

// A matrix shape the kernels are chosen for.
struct MatmulShape {
  uint32_t n = 0, k = 0;
  DType type = DType::F32;
  bool operator<(const MatmulShape& o) const {
    return n != o.n ? n < o.n : k != o.k ? k < o.k : static_cast<int>(type) < static_cast<int>(o.type);
  }
};

// Whether member k runs a matrix of shape s: its type (member_runs_type), and K slices only on a long-K,
// short-N matrix (K >= 2N: where outputs alone may leave the device idle, and the slices' partial sums stay
// within a few times the outputs).
inline bool member_runs(const MatmulKernel& k, const MatmulShape& s) {
  return member_runs_type(k, s.type) && (k.slices == 1 || uint64_t{s.k} >= 2 * uint64_t{s.n});
}

// The members chosen for one device and driver, by shape, with the times that chose them.
struct KernelChoices {
  struct Choice {
    MatmulKernel kernel;
    std::vector<std::pair<int, double>> seconds;  // (rows, device seconds a product) for the chosen member
    // Twins by row count, where the chosen member is a qmm one (all qmm members give the same bits): a
    // product of M rows runs the member of the first entry whose rows are >= M (the last one's beyond them);
    // empty: `kernel` at every row count.
    std::vector<std::pair<uint32_t, MatmulKernel>> by_rows;
    // The twin a product of M rows runs: its index into by_rows (which must not be empty), and the member.
    size_t twin_for(uint32_t M) const {
      for (size_t i = 0; i < by_rows.size(); i++)
        if (M <= by_rows[i].first) return i;
      return by_rows.size() - 1;
    }
    const MatmulKernel& member_for(uint32_t M) const { return by_rows.empty() ? kernel : by_rows[twin_for(M)].second; }
  };
  std::string device, driver;
  std::map<MatmulShape, Choice> by_shape;
  std::optional<AttentionChoice> attention;  // attention_sweep.h's choice, if timed

  // $XDG_CACHE_HOME/jf/vulkan-kernels/<device and driver>.json (base/cache_dir.h).
  static std::string cache_path(const DeviceInfo& d);
  // The cached choices for `d` (empty when none are cached); throws jf::Error naming the file when it is
  // malformed or names a member `d` cannot run.
  static KernelChoices load(const DeviceInfo& d);
  static KernelChoices read(const std::string& path, const DeviceInfo& d);
  // Written atomically (temp file + rename); the directory is made if missing.
  void write(const std::string& path) const;
};

}  // namespace jf::vulkan
