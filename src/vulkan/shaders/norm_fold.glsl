// The RMSNorm before a matrix product, folded into it: Y = (W (G x)) s, s = 1 / sqrt(sum(x^2) / K + eps). The
// inputs are multiplied by the gain G as they are loaded, the sums by s at the end. Without p.norm the gain
// is 1 and s is 1: the same bits as a plain product. Two ways to find s, both a function of the row, K and the
// kernel only (the same bits in every workgroup, whatever the rows beside it):
// - NORM_IN_LOOP (matmul_split, matmul_vec): each thread adds the squares of the raw inputs it loads anyway,
//   and the sums go through the product's own fixed-order reduction beside its outputs (norm_scale_of): no
//   pass over X and no barriers of its own, which at one row cost a workgroup more than its weights' loads;
// - otherwise norm_scales(), first (matmul_serial, matmul_tiles, which needs s before its loop): each of
//   NORM_THREADS threads sums a strided share of the row's squares, then a fixed tree adds the shares.
// Define NORM_THREADS and NORM_ROWS (or NORM_IN_LOOP), and include after matmul_io.glsl.
#ifndef NORM_IN_LOOP
shared float norm_part[NORM_THREADS];
shared float norm_scale[NORM_ROWS];

void norm_scales(uint m0, uint rows) {
  const uint t = gl_LocalInvocationID.x;
  for (uint r = 0; r < NORM_ROWS; r++) {
    if (p.norm == 0 || r >= rows) {
      if (t == 0) norm_scale[r] = 1.0;
      continue;
    }
    float ss = 0.0;
    const uint x = p.x_off + (m0 + r) * p.x_stride;
    for (uint k = t; k < p.K; k += NORM_THREADS) ss = fma(X[x + k], X[x + k], ss);
    norm_part[t] = ss;
    barrier();
    for (uint s = NORM_THREADS / 2; s > 0; s >>= 1) {
      if (t < s) norm_part[t] += norm_part[t + s];
      barrier();
    }
    if (t == 0) norm_scale[r] = 1.0 / sqrt(norm_part[0] / float(p.K) + p.eps);
    barrier();
  }
  barrier();
}
#endif

// s from a row's complete sum of squares (NORM_IN_LOOP), or 1 without a norm.
// (precise: the same operations in every pipeline of a member, its one-row twin's too: matmul_grid.h)
float norm_scale_of(float ss) {
  if (p.norm == 0) return 1.0;
  precise float mean = ss / float(p.K) + p.eps;
  return 1.0 / sqrt(mean);
}

// x.x^2 + ... + x.w^2 added to ss in that order (precise: no reassociation a build could choose).
float add_squares(float ss, vec4 x) {
  precise float s = fma(x.x, x.x, ss);
  s = fma(x.y, x.y, s);
  s = fma(x.z, x.z, s);
  s = fma(x.w, x.w, s);
  return s;
}

float gain(uint k) { return p.norm != 0 && k < p.K ? G[k] : 1.0; }
vec4 gain4(uint k) {
  if (p.norm == 0) return vec4(1.0);
  if (k % 4 == 0 && k + 4 <= p.K) return G4[k / 4];  // (one 16-byte load: the binding is 16-byte aligned)
  return vec4(gain(k), gain(k + 1), gain(k + 2), gain(k + 3));
}
