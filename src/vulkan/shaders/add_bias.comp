#version 450
// Y[r][i] += B[i] for n_rows rows of n values (qwen2's q, k, v biases).
#include "common.glsl"
#include "elementwise.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) buffer Output { float Y[]; };
layout(std430, binding = 1) readonly buffer Bias { float B[]; };
layout(push_constant) uniform Params { uint n_rows, n, y_off, y_stride, b_off; } p;
void main() {
  const uint i = flat_index();
  if (i >= p.n_rows * p.n) return;
  const uint r = i / p.n, c = i % p.n;
  Y[p.y_off + r * p.y_stride + c] += B[p.b_off + c];
}
