#include "kernels/cpu.h"

#include <cpuid.h>

#include <cstdio>
#include <cstdlib>

#include "base/error.h"

namespace jf {

namespace {

struct Features {
  bool avx2 = false, avx2vnni = false, avx512 = false, avx512vnni = false;
};

Features detect() {
  Features f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
  if (!(fma && osxsave && avx && f16c)) return f;
  unsigned lo, hi;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));  // which register states the OS saves
  if ((lo & 0x6) != 0x6) return f;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 5))) return f;  // AVX2
  f.avx2 = true;
  // F, BW, VL, and the OS saving the 512-bit state; VNNI on top of them.
  f.avx512 = (b & (1u << 16)) && (b & (1u << 30)) && (b & (1u << 31)) && (lo & 0xe0) == 0xe0;
  f.avx512vnni = f.avx512 && (c & (1u << 11));
  f.avx2vnni = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4));  // AVX-VNNI
#endif
  return f;
}

const Features& features() {
  static const Features f = detect();
  return f;
}

bool supported(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2: return features().avx2;
    case Isa::Avx2Vnni: return features().avx2vnni;
    case Isa::Avx512: return features().avx512;
  }
  return false;
}

Isa best() {
  for (Isa isa : {Isa::Avx512, Isa::Avx2Vnni, Isa::Avx2})
    if (supported(isa)) return isa;
  return Isa::Scalar;
}

Isa initial() {
  const Isa best_here = best();
  const char* env = std::getenv("JF_ISA");
  if (!env || !*env) return best_here;
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx2Vnni, Isa::Avx512}) {
    if (isa_name(isa) != env) continue;
    if (supported(isa)) return isa;
    std::fprintf(stderr, "jf: JF_ISA=%s: this CPU does not support it; using %s\n", env, isa_name(best_here).c_str());
    return best_here;
  }
  std::fprintf(stderr, "jf: JF_ISA=%s is not one of scalar, avx2, avx2vnni, avx512; using %s\n", env,
               isa_name(best_here).c_str());
  return best_here;
}

Isa g_active = initial();

}  // namespace

Isa best_isa() { return best(); }

namespace {
bool g_avx512_vnni = features().avx512vnni;
}  // namespace

bool has_avx512_vnni() { return g_avx512_vnni; }

void set_avx512_vnni(bool on) {
  if (on && !features().avx512vnni) throw Error("this CPU does not support AVX-512 VNNI");
  g_avx512_vnni = on;
}

Isa active_isa() { return g_active; }

bool isa_supported(Isa isa) { return supported(isa); }

void set_active_isa(Isa isa) {
  if (!isa_supported(isa)) throw Error("this CPU does not support " + isa_name(isa));
  g_active = isa;
}

std::string isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2Vnni: return "avx2vnni";
    case Isa::Avx2: return "avx2";
    case Isa::Scalar: return "scalar";
  }
  return "?";
}

}  // namespace jf
