// The last step of attention, out_h = inv_h * sum_j p_h[j] v[slots[j]], written once over a SIMD traits type
// V whose vector holds V::L lanes of a value row (V::L divides head_dim); values are stored as E (float, or
// uint16_t holding fp16). Include only from a file compiled for V's instruction set. V provides T, L, kAccRegs
// (vector registers for accumulators), zero, set1, load (from float and from fp16), loadu, add, mul, fma and
// storeu.
//
// Per output element the arithmetic does not depend on V: list position j goes to accumulator set j mod IL,
// IL = interleave(head_dim), each set is the chain fma(p_h[j], v_j[d], .) in list order, the sets are added
// as a pairwise tree ((0+1)+(2+3)) and the sum is multiplied by inv_h. So every instruction set, head count
// per pass and cut of the list into ranges gives the same bits.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/ops.h"

namespace jf::attention {

// Interleaved accumulator sets for a head size: enough independent FMA chains for small heads.
constexpr int interleave(int head_dim) { return head_dim >= 32 ? 1 : 32 / head_dim; }

// Running sums for H heads (p_h = p + h * ps) over list positions [j0, j1) (j0 a multiple of IL). `state` (H x
// IL x NV vectors) carries them between ranges: read unless `first`, written unless `last`; after the last
// range out_h = inv_h * the sums (out_h = out + h * NV * L). Each value row is read once for the H heads.
template <class V, int NV, int IL, int H, class E>
void weighted_sum(const E* v, int64_t stride, const int32_t* slots, int64_t j0, int64_t j1, const float* p,
                  int64_t ps, bool first, bool last, float* state, const float* inv, float* out) {
  constexpr int L = V::L;
  typename V::T acc[H][IL][NV];
  for (int h = 0; h < H; h++)
    for (int a = 0; a < IL; a++)
      for (int d = 0; d < NV; d++) acc[h][a][d] = first ? V::zero() : V::loadu(state + ((h * IL + a) * NV + d) * L);
  auto add = [&](int a, int64_t j) {
    const E* vj = v + slots[j] * stride;
#pragma GCC unroll 4
    for (int h = 0; h < H; h++) {
      const typename V::T pj = V::set1(p[h * ps + j]);
      for (int d = 0; d < NV; d++) acc[h][a][d] = V::fma(pj, V::load(vj + L * d), acc[h][a][d]);
    }
  };
  int64_t j = j0;
  for (; j + IL <= j1; j += IL)
    for (int a = 0; a < IL; a++) add(a, j + a);
  for (int a = 0; j < j1; j++, a++) add(a, j);
  if (!last) {
    for (int h = 0; h < H; h++)
      for (int a = 0; a < IL; a++)
        for (int d = 0; d < NV; d++) V::storeu(state + ((h * IL + a) * NV + d) * L, acc[h][a][d]);
    return;
  }
  for (int h = 0; h < H; h++) {
    for (int w = 1; w < IL; w *= 2)  // pairwise tree: (0+1)+(2+3)
      for (int a = 0; a + w < IL; a += 2 * w)
        for (int d = 0; d < NV; d++) acc[h][a][d] = V::add(acc[h][a][d], acc[h][a + w][d]);
    const typename V::T iv = V::set1(inv[h]);
    for (int d = 0; d < NV; d++) V::storeu(out + h * NV * L + L * d, V::mul(acc[h][0][d], iv));
  }
}

// weighted_sum over all heads of a group for head_dim = NV * V::L, as many heads per pass as their
// accumulators fit in V::kAccRegs. When that takes several passes over a long list, the list is cut into
// ranges whose value rows fit in the L1 cache and every pass runs over one range before the next: the rows
// are then read from memory once for the group instead of once per pass (the sums wait in `state`).
template <class V, int NV, class E>
void weighted_sums(const E* v, int64_t stride, const int32_t* slots, int64_t n, int heads, const float* p,
                   const float* inv, float* out) {
  constexpr int L = V::L, IL = interleave(NV * L);
  constexpr int kPer = 4 * IL * NV <= V::kAccRegs ? 4 : 2 * IL * NV <= V::kAccRegs ? 2 : 1;  // heads per pass
  constexpr int64_t kRange = std::max<int64_t>(64, (16 << 10) / (4 * NV * L) / IL * IL);  // ~16 KB of rows
  const int64_t ps = score_stride(n);
  const int passes = (heads + kPer - 1) / kPer;
  const int64_t range = passes > 1 ? kRange : n;
  const int64_t state_floats = int64_t{heads} * IL * NV * L;
  thread_local std::vector<float> state;
  if (static_cast<int64_t>(state.size()) < state_floats) state.resize(static_cast<size_t>(state_floats));
  for (int64_t j0 = 0;; j0 += range) {
    const int64_t j1 = std::min(n, j0 + range);
    const bool first = j0 == 0, last = j1 == n;
    auto run = [&](auto per, int h) {
      weighted_sum<V, NV, IL, decltype(per)::value, E>(v, stride, slots, j0, j1, p + h * ps, ps, first, last,
                                                    state.data() + h * IL * NV * L, inv + h, out + h * NV * L);
    };
    int h = 0;
    if constexpr (kPer >= 4)
      for (; h + 4 <= heads; h += 4) run(std::integral_constant<int, 4>{}, h);
    if constexpr (kPer >= 2)
      for (; h + 2 <= heads; h += 2) run(std::integral_constant<int, 2>{}, h);
    for (; h < heads; h++) run(std::integral_constant<int, 1>{}, h);
    if (last) return;
  }
}

}  // namespace jf::attention
