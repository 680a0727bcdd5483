#version 450
// Y[m][n] (+)= sum_k X[m][k] W[n][k] for Q4_K weights, laid out for the read bandwidth: the `vec` members of the
// family (vulkan/matmul_family.h). Eight threads share a 256-weight super-block: thread i takes 16 bytes of its
// nibbles in one 16-byte load (bytes 16 (i % 2) .. + 15 of 32-byte chunk i / 2: 16 weights of sub-block
// 2 (i / 2) in the low nibbles, 16 of sub-block 2 (i / 2) + 1 in the high ones), and the block's 16-byte head
// (d, dmin, the 12 bytes of scales) in a second, a load the eight share; so a weight byte is read once, 16 at a
// time, and each thread decodes the two scales and mins it needs once a block. A step takes WG / 8 blocks; a
// thread's loads for all NO outputs are issued before any is used. The min term is folded (d sc q.x - dmin m
// sum(x), for 16 weights at a time). Each thread adds its blocks in order; a workgroup's partials are added
// by an xor butterfly inside each subgroup, then the subgroups in order: a row's sum is a function of K, the
// member and the device's subgroup size, never of M or of the row's place (batch invariance).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"
#undef WG

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;  // threads a workgroup (32, 64 or 128; at least the subgroup)
layout(constant_id = 1) const uint NO = 2;   // outputs a workgroup
layout(constant_id = 2) const uint R = 4;    // rows a workgroup

layout(std430, binding = 2) readonly buffer Weights { uvec4 W4[]; };  // 144-byte blocks: 9 loads each
#include "matmul_io.glsl"
#define NORM_THREADS WG
#define NORM_ROWS R
#include "norm_fold.glsl"
shared float sums[NO * R][WG / 8];  // a subgroup's sum of each output and row (subgroups of 8 or more)

const uint BLOCK_LOADS = 9, STEP_BLOCKS = WG / 8;

vec4 inputs4(uint x, uint k, bool aligned) { return inputs4_at(x, k, aligned) * gain4(k); }

// Byte i of the 12 scale bytes in a block's head (its words 1..3).
uint scale_byte(uvec4 head, uint i) { return (head[1 + i / 4] >> (8 * (i % 4))) & 255u; }

// Sub-block j's scale times d and min times dmin (Q4_K's 6-bit pairs, as dequant.glsl's kquant_scale_min).
vec2 scale_min(uvec4 head, uint j) {
  uint sc, m;
  if (j < 4) {
    sc = scale_byte(head, j) & 63u, m = scale_byte(head, j + 4) & 63u;
  } else {
    sc = (scale_byte(head, j + 4) & 15u) | ((scale_byte(head, j - 4) >> 6) << 4);
    m = (scale_byte(head, j + 4) >> 4) | ((scale_byte(head, j) >> 6) << 4);
  }
  const vec2 dm = unpackHalf2x16(head[0]);
  precise vec2 r = vec2(dm.x * float(sc), dm.y * float(m));
  return r;
}

// The 16 nibbles of `q` at `shift` (0: low, 4: high), in byte order, dotted with x[0..3] in that order.
float dot16(uvec4 q, uint shift, vec4 x[4]) {
  precise float d = 0.0;
  for (uint w = 0; w < 4; w++)
    for (uint b = 0; b < 4; b++) d = fma(float((q[w] >> (8 * b + shift)) & 15u), x[w][b], d);
  return d;
}

float sum16(vec4 x[4]) {
  precise float s = 0.0;
  for (uint w = 0; w < 4; w++) s = (((s + x[w].x) + x[w].y) + x[w].z) + x[w].w;
  return s;
}

void main() {
  const uint n0 = (gl_WorkGroupID.x + gl_NumWorkGroups.x * gl_WorkGroupID.z) * NO;
  const uint m0 = gl_WorkGroupID.y * R, t = gl_LocalInvocationID.x;
  if (n0 >= p.N) return;  // uniform for the whole workgroup
  const uint rows = min(R, p.M - m0), outs = min(NO, p.N - n0);
  const bool aligned = p.x_off % 4 == 0 && p.x_stride % 4 == 0;
  norm_scales(m0, rows);
  const uint blocks = p.K / 256, i = t % 8, pair = i / 2, half_ = i % 2;
  float acc[NO][R];
  for (uint o = 0; o < NO; o++)
    for (uint r = 0; r < R; r++) acc[o][r] = 0.0;
  for (uint b0 = 0; b0 < blocks; b0 += STEP_BLOCKS) {
    const uint b = b0 + t / 8;
    if (b >= blocks) continue;  // (only in the last step)
    uvec4 head[NO], q[NO];
    for (uint o = 0; o < NO; o++) {
      if (o >= outs) continue;
      const uint at = ((n0 + o) * blocks + b) * BLOCK_LOADS;
      head[o] = W4[at], q[o] = W4[at + 1 + 2 * pair + half_];
    }
    vec2 lo[NO], hi[NO];  // the two sub-blocks' scales and mins, decoded once a block for all rows
    for (uint o = 0; o < NO; o++)
      if (o < outs) lo[o] = scale_min(head[o], 2 * pair), hi[o] = scale_min(head[o], 2 * pair + 1);
    const uint k_low = 256 * b + 64 * pair + 16 * half_, k_high = k_low + 32;
    for (uint r = 0; r < R; r++) {
      if (r >= rows) break;
      const uint x = p.x_off + (m0 + r) * p.x_stride;
      vec4 xl[4], xh[4];
      for (uint w = 0; w < 4; w++) xl[w] = inputs4(x, k_low + 4 * w, aligned), xh[w] = inputs4(x, k_high + 4 * w, aligned);
      const float sl = sum16(xl), sh = sum16(xh);
      for (uint o = 0; o < NO; o++) {
        if (o >= outs) break;
        precise float a = fma(lo[o].x, dot16(q[o], 0, xl), acc[o][r]);
        a = fma(-lo[o].y, sl, a);
        a = fma(hi[o].x, dot16(q[o], 4, xh), a);
        a = fma(-hi[o].y, sh, a);
        acc[o][r] = a;
      }
    }
  }
  for (uint o = 0; o < NO; o++)
    for (uint r = 0; r < R; r++) {
      if (o >= outs || r >= rows) continue;  // (uniform: the whole subgroup skips together)
      precise float s = acc[o][r];
      for (uint lane = gl_SubgroupSize / 2; lane > 0; lane >>= 1) s += subgroupShuffleXor(s, lane);
      if (gl_SubgroupInvocationID == 0) sums[o * R + r][gl_SubgroupID] = s;
    }
  barrier();
  for (uint slot = t; slot < NO * R; slot += WG) {
    const uint o = slot / R, r = slot % R;
    if (r >= rows || o >= outs) continue;
    precise float s = sums[slot][0];
    for (uint g = 1; g < gl_NumSubgroups; g++) s += sums[slot][g];
    store_output(m0 + r, n0 + o, s, norm_scale[r]);
  }
}
