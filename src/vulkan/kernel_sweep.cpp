#include "vulkan/kernel_sweep.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "vulkan/bandwidth.h"
#include "vulkan/buffer.h"
#include "vulkan/k_slices.h"
#include "vulkan/kernels.h"
#include "vulkan/matmul_grid.h"
#include "vulkan/recorder.h"
#include "vulkan/tile_probe.h"
#include "vulkan/timer.h"
#include "vulkan/vulkan_forward.h"

namespace jf::vulkan {

namespace {

constexpr size_t kMaxOutputBytes = size_t{256} << 20;  // a row count whose outputs need more is not timed
// Members of a shape timed at every row count: the fastest kFullyTimed at one row, more of those within 3%
// of the fastest up to kMostFullyTimed (a small matrix, bound by launch latency, has dozens), and the default.
constexpr size_t kFullyTimed = 6, kMostFullyTimed = 12;
// Members of depth 2 and 4 (the same bits as their depth-1 twin, more loads in flight) are timed for the
// fastest kDeepened depth-1 members at one row only: what a deeper pipeline of loads buys depends on the
// member it deepens, and timing every depth of every member would double the sweep.
constexpr size_t kDeepened = 4;
// Seconds of reads before each shape is timed (a GPU's clocks fall while the host compiles its pipelines).
constexpr double kWarmSeconds = 0.25;

// The pipeline member k runs for M rows of m's weight type (its one-row twin at one row; at 2, or any other
// row count, the member itself).
KernelSpec member_spec(const DeviceMatrix& m, const MatmulKernel& member, uint32_t M) {
  const MatmulKernel k = dispatched_member(member, MatrixMath::Fma, M);
  return {matmul_shader(k, MatrixMath::Fma, m.type), matmul_bindings(k, MatrixMath::Fma), matmul_constants(k, MatrixMath::Fma), k.name()};
}
const Kernel& member_kernel(Kernels& kernels, const DeviceMatrix& m, const MatmulKernel& k, uint32_t M) {
  const KernelSpec s = member_spec(m, k, M);
  return kernels.get(s.name, s.bindings, s.constants, s.label);
}

// A member's least time a product at each row count (NaN where the row count is not timed).

std::vector<double> time_member(Context& ctx, Kernels& kernels, const DeviceMatrix& m, const MatmulKernel& k, const std::vector<int>& rows,
                                int reps, const Buffer& x, const Buffer& y) {
  // One timestamp before the reps of each row count and one after each rep: queries[i * (reps + 1) + j].
  Timer timer(ctx, static_cast<uint32_t>(rows.size() * (reps + 1)));
  Recorder rec(ctx);
  KSliceScratch k_slices(ctx);  // (a K-sliced member's)
  rec.begin();
  timer.reset(rec.cmd());
  for (size_t i = 0; i < rows.size(); i++) {
    const uint32_t M = static_cast<uint32_t>(rows[i]), first = static_cast<uint32_t>(i * (reps + 1));
    const bool fits = size_t{M} * m.rows * 4 <= kMaxOutputBytes;
    const MatmulKernel run = dispatched_member(k, MatrixMath::Fma, M);
    const MatmulGrid g = matmul_grid(run, MatrixMath::Fma, m.rows, M);
    if (fits && run.slices > 1) k_slices.take(rec, run, g);  // (grown, its counters zeroed, before the stamp)
    timer.stamp(rec.cmd(), first);
    if (!fits) continue;
    const MatmulParams p = MatmulParams::plain(M, m.rows, m.cols);
    const Kernel& kernel = member_kernel(kernels, m, k, M);
    for (int r = 0; r < reps; r++) {
      dispatch_product(rec, kernel, run, MatrixMath::Fma, {x.view(), y.view(), m.data, x.view(), x.view(), y.view(), y.view()}, p, g, k_slices);
      timer.stamp(rec.cmd(), first + 1 + r);
    }
  }
  rec.finish();
  const std::vector<double> s = timer.seconds();
  std::vector<double> best(rows.size(), NAN);
  for (size_t i = 0; i < rows.size(); i++) {
    if (size_t(rows[i]) * m.rows * 4 > kMaxOutputBytes) continue;
    const size_t first = i * (reps + 1);
    for (int r = 0; r < reps; r++) {
      const double t = s[first + 1 + r] - s[first + r];
      if (std::isnan(best[i]) || t < best[i]) best[i] = t;
    }
  }
  return best;
}

// The qmm members (which give each other's bits) as one candidate: the fastest of them at each of `counts` row
// counts (SIZE_MAX where none was timed), and their times as one member's, named by the fastest at one row.
struct QmmCandidate {
  std::vector<size_t> best;
  MemberTimes times;
};
QmmCandidate fastest_qmm(const std::vector<MemberTimes>& members, size_t counts) {
  QmmCandidate c;
  c.best.assign(counts, SIZE_MAX);
  for (size_t i = 0; i < members.size(); i++)
    for (size_t j = 0; j < counts && members[i].kernel.qmm_bits(); j++)
      if (!std::isnan(members[i].seconds[j]) && (c.best[j] == SIZE_MAX || members[i].seconds[j] < members[c.best[j]].seconds[j])) c.best[j] = i;
  if (c.best[0] == SIZE_MAX) return c;
  c.times = members[c.best[0]];
  for (size_t j = 0; j < counts; j++) c.times.seconds[j] = c.best[j] == SIZE_MAX ? NAN : members[c.best[j]].seconds[j];
  return c;
}

}  // namespace

size_t choose_member(const std::vector<MemberTimes>& members, const std::vector<int>& rows) {
  size_t best = 0;
  for (size_t i = 1; i < members.size(); i++)
    if (members[i].seconds[0] < members[best].seconds[0]) best = i;
  // Among those within 3% at one row: the least time spent on 4-64 rows and on a prompt's 512 / 8.
  const auto rows_cost = [&](const MemberTimes& m) {
    double c = 0;
    for (size_t j = 1; j < rows.size(); j++)
      if (!std::isnan(m.seconds[j])) c += rows[j] > 64 ? m.seconds[j] / 8 : m.seconds[j];
    return c;
  };
  const double limit = members[best].seconds[0] * 1.03;
  size_t chosen = best;
  for (size_t i = 0; i < members.size(); i++)
    if (members[i].seconds[0] <= limit && rows_cost(members[i]) < rows_cost(members[chosen])) chosen = i;
  return chosen;
}

std::vector<std::pair<int, size_t>> choose_qmm_by_rows(const std::vector<MemberTimes>& members, const std::vector<int>& rows) {
  const QmmCandidate qmm = fastest_qmm(members, rows.size());
  const std::vector<size_t>& best = qmm.best;
  if (best[0] == SIZE_MAX) return {};
  std::vector<MemberTimes> candidates = members;
  candidates.push_back(qmm.times);
  // (the candidate is at least as fast as each of its members at every row count: where the objective picks
  // any qmm member, the twins serve instead)
  const size_t chosen = choose_member(candidates, rows);
  if (chosen != members.size() && !members[chosen].kernel.qmm_bits()) return {};
  std::vector<std::pair<int, size_t>> by_rows;
  for (size_t j = 0; j < rows.size(); j++)
    if (best[j] != SIZE_MAX) by_rows.emplace_back(rows[j], best[j]);
  return by_rows;
}

SweepResult sweep_matmul_family(VulkanForward& fwd, const SweepOptions& o) {
  Context& ctx = fwd.context();
  if (!ctx.timestamps()) throw Error("Vulkan: " + ctx.info().name + " has no compute timestamps to time kernels with");
  if (o.rows.empty() || o.rows[0] != 1) throw Error("jf tune --kernels: the row counts must start at 1");
  SweepResult r;
  r.rows = o.rows;
  std::vector<MatmulKernel> family = matmul_family(ctx.info());
  if (!o.only.empty()) {
    for (const MatmulKernel& k : o.only) require_member(ctx.info(), k);
    family = o.only;
  }
  // Tiles members only where the matrix units keep a row's bits at every position of their workgroup.
  std::erase_if(family, [&](const MatmulKernel& k) {
    return k.tile_rows && !probe_tile_positions(ctx, fwd.kernels(), MatrixMath::MatrixUnits, k.tile_rows).ok();
  });
  const auto start = std::chrono::steady_clock::now();
  const auto spent = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  const int max_rows = *std::max_element(o.rows.begin(), o.rows.end());
  const std::vector<DeviceMatrix> matrices = fwd.distinct_matrices();
  Kernels kernels(ctx, /*capture_statistics=*/true);  // the sweep's own pipelines, with the driver's statistics
  for (const DeviceMatrix& m : matrices) {
    if (spent() > o.budget_seconds) {
      r.skipped += static_cast<int>(std::count_if(family.begin(), family.end(), [&](const MatmulKernel& k) { return member_runs(k, {m.rows, m.cols, m.type}) && k.depth == 1; }));
      continue;
    }
    std::vector<KernelSpec> specs;  // every member's pipelines for the weight type, compiled several at once
    for (const MatmulKernel& k : family)
      if (member_runs(k, {m.rows, m.cols, m.type}) && k.depth == 1) specs.push_back(member_spec(m, k, 1)), specs.push_back(member_spec(m, k, 2));
    kernels.prepare(specs);  // (made once a type; the few deeper twins timed are made together below)
    const WarmUp warm = warm_up(ctx, ctx.info().software ? 0.0 : kWarmSeconds);  // (a CPU has no clocks to raise)
    if (r.warm_seconds == 0) r.warm_first_bytes_per_second = warm.first_bytes_per_second, r.warm_last_bytes_per_second = warm.last_bytes_per_second;
    r.warm_seconds += warm.seconds;
    ShapeSweep s;
    s.shape = {m.rows, m.cols, m.type};
    Buffer x(ctx, size_t(max_rows) * m.cols * 4, Buffer::Kind::Device);
    Buffer y(ctx, std::min(size_t(max_rows) * m.rows * 4, kMaxOutputBytes), Buffer::Kind::Device);
    ctx.run([&](VkCommandBuffer cmd) { api().vkCmdFillBuffer(cmd, x.handle(), 0, VK_WHOLE_SIZE, 0x3c23d70a); });  // 0.01f
    // Every member of depth 1 at one row first, then the deeper twins of the fastest few; then every row
    // count for the fastest few (those the objective could pick: within 3% of the fastest at one row) and the
    // default.
    const auto time_one_row = [&](const MatmulKernel& k) {
      if (spent() > o.budget_seconds) {
        r.skipped++;
        return;
      }
      if (k == default_matmul_kernel(m.cols, default_split_min_k(ctx.info()), ctx.info().software)) s.default_member = s.members.size();
      std::vector<double> t(o.rows.size(), NAN);
      t[0] = time_member(ctx, kernels, m, k, {1}, o.reps, x, y)[0];
      const Kernel &rows_kernel = member_kernel(kernels, m, k, 2), &one_row = member_kernel(kernels, m, k, 1);
      s.members.push_back({k, t, kernels.statistics(rows_kernel), &one_row == &rows_kernel ? "" : kernels.statistics(one_row)});
    };
    const auto fastest_first = [&] {
      std::vector<size_t> order(s.members.size());
      for (size_t i = 0; i < order.size(); i++) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s.members[a].seconds[0] < s.members[b].seconds[0]; });
      return order;
    };
    for (const MatmulKernel& k : family)
      if (member_runs(k, {m.rows, m.cols, m.type}) && k.depth == 1) time_one_row(k);
    if (s.members.empty()) continue;
    std::vector<MatmulKernel> deeper;  // the deeper twins of the fastest kDeepened depth-1 members that have any
    size_t deepened_members = 0;
    for (size_t i : fastest_first()) {
      if (deepened_members == kDeepened) break;
      bool any = false;
      for (const MatmulKernel& k : family) {
        MatmulKernel twin = k;
        twin.depth = 1;
        if (k.depth > 1 && twin == s.members[i].kernel) deeper.push_back(k), any = true;
      }
      deepened_members += any;
    }
    if (!deeper.empty()) {  // compiled together, the device warmed again, then timed as their twins were
      std::vector<KernelSpec> deeper_specs;
      for (const MatmulKernel& k : deeper) deeper_specs.push_back(member_spec(m, k, 1)), deeper_specs.push_back(member_spec(m, k, 2));
      kernels.prepare(deeper_specs);
      r.warm_seconds += warm_up(ctx, ctx.info().software ? 0.0 : kWarmSeconds).seconds;
      for (const MatmulKernel& k : deeper) time_one_row(k), r.deepened++;
    }
    const std::vector<size_t> order = fastest_first();
    std::vector<size_t> full;
    int vec_twins = 0;  // (qmm: twins by rows; the fastest two -qmm vec members at one row, every tile)
    for (size_t i : order) {
      const MatmulKernel& k = s.members[i].kernel;
      if (i == s.default_member || full.size() < kFullyTimed || k.qmm || (k.qmm_order && vec_twins < 2) ||
          (full.size() < kMostFullyTimed && s.members[i].seconds[0] <= s.members[order[0]].seconds[0] * 1.03))
        full.push_back(i), vec_twins += k.qmm_order;
    }
    std::vector<MemberTimes> timed;
    for (size_t i : full) {
      s.members[i].seconds = time_member(ctx, kernels, m, s.members[i].kernel, o.rows, o.reps, x, y);
      timed.push_back(s.members[i]);
    }
    s.chosen = full[choose_member(timed, o.rows)];
    if (const auto twins = choose_qmm_by_rows(timed, o.rows); !twins.empty()) {
      s.chosen = full[twins[0].second];
      for (const auto& [rows, i] : twins) s.by_rows.emplace_back(rows, full[i]);
    }
    r.shapes.push_back(std::move(s));
  }
  return r;
}

void record_choices(const SweepResult& r, KernelChoices& into) {
  for (const ShapeSweep& s : r.shapes) {
    KernelChoices::Choice c;
    c.kernel = s.members[s.chosen].kernel;
    for (size_t j = 0; j < r.rows.size(); j++) {
      size_t member = s.chosen;  // (with twins by rows: the one that runs that row count)
      for (const auto& [rows, i] : s.by_rows)
        if (rows == r.rows[j]) member = i;
      if (!std::isnan(s.members[member].seconds[j])) c.seconds.emplace_back(r.rows[j], s.members[member].seconds[j]);
    }
    for (const auto& [rows, i] : s.by_rows) c.by_rows.emplace_back(static_cast<uint32_t>(rows), s.members[i].kernel);
    into.by_shape[s.shape] = c;
  }
}

std::string sweep_table(const SweepResult& r) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-24s %-28s", "matrix (N x K type)", "member");
  out += line;
  for (int rows : r.rows) {
    std::snprintf(line, sizeof line, " %9s", ("M=" + std::to_string(rows)).c_str());
    out += line;
  }
  out += "   (us a product; GB/s: the weights read at one row)\n";
  for (const ShapeSweep& s : r.shapes) {
    const std::string shape = std::to_string(s.shape.n) + " x " + std::to_string(s.shape.k) + " " + dtype_name(s.shape.type);
    const double bytes = static_cast<double>(dtype_row_bytes(s.shape.type, s.shape.k)) * s.shape.n;
    const auto row = [&](const std::string& label, const MemberTimes& m) {
      std::snprintf(line, sizeof line, "%-24s %-28s", label.c_str(), m.kernel.name().c_str());
      out += line;
      for (double t : m.seconds) {
        if (std::isnan(t)) std::snprintf(line, sizeof line, " %9s", "-");
        else std::snprintf(line, sizeof line, " %9.1f", t * 1e6);
        out += line;
      }
      std::snprintf(line, sizeof line, "  %7.1f GB/s\n", m.seconds[0] > 0 ? bytes / m.seconds[0] / 1e9 : 0.0);
      out += line;
      if (!m.compiled.empty()) out += "      compiled: " + m.compiled + "\n";
      if (!m.compiled_one_row.empty()) out += "      one row (-r1): " + m.compiled_one_row + "\n";
    };
    row(shape + " chosen", s.members[s.chosen]);
    if (!s.by_rows.empty()) {
      out += "      by rows (the same bits):";
      for (size_t t = 0; t < s.by_rows.size(); t++)
        out += (t ? ", " : " ") + std::string(t + 1 < s.by_rows.size() ? "M<=" + std::to_string(s.by_rows[t].first) : "beyond") + " " +
               s.members[s.by_rows[t].second].kernel.name();
      out += "\n";
    }
    if (s.default_member != SIZE_MAX && s.default_member != s.chosen) row("  default", s.members[s.default_member]);
    if (const QmmCandidate qmm = fastest_qmm(s.members, r.rows.size()); s.by_rows.empty() && qmm.best[0] != SIZE_MAX) {
      MemberTimes twins = qmm.times;  // what the qmm twins would have cost (the decision a device run is for)
      twins.compiled.clear(), twins.compiled_one_row.clear();
      row("  qmm twins (not chosen)", twins);
      std::snprintf(line, sizeof line, "      one row: %+.1f%% against the chosen (the objective's window: +3%%)\n",
                    100.0 * (twins.seconds[0] / s.members[s.chosen].seconds[0] - 1.0));
      out += line;
    }
    std::vector<size_t> shown = {s.chosen, s.default_member};
    size_t sliced = SIZE_MAX;  // the fastest K-sliced member at one row, where it lost (what slices buy this shape)
    for (size_t i = 0; i < s.members.size(); i++)
      if (s.members[i].kernel.slices > 1 && (sliced == SIZE_MAX || s.members[i].seconds[0] < s.members[sliced].seconds[0])) sliced = i;
    if (sliced != SIZE_MAX && sliced != s.chosen) row("  K slices (not chosen)", s.members[sliced]), shown.push_back(sliced);
    for (size_t j = 0; j < r.rows.size(); j++) {  // the fastest at each row count, where it is another member
      size_t f = 0;  // (members timed at one row only have NaN elsewhere)
      for (size_t i = 1; i < s.members.size(); i++)
        if (std::isnan(s.members[f].seconds[j]) || s.members[i].seconds[j] < s.members[f].seconds[j]) f = i;
      if (std::isnan(s.members[f].seconds[j]) || std::find(shown.begin(), shown.end(), f) != shown.end()) continue;
      shown.push_back(f);
      row("  fastest at M=" + std::to_string(r.rows[j]), s.members[f]);
    }
  }
  if (r.warm_seconds > 0) {
    std::snprintf(line, sizeof line, "device warmed before each matrix: %.1f s of reads in all (the first warm-up read at %.0f GB/s, then %.0f)\n",
                  r.warm_seconds, r.warm_first_bytes_per_second / 1e9, r.warm_last_bytes_per_second / 1e9);
    out += line;
  }
  if (r.deepened)
    out += std::to_string(r.deepened) + " deeper members timed (-d2, -d4: the twins of each matrix's " + std::to_string(kDeepened) +
           " fastest members at one row)\n";
  if (r.skipped) out += std::to_string(r.skipped) + " (matrix, member) pairs not timed: the budget ran out\n";
  return out;
}

}  // namespace jf::vulkan
