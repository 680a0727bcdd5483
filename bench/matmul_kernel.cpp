// The matmul kernels alone: GFLOP/s for one weight matrix by instruction set, weight type and rows M, with
// the weights either cache-resident (one matrix) or streamed from memory (--copies cycles through several
// panel copies larger than the L3 cache). Separates the kernels' efficiency from the rest of a forward.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "base/timer.h"
#include "kernels/cpu.h"
#include "kernels/matmul.h"
#include "kernels/parallel.h"
#include "panel_copies.h"

using namespace jf;

int main(int argc, char** argv) {
  CLI::App app{"Matmul kernel throughput (panel layout)"};
  std::string type = "q8_0";
  std::vector<int64_t> ms = {1, 4, 8, 16};
  int64_t rows = 5632, cols = 2048;
  int copies = 1, threads = 1, reps = 15;
  app.add_option("--type", type, "Weight type: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q4_k", "q5_k",
                             "q6_k", "iq4_nl", "iq4_xs"}));
  app.add_option("--rows", rows, "Output features N")->check(CLI::Range(int64_t(8), int64_t(1) << 20));
  app.add_option("--cols", cols, "Input features K (a multiple of the type's block: 32, or 256 for K-quants and IQ4_XS)")->check(CLI::Range(int64_t(32), int64_t(1) << 20));
  app.add_option("--copies", copies, "Panel copies cycled through (weights streamed from memory when larger than the cache)")
      ->check(CLI::Range(1, 64));
  app.add_option("-t,--threads", threads, "Threads")->check(CLI::Range(1, 256));
  app.add_option("--ms", ms, "Comma-separated row counts")->delimiter(',')->check(CLI::Range(int64_t(1), int64_t(1) << 16));
  app.add_option("--reps", reps, "Repetitions (the fastest is reported)")->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);
  DType t = DType::F32;
  dtype_from_name(type, &t);  // checked above
  if (cols % dtype_block_size(t) != 0) {
    std::fprintf(stderr, "error: --cols must be a multiple of %d for %s, got %lld\n", dtype_block_size(t), type.c_str(),
                 static_cast<long long>(cols));
    return 1;
  }
  set_num_threads(threads);

  Rng rng(1);
  const PanelCopies weights = make_panel_copies(t, rows, cols, copies, rng);
  const std::vector<WeightMatrix>& ws = weights.ws;
  std::printf("%lld x %lld %s, %d copies (%.1f MB of panels), %d threads, fastest of %d\n\n", static_cast<long long>(rows),
              static_cast<long long>(cols), type.c_str(), copies, copies * read_bytes(ws[0]) / 1e6, threads, reps);
  std::printf("| kernels | M | ms per matmul | GFLOP/s | GB/s of weights |\n|---|---|---|---|---|\n");
  for (Isa isa : {Isa::Avx2, Isa::Avx2Vnni, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    set_active_isa(isa);
    for (int64_t m : ms) {
      std::vector<float> x(static_cast<size_t>(m * cols)), y(static_cast<size_t>(m * rows));
      for (float& v : x) v = rng.normal();
      double best = 1e30;
      for (int r = 0; r < reps; r++) {
        const double t0 = now_seconds();
        for (const WeightMatrix& w : ws) matmul(x.data(), m, w, y.data(), threads > 1);
        best = std::min(best, (now_seconds() - t0) / copies);
      }
      std::printf("| %s | %lld | %.3f | %.1f | %.1f |\n", isa_name(isa).c_str(), static_cast<long long>(m), best * 1e3,
                  2.0 * m * rows * cols / best / 1e9, read_bytes(ws[0]) / best / 1e9);
    }
  }
  return 0;
}
