// Transformer::row_chain (ForwardResult::chain): the draft layer run again after a forward, one virtual row at a time (EAGLE's
// drafting loop, here for the tokens after a Jacobi step's shifted draft); and the pass both it and a draft tree's
// levels (model/draft_tree_rows.cpp) run their virtual rows through.
#include <algorithm>

#include "base/error.h"
#include "kernels/ops.h"
#include "model/transformer.h"

namespace jf {

// Rows [r0, r0 + m) planned after the forward's (plan_.rows: token, position, slot and visible slots), each x_ row
// holding its parent's draft-layer output: x += draft_token_scale * embedding(token), the layer (its keys and
// values into the rows' slots), then the draft head's logits into `logits` (m rows). x_ keeps the layer's output.
void Transformer::virtual_draft_rows(int64_t r0, int64_t m, float* logits, bool threads) {
  const int dim = cfg_.dim, half = cfg_.rope_dim / 2, l = cfg_.n_layers;
  for (int64_t r = r0; r < r0 + m; r++) {
    const PlannedRow& row = plan_.rows[static_cast<size_t>(r)];
    float* e = &xb_[r * dim];  // free until the layer's first norm
    dequantize_row(w_.tok_embd.type, w_.tok_embd.row(row.token), e, dim);
    add_draft_token(&x_[r * dim], w_.draft_token_scale, e, dim);
    rope_angles(rope_table(cfg_, row.cache->capacity()), cfg_.rope_dim, row.pos, &rope_cos_[r * half], &rope_sin_[r * half]);
  }
  qkv_rows(l, r0, r0 + m, threads);
  attend_units(l, r0 * cfg_.n_kv_heads, (r0 + m) * cfg_.n_kv_heads);
  out_ffn_rows(l, r0, r0 + m, threads);
  for (int64_t r = r0; r < r0 + m; r++) rmsnorm(&x_[r * dim], w_.draft_output_norm, dim, cfg_.norm_eps, &xb_[r * dim]);
  matmul(&xb_[r0 * dim], m, w_.draft_output, logits, threads);
  final_softcap(logits, m, threads);
}

// The virtual row sits after the last forward's rows (forward reserved its place), so the forward's
// activations, logits and draft logits stay as they were for the other sequences of a batch.
int Transformer::row_chain(int logit_row, int32_t first, int count, int32_t* out) {
  if (!w_.draft_output_norm || count <= 0) return 0;
  JF_CHECK(!draft_spans_.empty(), "a draft chain after a forward that did not run the draft layer (no draft_logits asked for)");
  const int64_t V = cfg_.vocab_size;
  const int64_t source = plan_.chain_source(logit_row, first, V);
  KvCache& cache = *plan_.rows[static_cast<size_t>(source)].cache;
  JF_CHECK(layer_ran_on(source), "a draft chain from a sequence that did not draft in the last forward");
  const int32_t source_pos = plan_.rows[static_cast<size_t>(source)].pos;
  const int past = cache.size();
  count = std::min(count, cache.capacity() - past);
  if (count <= 0) return 0;
  const int dim = cfg_.dim;
  const int64_t r = static_cast<int64_t>(plan_.rows.size());
  std::copy_n(&x_[source * dim], dim, &x_[r * dim]);  // the row's draft-layer output, before the norm
  const size_t list_base = plan_.slot_list.size();
  for (int s = 0; s < past; s++) plan_.slot_list.push_back(s);  // the cache up to the row; then each virtual row's own
  plan_.rows.push_back(PlannedRow{&cache, first, source_pos, past, 0, 0, 0, 0});
  cache.append(count);
  chain_logits_.resize(static_cast<size_t>(V));
  for (int j = 0; j < count; j++) {
    PlannedRow& row = plan_.rows.back();
    row.pos = source_pos + 1 + j;
    row.slot = past + j;
    cache.set_position(row.slot, row.pos);
    plan_.slot_list.push_back(row.slot);  // (it sees the chain's earlier virtual rows too)
    row.slots_begin = row.local_begin = static_cast<int32_t>(list_base);
    row.slots_end = row.local_end = static_cast<int32_t>(plan_.slot_list.size());
    virtual_draft_rows(r, 1, chain_logits_.data(), true);
    row.token = out[j] = static_cast<int32_t>(argmax(chain_logits_.data(), V));  // (the next step's input)
  }
  plan_.rows.pop_back();
  plan_.slot_list.resize(list_base);
  cache.truncate(past);
  return count;
}

}  // namespace jf
