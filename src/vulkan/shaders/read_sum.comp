#version 450
// Reads every 16-byte word of a buffer once (each thread strides over the whole grid) and writes one sum per
// thread, so the reads cannot be skipped: what `jf devices --bandwidth` times as the device's read bandwidth.
#include "common.glsl"
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer Source { uvec4 src[]; };
layout(std430, binding = 1) writeonly buffer Sums { uint sums[]; };
layout(push_constant) uniform Params { uint words; } p;
void main() {
  const uint threads = gl_NumWorkGroups.x * WG;
  const uint t = gl_GlobalInvocationID.x;
  uvec4 acc = uvec4(0);
  for (uint i = t; i < p.words; i += threads) acc ^= src[i];
  sums[t] = acc.x ^ acc.y ^ acc.z ^ acc.w;
}
