#version 450
// OUT[r] = the index of row r's largest value, the lowest index among equals (as the CPU's argmax): each
// thread scans its strided share, then a fixed tree keeps the larger value or, on a tie, the lower index.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Values { float X[]; };
layout(std430, binding = 1) buffer Output { int OUT[]; };
layout(push_constant) uniform Params { uint n_rows, n, x_off, out_off; } p;
shared float best[WG];
shared uint where[WG];
void main() {
  const uint r = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  if (r >= p.n_rows) return;
  float b = -1.0 / 0.0;
  uint at = 0xffffffffu;
  for (uint i = t; i < p.n; i += WG) {
    const float v = X[p.x_off + r * p.n + i];
    if (v > b || at == 0xffffffffu) b = v, at = i;
  }
  best[t] = b, where[t] = at;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) {
      const float o = best[t + s];
      const uint oi = where[t + s];
      if (oi != 0xffffffffu && (where[t] == 0xffffffffu || o > best[t] || (o == best[t] && oi < where[t])))
        best[t] = o, where[t] = oi;
    }
    barrier();
  }
  if (t == 0) OUT[p.out_off + r] = int(where[0]);
}
