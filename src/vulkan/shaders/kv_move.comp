#version 450
// Moves cache slots in order in one layer's keys or values, MOVES = (from, to) pairs: thread i owns one (kv head,
// element) column and applies the moves one after another, so a slot written by an earlier move is read by a
// later one exactly as the CPU cache's sequential moves do.
#include "common.glsl"
#include "elementwise.glsl"
#include "kv.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Data { KV_T D[]; };  // one layer's keys or values
layout(std430, binding = 1) readonly buffer Moves { int MOVES[]; };
layout(push_constant) uniform Params { uint columns, head_dim, capacity, n_moves, moves_off; } p;
void main() {
  const uint i = flat_index();
  if (i >= p.columns) return;  // columns = kv_heads * head_dim
  const uint base = (i / p.head_dim) * p.capacity * p.head_dim + i % p.head_dim;
  for (uint m = 0; m < p.n_moves; m++) {
    const uint from = uint(MOVES[p.moves_off + 2 * m]), to = uint(MOVES[p.moves_off + 2 * m + 1]);
    D[base + to * p.head_dim] = D[base + from * p.head_dim];
  }
}
