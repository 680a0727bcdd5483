// Which instruction set the kernels use: detected once at startup, overridable (JF_ISA=scalar|avx2|avx512
// or set_active_isa) so tests cover the portable scalar path on any machine.
#pragma once
#include <string>

namespace jf {

// Avx2: AVX2 + FMA + F16C. Avx512: additionally AVX-512 F/BW/VL (matmul uses 512-bit tiles; other ops
// keep their AVX2 code).
enum class Isa { Scalar, Avx2, Avx512 };

Isa best_isa();    // the best this CPU supports
Isa active_isa();  // what kernels dispatch to now
bool isa_supported(Isa isa);
void set_active_isa(Isa isa);  // throws jf::Error if the CPU lacks it; not thread-safe with running kernels
std::string isa_name(Isa isa);

}  // namespace jf
