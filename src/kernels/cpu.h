// Which instruction set the kernels use: detected once at startup, overridable (JF_ISA=scalar|avx2|avx2vnni|avx512
// or set_active_isa) so tests cover the portable scalar path on any machine.
#pragma once
#include <string>

namespace jf {

// Avx2: AVX2 + FMA + F16C. Avx2Vnni: additionally AVX-VNNI, used only by int8 dot products (Q8_0 matmul);
// everything else runs the AVX2 code. Avx512: AVX2 + AVX-512 F/BW/VL (matmul and attention use 512-bit
// code, the int8 matmul only with AVX-512 VNNI, else the AVX2 one; other ops keep their AVX2 code). A CPU
// may support Avx512 without Avx2Vnni.
enum class Isa { Scalar, Avx2, Avx2Vnni, Avx512 };

Isa best_isa();    // the best this CPU supports (Avx512 over Avx2Vnni over Avx2)
Isa active_isa();  // what kernels dispatch to now
bool isa_supported(Isa isa);
bool has_avx512_vnni();  // for the Avx512 int8 matmul (kernels/matmul.cpp)
void set_avx512_vnni(bool on);  // tests: run Avx512 as a CPU without VNNI would (throws if `on` is unsupported)
void set_active_isa(Isa isa);  // throws jf::Error if the CPU lacks it; not thread-safe with running kernels
std::string isa_name(Isa isa);

}  // namespace jf
