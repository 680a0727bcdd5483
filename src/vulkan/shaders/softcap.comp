#version 450
// X = cap * tanh(X / cap), element by element (gemma2's final logits).
#include "common.glsl"
#include "elementwise.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Values { float X[]; };
layout(push_constant) uniform Params { uint n, off; float cap; } p;
void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  X[p.off + i] = p.cap * tanh(X[p.off + i] / p.cap);
}
