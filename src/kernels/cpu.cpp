#include "kernels/cpu.h"

#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace jf {

namespace {

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) return Isa::Avx2;
#endif
  return Isa::Scalar;
}

Isa initial() {
  Isa best = detect();
  const char* env = std::getenv("JF_ISA");
  if (env && std::strcmp(env, "scalar") == 0) return Isa::Scalar;
  return best;
}

Isa g_active = initial();

}  // namespace

Isa best_isa() {
  static const Isa best = detect();
  return best;
}

Isa active_isa() { return g_active; }

void set_active_isa(Isa isa) {
  if (isa == Isa::Avx2 && best_isa() != Isa::Avx2) throw Error("this CPU does not support AVX2+FMA+F16C");
  g_active = isa;
}

std::string isa_name(Isa isa) { return isa == Isa::Avx2 ? "avx2" : "scalar"; }

}  // namespace jf
