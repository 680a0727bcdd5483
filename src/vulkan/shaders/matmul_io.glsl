// What every matrix product (matmul_serial, matmul_split, matmul_tiles) reads and writes: its bindings and
// parameters, its inputs (with the GLU folded in: the down projection reads act(gate) * up as it loads, so the
// GLU costs no dispatch of its own) and its outputs (split over up to three matrices: q, k and v, or gate and
// up, come out of one product of their concatenated weights). Neither changes a row's operations, so every
// kernel stays batch-invariant. Include after dequant.glsl (binding 2: the weights).
layout(std430, binding = 0) readonly buffer Input { float X[]; };
layout(std430, binding = 0) readonly buffer Input4 { vec4 X4[]; };  // the same buffer, 16 bytes a load
layout(std430, binding = 1) buffer Output { float Y[]; };
layout(std430, binding = 3) readonly buffer Gain { float G[]; };  // the folded norm's gain (norm_fold.glsl)
layout(std430, binding = 3) readonly buffer Gain4 { vec4 G4[]; };
layout(std430, binding = 4) readonly buffer Up { float U[]; };    // the GLU's up values, laid out as X
layout(std430, binding = 4) readonly buffer Up4 { vec4 U4[]; };
layout(std430, binding = 5) buffer Output2 { float Y2[]; };      // outputs n1 .. n2 - 1
layout(std430, binding = 6) buffer Output3 { float Y3[]; };      // outputs n2 .. N - 1
layout(push_constant) uniform Params {
  uint M, N, K;
  uint x_off, x_stride;  // row m of X (and of U) starts at x_off + m x_stride
  uint y_off, y_stride;  // row m of Y starts at y_off + m y_stride
  uint accumulate;       // 1: Y += result (a residual add: the sum is complete before it is added)
  uint norm;             // 1: X's rows RMS-normalised by G first (norm_fold.glsl)
  float eps;
  uint glu;              // 1: the inputs are silu(X) U; 2: gelu(X) U (gemma)
  uint n1, n2;           // outputs below n1 go to Y, below n2 to Y2 (rows of n2 - n1), the rest to Y3
  uint glu_out;          // 1 or 2: the GLU in the epilogue (store_glu), silu or gelu
} p;

// act(g) u: silu (kind 1) or tanh-gelu (kind 2, gemma). (precise: no contraction a build could choose, so every
// pipeline of a member computes it alike: its one-row twin's too, matmul_grid.h.)
float glu_of(uint kind, float g, float u) {
  precise float a;
  if (kind == 2) a = 0.5 * g * (1.0 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
  else a = g * (1.0 / (1.0 + exp(-g)));
  return a * u;
}
float glu(float g, float u) { return glu_of(p.glu, g, u); }

// Input i of X (an index into X), through the GLU when it is folded in.
float input_at(uint i) { return p.glu != 0 ? glu(X[i], U[i]) : X[i]; }

// Inputs k .. k + 3 of the row of X starting at x, zero past K (aligned: x and k multiples of 4).
vec4 inputs4_at(uint x, uint k, bool aligned) {
  if (k + 4 <= p.K) {
    if (aligned && p.glu == 0) return X4[(x + k) / 4];
    if (aligned) {
      const vec4 g = X4[(x + k) / 4], u = U4[(x + k) / 4];
      return vec4(glu(g.x, u.x), glu(g.y, u.y), glu(g.z, u.z), glu(g.w, u.w));
    }
    return vec4(input_at(x + k), input_at(x + k + 1), input_at(x + k + 2), input_at(x + k + 3));
  }
  return vec4(input_at(x + k), k + 1 < p.K ? input_at(x + k + 1) : 0.0, k + 2 < p.K ? input_at(x + k + 2) : 0.0, 0.0);
}

// The GLU in the epilogue (p.glu_out; matmul_split and matmul_vec members with an even number of outputs a
// workgroup, on gate and up concatenated): a workgroup's outputs come in pairs, output 2j the gate of feature
// n0 / 2 + j (weight row n0 / 2 + j) and 2j + 1 its up (row N / 2 + n0 / 2 + j), and it stores act(gate) up once,
// into Y's rows of N / 2: the down projection then reads plain inputs instead of every one of its workgroups
// computing the activation of every input again. The values are the ones the down projection would compute
// from gate and up stored apart (store_output's, then glu()): the same bits either way.
uint weight_row(uint n0, uint o) { return p.glu_out == 0 ? n0 + o : (o % 2 == 0 ? 0 : p.N / 2) + n0 / 2 + o / 2; }
void store_glu(uint m, uint n0, uint o, float gate, float up, float scale) {
  const float g = 0.0 + gate * scale, u = 0.0 + up * scale;  // (as store_output writes each)
  Y[p.y_off + m * p.y_stride + n0 / 2 + o / 2] = glu_of(p.glu_out, g, u);
}

// Output n of row m, scaled by `scale` (the folded norm's 1 / rms, or 1), into its matrix.
void store_output(uint m, uint n, float s, float scale) {
  if (n < p.n1) {
    const uint y = p.y_off + m * p.y_stride + n;
    Y[y] = (p.accumulate != 0 ? Y[y] : 0.0) + s * scale;
  } else if (n < p.n2) {
    Y2[m * (p.n2 - p.n1) + n - p.n1] = s * scale;
  } else {
    Y3[m * (p.N - p.n2) + n - p.n2] = s * scale;
  }
}
