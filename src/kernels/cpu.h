// Which instruction set the kernels use: detected once at startup, overridable (JF_ISA=scalar or
// set_active_isa) so tests cover the portable scalar path on any machine.
#pragma once
#include <string>

namespace jf {

enum class Isa { Scalar, Avx2 };  // Avx2 means AVX2 + FMA + F16C

Isa best_isa();    // the best this CPU supports
Isa active_isa();  // what kernels dispatch to now
void set_active_isa(Isa isa);  // throws jf::Error if the CPU lacks it; not thread-safe with running kernels
std::string isa_name(Isa isa);

}  // namespace jf
