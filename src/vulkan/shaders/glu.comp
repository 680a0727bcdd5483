#version 450
// GATE[i] = act(GATE[i]) * UP[i]: SiLU (gelu = 0) or tanh-GELU (gemma).
#include "common.glsl"
#include "elementwise.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Gate { float GATE[]; };
layout(std430, binding = 1) readonly buffer Up { float UP[]; };
layout(push_constant) uniform Params { uint n, gelu; } p;
void main() {
  const uint i = flat_index();
  if (i >= p.n) return;
  const float x = GATE[i];
  float a;
  if (p.gelu != 0)
    a = 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  else
    a = x * (1.0 / (1.0 + exp(-x)));
  GATE[i] = a * UP[i];
}
