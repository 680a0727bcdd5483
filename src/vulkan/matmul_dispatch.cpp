// VulkanForward's matrix products: which family member each matrix runs (matmul_family.h: the constructor's,
// JF_VULKAN_KERNELS, the choices jf tune --kernels cached, or the default) and the dispatch of one product.
#include <algorithm>
#include <cstdlib>
#include <set>

#include "base/error.h"
#include "vulkan/matmul_grid.h"
#include "vulkan/tile_probe.h"
#include "vulkan/vulkan_forward.h"

namespace jf::vulkan {

// Where every matrix's FMA member comes from: the constructor's, JF_VULKAN_KERNELS, the cached choices, or the
// default (matmul_family.h).
void VulkanForward::choose_kernels() {
  const char* env = std::getenv("JF_VULKAN_KERNELS");
  const std::string e = env ? env : "";
  if (every_matrix_) {
    kernel_source_ = "every matrix: " + every_matrix_->name();
  } else if (e == "default") {
    kernel_source_ = "default (JF_VULKAN_KERNELS=default)";
  } else if (e.find('/') != std::string::npos || e.find(".json") != std::string::npos) {
    choices_ = KernelChoices::read(e, ctx_->info());
    kernel_source_ = "chosen for " + choices_.device + " (JF_VULKAN_KERNELS=" + e + ")";
  } else if (!e.empty()) {
    every_matrix_ = parse_matmul_kernel(e);
    kernel_source_ = "every matrix: " + e + " (JF_VULKAN_KERNELS)";
  } else {
    choices_ = KernelChoices::load(ctx_->info());
    kernel_source_ = choices_.by_shape.empty() ? "default (no jf tune --kernels for this device)"
                                               : "chosen by jf tune --kernels (" + KernelChoices::cache_path(ctx_->info()) + ")";
  }
  if (every_matrix_) require_member(ctx_->info(), *every_matrix_);
  // Tiles members run on the matrix units only where those keep a row's bits at every tile position.
  std::set<uint32_t> tile_rows;
  if (every_matrix_ && every_matrix_->tile_rows) tile_rows.insert(every_matrix_->tile_rows);
  for (const auto& [shape, choice] : choices_.by_shape)
    if (choice.kernel.tile_rows) tile_rows.insert(choice.kernel.tile_rows);
  for (uint32_t rows : tile_rows)
    if (const TileProbe probe = probe_tile_positions(*ctx_, *kernels_, MatrixMath::MatrixUnits, rows); !probe.ok())
      throw Error("Vulkan: " + ctx_->info().name + "'s matrix units fail jf's tile-position probe (" + probe.detail +
                  "), so the matrix kernel tiles-r" + std::to_string(rows) + " cannot run batch-invariantly; " +
                  "JF_VULKAN_KERNELS=default runs the FMA kernels (and jf tune --kernels chooses again)");
}

MatmulKernel VulkanForward::kernel_for(const MatmulShape& s) const {
  if (every_matrix_ && member_runs(*every_matrix_, s)) return *every_matrix_;  // (else the default)
  auto it = choices_.by_shape.find(s);
  return it != choices_.by_shape.end() ? it->second.kernel : default_matmul_kernel(s.k, split_min_k_, ctx_->info().software);
}

std::vector<DeviceMatrix> VulkanForward::distinct_matrices() const {
  std::vector<DeviceMatrix> all;
  for (const DeviceLayer* L : {&weights_->layers[0], &weights_->draft_layer})
    for (const DeviceMatrix* m : {&L->wqkv, &L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate_up, &L->w_gate, &L->w_up, &L->w_down})
      all.push_back(*m);
  for (const DeviceLayer& L : weights_->layers)  // (mixed-type files: a later layer's types may differ)
    for (const DeviceMatrix* m : {&L.wqkv, &L.wv, &L.w_down}) all.push_back(*m);
  all.push_back(weights_->output);  // (last: the largest, where a sweep's budget may run out)
  std::vector<DeviceMatrix> distinct;
  std::set<MatmulShape> seen;
  for (const DeviceMatrix& m : all)
    if (m && seen.insert({m.rows, m.cols, m.type}).second) distinct.push_back(m);
  return distinct;
}

// y (+)= x W^T over `rows` rows; with a `norm_gain`, x's rows RMS-normalised by it first, inside the product
// (shaders/norm_fold.glsl: the RMSNorm before q/k/v and gate/up costs no dispatch of its own); with `glu_up`,
// the inputs are act(x) * glu_up (the GLU before the down projection); with `split`, a concatenated matrix's
// outputs go to y, split->y2 and split->y3 (shaders/matmul_io.glsl).
const VulkanForward::MatrixKernel& VulkanForward::kernel_of(const DeviceMatrix& w) {
  MatrixKernel& mk = matrix_kernels_[w.id];
  if (!mk.kernel) {
    if (math_ == MatrixMath::Fma) {
      mk.member = kernel_for({w.rows, w.cols, w.type});
    } else {  // JF_VULKAN_MATMUL: every matrix on the tiles
      mk.member = MatmulKernel{};
      mk.member.tile_rows = tile_rows_;
    }
    const auto pipelines = [&](const MatmulKernel& k) {
      const auto pipeline = [&](const MatmulKernel& m) {
        return &kernels_->get(matmul_shader(m, math_, w.type), matmul_bindings(m, math_), matmul_constants(m, math_), m.name());
      };
      MemberPipelines p{pipeline(k), nullptr, k};
      const MatmulKernel twin = dispatched_member(k, math_, 1);
      p.one_row = twin.rows == k.rows ? p.kernel : pipeline(twin);
      return p;
    };
    static_cast<MemberPipelines&>(mk) = pipelines(mk.member);
    const auto choice = choices_.by_shape.find({w.rows, w.cols, w.type});
    if (math_ == MatrixMath::Fma && choice != choices_.by_shape.end() && choice->second.kernel == mk.member &&
        !choice->second.by_rows.empty()) {
      mk.twins = &choice->second;
      for (const auto& [rows, k] : choice->second.by_rows) mk.twin_pipelines.push_back(pipelines(k));
    }
  }
  return mk;
}

bool VulkanForward::glu_in_epilogue(const DeviceMatrix& w) {
  const MatmulKernel& k = kernel_of(w).member;
  return !runs_tiles(k, math_) && !k.serial && !k.qmm_bits() && k.outputs % 2 == 0 && w.rows % 2 == 0;
}

void VulkanForward::matmul(const DeviceMatrix& w, View x, uint32_t rows, View y, bool accumulate, View norm_gain, View glu_up,
                           const SplitOutputs* split, uint32_t glu_out) {
  MatmulParams p = MatmulParams::plain(rows, w.rows, w.cols);
  p.accumulate = accumulate ? 1u : 0u, p.norm = norm_gain.buffer ? 1u : 0u, p.eps = cfg_.norm_eps;
  p.glu = glu_up.buffer ? (cfg_.gemma() ? 2u : 1u) : 0u;
  if (split) p.n1 = p.y_stride = split->n1, p.n2 = split->n2;
  if (glu_out) p.glu_out = glu_out, p.y_stride = w.rows / 2, glu_epilogues_++;
  const MatrixKernel& mk = kernel_of(w);
  // (twins that give the member's bits, the fastest for this row count)
  const MemberPipelines& chosen = mk.twins ? mk.twin_pipelines[mk.twins->twin_for(rows)] : mk;
  const MatmulKernel run = dispatched_member(chosen.member, math_, rows);  // (the rule lives there alone)
  const Kernel* kernel = run.rows == chosen.member.rows ? chosen.kernel : chosen.one_row;
  if (rows == 1 && mk.one_row != mk.kernel) one_row_twins_++;
  if (mk.twins) rows_twins_++;
  const MatmulGrid g = matmul_grid(run, math_, w.rows, rows);
  const View y2 = split ? split->y2 : y, y3 = split && split->y3.buffer ? split->y3 : y;
  dispatch_product(rec_, *kernel, run, math_, {x, y, w.data, norm_gain.buffer ? norm_gain : x, glu_up.buffer ? glu_up : x, y2, y3}, p, g, *k_slices_);
}

}  // namespace jf::vulkan
