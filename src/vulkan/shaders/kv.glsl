// A KV cache layer as bound: keys and values [kv_head][slot][head_dim], fp32 or fp16 (KV_F16).
#if defined(KV_F16)
#define KV_T float16_t
#else
#define KV_T float
#endif
// The per-row table the host uploads for each forward (model/row_plan.h): a row's cache slot and its visible
// slots, [begin, end) in the slot list, and [local_begin, local_end) inside the sliding window.
const uint ROW_INFO = 5;
