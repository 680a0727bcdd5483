#include "kernels/cpu.h"

#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace jf {

namespace {

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  if (avx2 && avx512) return Isa::Avx512;
  if (avx2) return Isa::Avx2;
#endif
  return Isa::Scalar;
}

Isa initial() {
  Isa best = detect();
  const char* env = std::getenv("JF_ISA");
  if (env && std::strcmp(env, "scalar") == 0) return Isa::Scalar;
  if (env && std::strcmp(env, "avx2") == 0 && best != Isa::Scalar) return Isa::Avx2;
  return best;
}

Isa g_active = initial();

}  // namespace

Isa best_isa() {
  static const Isa best = detect();
  return best;
}

Isa active_isa() { return g_active; }

bool isa_supported(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(best_isa()); }

void set_active_isa(Isa isa) {
  if (!isa_supported(isa)) throw Error("this CPU does not support " + isa_name(isa));
  g_active = isa;
}

std::string isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    case Isa::Scalar: return "scalar";
  }
  return "?";
}

}  // namespace jf
