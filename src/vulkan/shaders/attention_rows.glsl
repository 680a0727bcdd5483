// What attention.comp and attention_split.comp share, included after their bindings (Q, K, V, A, CK and its 16-byte view CK16, CV), push
// constants (p) and `shared int slot_of[WG]`: the rows' RoPE as they are read, a row's own key and value as the
// cache would hold them, and loads in batches of LOADS independent reads ahead of the FMAs that use them, so a
// thread waits for memory once a batch, not once a key dimension or a value (a one-row decode step is
// latency-bound: an H200 spent ~90 us a layer at a 64-token context reading one value at a time; 16 a batch:
// a 64-dimension key in 4 waits, a chunk of 64 values in 4).
// Element d of a head vector starting at x in `buf` (Q or K) after RoPE with row r's angles.
#define ROPED(buf, x, d, r)                                                                                  \
  {                                                                                                          \
    if (d >= 2 * p.half_dim) return buf[x + d];                                                             \
    const bool second = p.neox != 0 ? d >= p.half_dim : (d & 1u) != 0;                                      \
    const uint j = p.neox != 0 ? d % p.half_dim : d / 2;                                                    \
    const uint partner = p.neox != 0 ? (second ? d - p.half_dim : d + p.half_dim) : (d ^ 1u);              \
    const float c = A[p.cos_off + r * p.half_dim + j], s = A[p.sin_off + r * p.half_dim + j];               \
    const vec2 v = second ? rope_pair(buf[x + partner], buf[x + d], c, s) : rope_pair(buf[x + d], buf[x + partner], c, s); \
    return second ? v.y : v.x;                                                                               \
  }
float query_at(uint x, uint d, uint r) ROPED(Q, x, d, r)
float key_rotated(uint x, uint d, uint r) ROPED(K, x, d, r)

// Row r's key and value element d of key-value head kvh, as the cache holds them.
float key_now(uint r, uint kvh, uint d) { return as_cached(key_rotated((r * p.n_kv_heads + kvh) * p.head_dim, d, r)); }
float value_now(uint r, uint kvh, uint d) { return as_cached(V[(r * p.n_kv_heads + kvh) * p.head_dim + d]); }

const uint LOADS = 16;
#if defined(KV_F16)
const uint KEY_WORD = 8;  // a key's dimensions in 16 bytes
#else
const uint KEY_WORD = 4;
#endif
// Dimensions d0 .. d0 + LOADS - 1 of slot e's key (a cached slot, or -(row + 2): this forward's own row) in the
// cache layout starting at `head`; dimensions past head_dim read its last, for the caller not to sum. Where
// head_dim is a multiple of LOADS, a key's dimensions are whole 16-byte words (the layer's binding 16-byte
// aligned: kv_storage), read 16 bytes a load, the same values as one at a time: a thread's key is its own
// stretch of memory, so a subgroup's one-element loads touch one line a lane each, and wide loads touch them
// 4-8 times less often.
void keys_at(int e, uint head, uint kvh, uint d0, out float kd[LOADS]) {
  const uint key = head + uint(max(e, 0)) * p.head_dim;
  if (p.head_dim % LOADS == 0) {
    [[unroll]] for (uint j = 0; j < LOADS / KEY_WORD; j++) {
      const uvec4 v = CK16[(key + d0) / KEY_WORD + j];
      [[unroll]] for (uint c = 0; c < 4; c++) {
#if defined(KV_F16)
        const vec2 h = unpackHalf2x16(v[c]);
        kd[KEY_WORD * j + 2 * c] = h.x, kd[KEY_WORD * j + 2 * c + 1] = h.y;
#else
        kd[KEY_WORD * j + c] = uintBitsToFloat(v[c]);
#endif
      }
    }
  } else {
    [[unroll]] for (uint u = 0; u < LOADS; u++) kd[u] = float(CK[key + min(d0 + u, p.head_dim - 1)]);
  }
  if (e < 0) [[unroll]] for (uint u = 0; u < LOADS; u++) kd[u] = key_now(uint(-e - 2), kvh, min(d0 + u, p.head_dim - 1));
}
// Dimension d of the values of slots slot_of[k0 .. k0 + LOADS - 1]; those past n read slot 0's, not to be summed.
void values_at(uint k0, uint n, uint head, uint kvh, uint d, out float vd[LOADS]) {
  int e[LOADS];
  [[unroll]] for (uint u = 0; u < LOADS; u++) e[u] = k0 + u < n ? slot_of[k0 + u] : 0;
  [[unroll]] for (uint u = 0; u < LOADS; u++) vd[u] = float(CV[head + uint(max(e[u], 0)) * p.head_dim + d]);
  [[unroll]] for (uint u = 0; u < LOADS; u++)
    if (e[u] < 0) vd[u] = value_now(uint(-e[u] - 2), kvh, d);
}
