#version 450
// One-shot reads, as a matrix product reads its weights: each thread loads LOADS 16-byte words (word j of
// thread t of workgroup w at (w LOADS + j) WG + t, so a subgroup's loads are contiguous), all of them before
// any is used, and exits. The time of a dispatch over a buffer of a product's size is the floor a kernel
// reading those bytes that way can reach on the device (launch, ramp and latency included), which
// `jf devices --read-probe` tabulates by size and loads a thread. A thread that finds the marker word
// writes its index, so the loads cannot be dropped, and the caller checks the right thread read it.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
layout(local_size_x = WG) in;
layout(constant_id = 0) const uint LOADS = 1;  // 1 to 8
layout(std430, binding = 0) readonly buffer Source { uvec4 src[]; };
layout(std430, binding = 1) buffer Found { uint found[]; };
layout(push_constant) uniform Params { uint words, marker; } p;
void main() {
  const uint w = gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.y, t = gl_LocalInvocationID.x;
  uvec4 v[8];
  [[unroll]] for (uint j = 0; j < 8; j++) {
    const uint at = (w * LOADS + j) * WG + t;
    v[j] = j < LOADS && at < p.words ? src[at] : uvec4(0);
  }
  uvec4 x = uvec4(0);
  [[unroll]] for (uint j = 0; j < 8; j++) x ^= v[j];
  if ((x.x ^ x.y ^ x.z ^ x.w) == p.marker) found[0] = w * WG + t;
}
