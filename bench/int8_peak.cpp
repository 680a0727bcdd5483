// The int8 dot-product ceiling of this CPU: independent VNNI dot products (vpdpbusd, 64 byte products
// each on 512-bit vectors, 32 on 256-bit ones) per second, for 1..T threads of jf's pool. A forward of
// M rows over a model of P weights needs M * P products, so M * P / (this rate) is the least time the
// int8 tiles can take once they stop being bound by memory (docs/BENCHMARKS.md: time(8) / time(1)).
#include <immintrin.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>

#include "base/timer.h"
#include "kernels/cpu.h"
#include "kernels/parallel.h"

using namespace jf;

namespace {

constexpr int kChains = 12;  // independent accumulators: more than latency x throughput

// `steps` rounds of kChains independent dot products (the same loop for each vector width: the two need
// different target attributes, so one template cannot serve both).
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void dots_512(int64_t steps) {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; i++) acc[i] = _mm512_set1_epi32(i);
  __m512i w = _mm512_set1_epi8(3);
  const __m512i x = _mm512_set1_epi8(5);
  for (int64_t s = 0; s < steps; s++) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; i++) acc[i] = _mm512_dpbusd_epi32(acc[i], w, x);
    __asm__("" : "+v"(w));  // not loop-invariant: the products are redone every round
  }
  for (int i = 0; i < kChains; i++) __asm__ volatile("" : : "v"(acc[i]));
}

__attribute__((target("avx2,avxvnni"))) void dots_256(int64_t steps) {
  __m256i acc[kChains];
  for (int i = 0; i < kChains; i++) acc[i] = _mm256_set1_epi32(i);
  __m256i w = _mm256_set1_epi8(3);
  const __m256i x = _mm256_set1_epi8(5);
  for (int64_t s = 0; s < steps; s++) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; i++) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], w, x);
    __asm__("" : "+x"(w));
  }
  for (int i = 0; i < kChains; i++) __asm__ volatile("" : : "x"(acc[i]));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"int8 dot-product (VNNI) peak through jf's thread pool"};
  int max_threads = 2, reps = 5;
  int64_t steps = 20'000'000;
  app.add_option("-t,--threads", max_threads, "Measure 1 .. this many threads")->check(CLI::Range(1, 256));
  app.add_option("--reps", reps, "Runs per thread count (the fastest is reported)")->check(CLI::Range(1, 1000));
  app.add_option("--steps", steps, "Rounds of 12 dot products per thread and run")
      ->check(CLI::Range(int64_t(1000), int64_t(1) << 40));
  CLI11_PARSE(app, argc, argv);
  const bool wide = has_avx512_vnni();
  if (!wide && !isa_supported(Isa::Avx2Vnni)) {
    std::fprintf(stderr, "int8_peak: this CPU has neither AVX-512 VNNI nor AVX-VNNI\n");
    return 1;
  }
  std::printf("%s, %d independent chains, fastest of %d runs\n\n", wide ? "vpdpbusd zmm (AVX-512 VNNI)" : "vpdpbusd ymm (AVX-VNNI)",
              kChains, reps);
  std::printf("| threads | G dot instructions/s | G byte products/s |\n|---|---|---|\n");
  for (int t = 1; t <= max_threads; t++) {
    set_num_threads(t);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
      const double t0 = now_seconds();
      parallel_chunks(t, t > 1, [&](int64_t) { wide ? dots_512(steps) : dots_256(steps); });
      best = std::min(best, now_seconds() - t0);
    }
    const double per_instruction = wide ? 64 : 32;
    const double products = double(t) * double(steps) * kChains * per_instruction;
    std::printf("| %d | %.2f | %.1f |\n", t, products / per_instruction / best / 1e9, products / best / 1e9);
  }
  return 0;
}
