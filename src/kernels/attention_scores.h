// Attention scores over the blocked key layout (kernels/ops.h), written once over a SIMD traits type V whose
// vector holds V::L lanes: L consecutive slots' values of one key dimension (L divides kKeyBlock). Keys are
// stored as E: float, or uint16_t holding fp16 (converted exactly on load). Include only from a file compiled
// for V's instruction set. V provides T, L, set1, load (from float and from fp16), mul, fma, storeu and
// consecutive(s): whether s[0..L) are L consecutive slots.
#pragma once
#include <cstdint>

#include "kernels/ops.h"
#include "kernels/static_count.h"

namespace jf::attention {

// Keys of the L-slot lane group g: dimension d of its slots at lane_keys(...) + d * kKeyBlock.
template <class V, class E>
inline const E* lane_keys(const E* keys, int hd, int64_t g) {
  constexpr int per_block = kKeyBlock / V::L;
  return keys + (g / per_block) * kKeyBlock * hd + (g % per_block) * V::L;
}

// out[b] = (q . keys of the L slots of group grp[b]) * scale, NB groups at a time so the FMA chains overlap.
// Each lane is q[0]*k[0] followed by fma(q[d], k[d], .) for d = 1 .. hd-1, whatever V: a slot's score does
// not depend on which other slots share its group, its batch or the instruction set.
template <class V, int NB, class E>
inline void group_scores(const float* q, const E* const* grp, int hd, typename V::T scale, typename V::T* out) {
  typename V::T acc[NB];
  const typename V::T q0 = V::set1(q[0]);
#pragma GCC unroll 8
  for (int b = 0; b < NB; b++) acc[b] = V::mul(q0, V::load(grp[b]));
  for (int d = 1; d < hd; d++) {
    const typename V::T qd = V::set1(q[d]);
#pragma GCC unroll 8
    for (int b = 0; b < NB; b++) acc[b] = V::fma(qd, V::load(grp[b] + d * kKeyBlock), acc[b]);
  }
#pragma GCC unroll 8
  for (int b = 0; b < NB; b++) out[b] = V::mul(acc[b], scale);
}

// scores[h * score_stride(n) + j] = (q_h . key of slots[j]) * scale for the query vectors q_h = q + h * hd. Runs of whole
// lane groups (the committed prefix) are scored up to 8 groups at a time; any other slot is read out of its
// group's full score vector. The list is walked once for all heads.
template <class V, class E>
void key_scores(const float* q, int heads, const E* keys, int hd, const int32_t* slots, int64_t n, float scale,
                float* scores) {
  constexpr int L = V::L;
  const typename V::T sv = V::set1(scale);
  const int64_t ss = score_stride(n);
  int64_t j = 0;
  while (j < n) {
    const E* grp[8] = {};  // (zeroed: GCC cannot see that only nb are read)
    int64_t at[8];
    int nb = 0;
    for (; nb < 8 && j + L <= n && slots[j] % L == 0 && V::consecutive(slots + j); nb++, j += L) {
      grp[nb] = lane_keys<V, E>(keys, hd, slots[j] / L);
      at[nb] = j;
    }
    typename V::T s[8];
    if (nb > 0) {
      for (int h = 0; h < heads; h++) {
        with_count<8>(nb, [&](auto NB) { group_scores<V, NB, E>(q + h * hd, grp, hd, sv, s); });
        for (int b = 0; b < nb; b++) V::storeu(scores + h * ss + at[b], s[b]);
      }
      continue;
    }
    // Slots whose group is not listed whole: score the group, keep the lanes of the listed slots in it.
    const int32_t g = slots[j] / L;
    int64_t end = j;
    while (end < n && slots[end] / L == g) end++;
    grp[0] = lane_keys<V, E>(keys, hd, g);
    float t[L];
    for (int h = 0; h < heads; h++) {
      group_scores<V, 1, E>(q + h * hd, grp, hd, sv, s);
      V::storeu(t, s[0]);
      for (int64_t i = j; i < end; i++) scores[h * ss + i] = t[slots[i] % L];
    }
    j = end;
  }
}

}  // namespace jf::attention
