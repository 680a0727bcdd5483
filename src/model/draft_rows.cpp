#include "model/draft_rows.h"

namespace jf {

void DraftRows::plan(const RowPlan& p, std::span<SequenceInput* const> seqs, bool has_layer) {
  rows.clear(), logit_rows.clear(), seq_first.assign(1, 0);
  place.assign(p.rows.size(), -1);
  draft_logit.assign(p.logit_src.size(), -1);
  if (!has_layer) return;
  std::vector<int32_t> logit_of(p.rows.size(), -1);
  for (size_t i = 0; i < p.logit_src.size(); i++) logit_of[static_cast<size_t>(p.logit_src[i])] = static_cast<int32_t>(i);
  for (size_t s = 0; s < seqs.size(); s++) {
    const int32_t first = p.seq_first[s], end = p.seq_first[s + 1];
    if ((!seqs[s]->draft_logits && !seqs[s]->draft_context) || first == end) continue;
    for (int32_t r = first; r < end; r++) {
      place[static_cast<size_t>(r)] = static_cast<int32_t>(rows.size());
      rows.push_back(r);
      const int32_t l = logit_of[static_cast<size_t>(r)];
      if (l >= 0 && seqs[s]->draft_logits) {
        draft_logit[static_cast<size_t>(l)] = static_cast<int32_t>(logit_rows.size());
        logit_rows.push_back(l);
      }
    }
    seq_first.push_back(static_cast<int32_t>(rows.size()));
  }
}

}  // namespace jf
