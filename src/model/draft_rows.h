// Which rows of a forward a draft layer runs on, which of them give draft logits, and what a draft row reads:
// one description, used by the CPU forward (model/draft_layer.cpp), the Vulkan backend (vulkan/draft_rows.cpp)
// and training (train/draft_pass.cpp: every row of a packed sequence reads its input the same way).
// - The layer runs on every row of the sequences that draft from it (SequenceInput::draft_logits, or
//   draft_context for a prompt later drafts attend to), in forward order, each with its own visible slots
//   (RowPlan's) and its own cache slot in the draft layer's KV layer: a sequence that does not draft pays
//   nothing, and a drafting row gets the same bits alone or in any batch.
// - A draft row reads its final hidden state plus draft_token_scale times the embedding of the model's greedy
//   token at that row (add_draft_token), so its draft predicts the token after that one
//   (ForwardPass::draft_shift 1).
// - The logit rows of a sequence that set draft_logits get draft logits (the draft head on the layer's output).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/batch.h"
#include "model/row_plan.h"

namespace jf {

struct DraftRows {
  std::vector<int32_t> rows;         // forward rows the layer runs on, in order
  std::vector<int32_t> place;        // [forward row]: its index in rows, or -1
  std::vector<int32_t> seq_first;    // each drafting sequence's first index in rows, then rows.size()
  std::vector<int32_t> logit_rows;   // logit rows with draft logits, in order
  std::vector<int32_t> draft_logit;  // [logit row]: its index in logit_rows, or -1

  // From a forward's plan and its sequences; with no draft layer (has_layer false) nothing runs.
  void plan(const RowPlan& plan, std::span<SequenceInput* const> seqs, bool has_layer);
  bool empty() const { return rows.empty(); }
  bool ran_on(int64_t row) const { return row >= 0 && static_cast<size_t>(row) < place.size() && place[static_cast<size_t>(row)] >= 0; }
};

// x += scale * embedding, over `dim` values: a draft row's input (its hidden state x, the greedy token's
// embedding row).
inline void add_draft_token(float* x, const float* scale, const float* embedding, int64_t dim) {
  for (int64_t i = 0; i < dim; i++) x[i] += scale[i] * embedding[i];
}

}  // namespace jf
