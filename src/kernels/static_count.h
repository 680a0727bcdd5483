// Picks a compile-time count at run time: with_count<N>(k, f) calls f(std::integral_constant<int, k>{})
// for k in 1..N (k < 1 counts as 1), so kernels templated on a tile count need no hand-written switch.
#pragma once
#include <type_traits>

namespace jf {

template <int N, class F>
inline void with_count(int k, F&& f) {
  if constexpr (N > 1)
    if (k < N) return with_count<N - 1>(k, f);
  f(std::integral_constant<int, N>{});
}

}  // namespace jf
