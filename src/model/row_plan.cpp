#include "model/row_plan.h"

#include <string>

#include "base/error.h"
#include "model/arch_ops.h"
#include "model/kv_cache.h"

namespace jf {

void RowPlan::build(const ModelConfig& cfg, std::span<SequenceInput* const> seqs) {
  rows.clear();
  slot_list.clear();
  logit_src.clear();
  seq_first.clear();
  for (SequenceInput* s : seqs) {
    JF_CHECK(s && s->cache, "sequence without a cache");
    const int m = static_cast<int>(s->tokens.size());
    if (!s->positions.empty() && static_cast<int>(s->positions.size()) != m)
      throw Error("forward: " + std::to_string(s->positions.size()) + " positions for " + std::to_string(m) + " tokens");
    JF_CHECK(s->mask.size() == 0 || s->mask.size() == m, "mask size differs from token count");
    for (int t : s->tokens)
      if (t < 0 || t >= cfg.vocab_size)
        throw Error("token id " + std::to_string(t) + " is outside the vocabulary (0.." + std::to_string(cfg.vocab_size - 1) + ")");
    for (int r : s->logit_rows) JF_CHECK(r >= 0 && r < m, "logit row out of range");
    for (int p : s->positions)
      if (p < 0) throw Error("forward: negative position " + std::to_string(p));
    const int base_row = static_cast<int>(rows.size());
    seq_first.push_back(base_row);
    const int past = s->cache->size();
    s->cache->append(m);  // throws when the context is full
    for (int i = 0; i < m; i++) s->cache->set_position(past + i, s->positions.empty() ? past + i : s->positions[i]);
    for (int i = 0; i < m; i++) {
      PlannedRow r{s->cache, s->tokens[i], s->cache->position(past + i), past + i, 0, 0, 0, 0};
      list_visible_slots(cfg, *s, past, i, r);
      rows.push_back(r);
    }
    for (int lr : s->logit_rows) logit_src.push_back(base_row + lr);
  }
  seq_first.push_back(static_cast<int32_t>(rows.size()));
}

int64_t RowPlan::chain_source(int logit_row, int32_t first, int vocab) const {
  JF_CHECK(logit_row >= 0 && logit_row < static_cast<int>(logit_src.size()), "a draft chain: not a logit row of the last forward");
  JF_CHECK(first >= 0 && first < vocab, "a draft chain: draft token outside the vocabulary");
  const int64_t source = logit_src[static_cast<size_t>(logit_row)];
  const KvCache& cache = *rows[static_cast<size_t>(source)].cache;
  const int past = cache.size();
  JF_CHECK(past > 0 && cache.position(past - 1) == rows[static_cast<size_t>(source)].pos,
           "a draft chain: the cache does not end with the row");
  return source;
}

// New token i of a sequence sees the `past` cached slots and the new tokens its mask allows, in slot order;
// local layers see those of them within the sliding window (by position).
void RowPlan::list_visible_slots(const ModelConfig& cfg, const SequenceInput& s, int past, int i, PlannedRow& r) {
  auto visible = [&](int j) {
    const bool vis = s.mask.size() == 0 ? j <= i : s.mask.get(i, j);
    JF_CHECK(j != i || vis, "a token must see itself");
    return vis;
  };
  r.slots_begin = static_cast<int32_t>(slot_list.size());
  for (int j = 0; j < past; j++) slot_list.push_back(j);
  for (int j = 0; j < static_cast<int>(s.tokens.size()); j++)
    if (visible(j)) slot_list.push_back(past + j);
  r.slots_end = r.local_begin = r.local_end = static_cast<int32_t>(slot_list.size());
  if (cfg.sliding_window <= 0) return;
  for (int32_t k = r.slots_begin; k < r.slots_end; k++)
    if (in_sliding_window(r.pos, s.cache->position(slot_list[k]), cfg.sliding_window)) slot_list.push_back(slot_list[k]);
  r.local_end = static_cast<int32_t>(slot_list.size());
}

}  // namespace jf
