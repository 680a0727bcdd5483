// Fixed-order sums over the WG threads of a workgroup through shared memory (include after common.glsl and
// after declaring `shared float red[WG]`). Thread 0's partial is added to thread 32's and so on down a tree:
// one order for every element, whatever else the dispatch computes.
float workgroup_sum(float v) {
  const uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint s = WG / 2; s > 0; s >>= 1) {
    if (t < s) red[t] += red[t + s];
    barrier();
  }
  const float total = red[0];
  barrier();
  return total;
}
