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

// --mix: which other vector instructions compete with vpdpbusd for its execution pipes. A round is 16
// independent dot products (zmm0-15) plus 8 independent instructions of one kind (zmm18-21, no chains
// longer than two), written in assembly so that the compiler cannot spill, merge or reorder them; an
// instruction that runs on other pipes adds nothing to the round. (The K-quant tiles' scale steps are such
// multiplies: docs/BENCHMARKS.md.)
#define JF_DOTS16                                                                                              \
  "vpdpbusd %%zmm16,%%zmm17,%%zmm0\n vpdpbusd %%zmm16,%%zmm17,%%zmm1\n vpdpbusd %%zmm16,%%zmm17,%%zmm2\n"         \
  "vpdpbusd %%zmm16,%%zmm17,%%zmm3\n vpdpbusd %%zmm16,%%zmm17,%%zmm4\n vpdpbusd %%zmm16,%%zmm17,%%zmm5\n"         \
  "vpdpbusd %%zmm16,%%zmm17,%%zmm6\n vpdpbusd %%zmm16,%%zmm17,%%zmm7\n vpdpbusd %%zmm16,%%zmm17,%%zmm8\n"         \
  "vpdpbusd %%zmm16,%%zmm17,%%zmm9\n vpdpbusd %%zmm16,%%zmm17,%%zmm10\n vpdpbusd %%zmm16,%%zmm17,%%zmm11\n"       \
  "vpdpbusd %%zmm16,%%zmm17,%%zmm12\n vpdpbusd %%zmm16,%%zmm17,%%zmm13\n vpdpbusd %%zmm16,%%zmm17,%%zmm14\n"      \
  "vpdpbusd %%zmm16,%%zmm17,%%zmm15\n"
#define JF_FOUR(op) op " %%zmm22,%%zmm23,%%zmm18\n " op " %%zmm22,%%zmm23,%%zmm19\n " op " %%zmm22,%%zmm23,%%zmm20\n " op " %%zmm22,%%zmm23,%%zmm21\n"
#define JF_MIX(name, body)                                                                                     \
  __attribute__((target("avx512f,avx512bw,avx512vnni"))) void name(int64_t steps) {                          \
    for (int64_t s = 0; s < steps; s++)                                                                        \
      __asm__ volatile(body ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",  \
                       "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm18", "xmm19", "xmm20", "xmm21"); \
  }
JF_MIX(mix_none, JF_DOTS16)
JF_MIX(mix_mulps, JF_DOTS16 JF_FOUR("vmulps") JF_FOUR("vmulps"))
JF_MIX(mix_fma, JF_DOTS16 JF_FOUR("vfmadd231ps") JF_FOUR("vfmadd231ps"))
JF_MIX(mix_mulld, JF_DOTS16 JF_FOUR("vpmulld") JF_FOUR("vpmulld"))
JF_MIX(mix_addd, JF_DOTS16 JF_FOUR("vpaddd") JF_FOUR("vpaddd"))
JF_MIX(mix_andd, JF_DOTS16 JF_FOUR("vpandd") JF_FOUR("vpandd"))
JF_MIX(mix_dpwssd, JF_DOTS16 JF_FOUR("vpdpwssd") JF_FOUR("vpdpwssd"))
JF_MIX(mix_maddwd, JF_DOTS16 JF_FOUR("vpmaddwd") JF_FOUR("vpmaddwd"))
JF_MIX(mix_slld, JF_DOTS16 "vpslld $16,%%zmm23,%%zmm18\n vpslld $16,%%zmm23,%%zmm19\n vpslld $16,%%zmm23,%%zmm20\n"
                           "vpslld $16,%%zmm23,%%zmm21\n vpslld $16,%%zmm22,%%zmm18\n vpslld $16,%%zmm22,%%zmm19\n"
                           "vpslld $16,%%zmm22,%%zmm20\n vpslld $16,%%zmm22,%%zmm21\n")
JF_MIX(mix_cvt, JF_DOTS16 "vcvtdq2ps %%zmm23,%%zmm18\n vcvtdq2ps %%zmm23,%%zmm19\n vcvtdq2ps %%zmm23,%%zmm20\n"
                          "vcvtdq2ps %%zmm23,%%zmm21\n vcvtdq2ps %%zmm22,%%zmm18\n vcvtdq2ps %%zmm22,%%zmm19\n"
                          "vcvtdq2ps %%zmm22,%%zmm20\n vcvtdq2ps %%zmm22,%%zmm21\n")

void print_mix(int reps, int64_t steps) {
  struct Kind {
    const char* name;
    void (*run)(int64_t);
  };
  const Kind kinds[] = {{"vmulps", mix_mulps}, {"vfmadd231ps", mix_fma}, {"vpmulld", mix_mulld},
                        {"vpdpwssd", mix_dpwssd}, {"vpmaddwd", mix_maddwd}, {"vpaddd", mix_addd},
                        {"vpandd", mix_andd},  {"vpslld", mix_slld},    {"vcvtdq2ps", mix_cvt}};
  auto fastest = [&](void (*run)(int64_t)) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
      const double t0 = now_seconds();
      run(steps);
      best = std::min(best, now_seconds() - t0);
    }
    return best / double(steps) * 1e9;  // ns per round
  };
  std::printf("\nOne thread, rounds of 16 independent vpdpbusd zmm plus 8 instructions of one kind:\n\n");
  std::printf("| added instruction | ns per round | each costs, in dot products |\n|---|---|---|\n");
  const double alone = fastest(mix_none);
  std::printf("| (none) | %.3f | |\n", alone);
  for (const Kind& k : kinds) {
    const double t = fastest(k.run);
    std::printf("| %s | %.3f | %.2f |\n", k.name, t, (t - alone) / (alone / 16) / 8);
  }
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
  bool mix = false;
  app.add_flag("--mix", mix, "Also measure which instructions share the dot products' pipes (AVX-512 VNNI)");
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
  if (mix && wide) print_mix(reps, steps / 2);
  if (mix && !wide) std::printf("\n--mix needs AVX-512 VNNI\n");
  return 0;
}
