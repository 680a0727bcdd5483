#include "kernels/cpu.h"

#include <cpuid.h>

#include <cstdio>
#include <cstdlib>

#include "base/error.h"

namespace jf {

namespace {

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return Isa::Scalar;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
  if (!(fma && osxsave && avx && f16c)) return Isa::Scalar;
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));  // which register states the OS saves
  if ((lo & 0x6) != 0x6) return Isa::Scalar;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 5))) return Isa::Scalar;  // AVX2
  const bool avx512 = (b & (1u << 16)) && (b & (1u << 30)) && (b & (1u << 31)) && (lo & 0xe0) == 0xe0;  // F, BW, VL
  return avx512 ? Isa::Avx512 : Isa::Avx2;
#else
  return Isa::Scalar;
#endif
}

Isa initial() {
  Isa best = detect();
  const char* env = std::getenv("JF_ISA");
  if (!env || !*env) return best;
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (isa_name(isa) != env) continue;
    if (static_cast<int>(isa) <= static_cast<int>(best)) return isa;
    std::fprintf(stderr, "jf: JF_ISA=%s: this CPU does not support it; using %s\n", env, isa_name(best).c_str());
    return best;
  }
  std::fprintf(stderr, "jf: JF_ISA=%s is not one of scalar, avx2, avx512; using %s\n", env, isa_name(best).c_str());
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
