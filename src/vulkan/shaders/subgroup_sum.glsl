// The sum of v over a subgroup by an xor butterfly, lanes half the subgroup apart first, then a quarter, ...:
// one order on a device whatever the dispatch (batch invariance). The steps are a fixed count, those past the
// subgroup's size skipped (uniformly), so a caller's loop over register arrays around it unrolls and keeps
// its indices constant (a rolled one would put the arrays in memory on a GPU).
const uint MAX_SUBGROUP_STEPS = 7;  // subgroups of up to 128
float subgroup_sum_xor(float v) {
  precise float s = v;
  [[unroll]] for (uint i = 0; i < MAX_SUBGROUP_STEPS; i++) {
    const uint lane = (1u << (MAX_SUBGROUP_STEPS - 1)) >> i;
    if (lane < gl_SubgroupSize) s += subgroupShuffleXor(s, lane);
  }
  return s;
}
