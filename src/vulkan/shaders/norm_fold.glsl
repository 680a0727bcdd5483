// The RMSNorm before a matrix product, folded into it: Y = (W (G x)) / rms(x). A product with p.norm set first
// finds 1 / rms of each of its workgroup's rows in a fixed order (each of NORM_THREADS threads sums a strided
// share of the row's squares, then a fixed tree adds the shares), so a row's scale is the same bits in every
// workgroup, whatever the rows beside it; its inputs are multiplied by the gain G as they are loaded, and its
// sums by the scale at the end. Without p.norm the gain is 1 and the scale 1: the same bits as a plain product.
// Define NORM_THREADS and NORM_ROWS, and declare X, p (x_off, x_stride, K, norm, eps) and G (the gain) first.
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

float gain(uint k) { return p.norm != 0 && k < p.K ? G[k] : 1.0; }
vec4 gain4(uint k) { return p.norm != 0 ? vec4(gain(k), gain(k + 1), gain(k + 2), gain(k + 3)) : vec4(1.0); }
