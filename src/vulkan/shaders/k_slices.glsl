// K slices for matmul_vec.comp (the "-kS" members, K_SLICES): a tile of outputs and rows is SLICES
// workgroups along y, slice s adding only super-blocks [s G, (s + 1) G) of K (G = ceil(groups / SLICES)) in
// the member's order. Each writes its slots' sums (its subgroups' in order, as the epilogue would add them) to
// PART, counts itself in DONE, and the last of the tile's slices to finish adds the SLICES sums of each slot in
// slice order and runs the epilogue: a row's sum is a function of K and the member, whichever slice finishes
// last (batch invariance). DONE's counters start at zero (vulkan/k_slices.h) and the last slice leaves them so.
// Include in main's file after `sums` and the bindings 0-6; without K_SLICES, one workgroup a tile takes all K.
#ifndef K_SLICES
#define ROW_TILE gl_WorkGroupID.y
#define FIRST_GROUP 0
#define END_GROUP groups
#define IN_STEP(g, i) piece_exists(g, i)
#define SUMMED_SUBGROUPS gl_NumSubgroups
#else
layout(constant_id = 4) const uint SLICES = 2;
layout(std430, binding = 7) coherent buffer Partials { float PART[]; };  // [tile][slice][slot]
layout(std430, binding = 8) coherent buffer Done { uint DONE[]; };        // [tile]
shared bool last_slice;

#define ROW_TILE (gl_WorkGroupID.y / SLICES)
uint slice_of() { return gl_WorkGroupID.y % SLICES; }
uint slice_groups(uint groups) { return (groups + SLICES - 1) / SLICES; }
#define FIRST_GROUP min(groups, slice_of() * slice_groups(groups))
#define END_GROUP min(groups, (slice_of() + 1) * slice_groups(groups))
#define IN_STEP(g, i) ((g) < END_GROUP && piece_exists(g, i))
#define SUMMED_SUBGROUPS 1u  // (the epilogue's sums[slot][0]: the slices' sum)

// Whether a slot holds a sum: a row of the tile's, of an output it has (slot NO: the norm's squares, if asked).
bool slot_used(uint slot, uint rows, uint outs) {
  const uint o = slot / R;
  return slot % R < rows && (o < outs || o == NO) && (o != NO || p.norm != 0);
}

// Whether this workgroup is its tile's last slice, sums[slot][0] then each slot's sum over the slices.
bool fold_slices(uint rows, uint outs) {
  const uint slots = (NO + 1) * R, t = gl_LocalInvocationID.x;
  const uint tile = gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.z + gl_NumWorkGroups.z * ROW_TILE);
  const uint base = tile * SLICES * slots;
  for (uint slot = t; slot < slots; slot += WG) {
    if (!slot_used(slot, rows, outs)) continue;
    precise float s = sums[slot][0];
    for (uint g = 1; g < gl_NumSubgroups; g++) s += sums[slot][g];
    PART[base + slice_of() * slots + slot] = s;
  }
  // Every thread's PART writes made visible before the count (the last-block pattern, as attention_split's).
  memoryBarrierBuffer();
  barrier();
  if (t == 0) last_slice = atomicAdd(DONE[tile], 1u) == SLICES - 1;
  barrier();
  if (!last_slice) return false;
  memoryBarrierBuffer();
  for (uint slot = t; slot < slots; slot += WG) {
    if (!slot_used(slot, rows, outs)) continue;
    precise float s = PART[base + slot];
    for (uint c = 1; c < SLICES; c++) s += PART[base + c * slots + slot];
    sums[slot][0] = s;
  }
  if (t == 0) DONE[tile] = 0;
  barrier();
  return true;
}
#endif
