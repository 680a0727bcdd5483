// A KV cache layer as bound: keys and values [kv_head][slot][head_dim], fp32 or fp16 (KV_F16).
#if defined(KV_F16)
#define KV_T float16_t
#else
#define KV_T float
#endif
// The per-row table the host uploads for each forward (model/row_plan.h): a row's cache slot and its visible
// slots, [begin, end) in the slot list, and [local_begin, local_end) inside the sliding window.
const uint ROW_INFO = 5;

// RoPE of the pair (x0, x1) by an angle's cosine c and sine s. precise: the same operations wherever a key is
// rotated (stored for later forwards, or read from this forward's keys), never a multiply-add contracted in
// one place and not the other, so both give the same bits.
vec2 rope_pair(float x0, float x1, float c, float s) {
  precise float a = x0 * c - x1 * s, b = x0 * s + x1 * c;
  return vec2(a, b);
}
