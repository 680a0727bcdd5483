// The draft layer inside a forward (Transformer::run): on the rows model/draft_rows.h describes (the drafting
// sequences' alone: in a server's batch a sequence that does not draft, `ar` or a prompt that will not be
// drafted from, pays nothing for it, not even the output head over every one of its rows that the layer's input
// needs). The draft head runs on a logit row only when a decoder asks for it (row_draft_logits).
#include <algorithm>

#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "model/transformer.h"

namespace jf {

// draft_rows_ for this forward, and its rows as runs of adjacent rows (each run goes through the layer at once).
void Transformer::find_draft_spans(std::span<SequenceInput* const> seqs) {
  draft_rows_.plan(plan_, seqs, w_.draft_output_norm != nullptr);
  draft_spans_.clear();
  for (int32_t r : draft_rows_.rows) {
    if (!draft_spans_.empty() && draft_spans_.back().end == r) draft_spans_.back().end = r + 1;
    else draft_spans_.push_back({r, r + 1});
  }
}

bool Transformer::layer_ran_on(int64_t row) const { return draft_rows_.ran_on(row); }

// The output head for the logit rows the draft layer does not cover (all of them, in one product, when no
// sequence drafts); in a mixed batch in pieces of kHeadRows, the same bits per row either way.
void Transformer::output_head(bool threads) {
  const int64_t nl = static_cast<int64_t>(plan_.logit_src.size()), V = cfg_.vocab_size;
  const int dim = cfg_.dim;
  if (draft_spans_.empty()) {
    for (int64_t i = 0; i < nl; i++) rmsnorm(&x_[plan_.logit_src[i] * dim], w_.output_norm, dim, cfg_.norm_eps, &xb_[i * dim]);
    matmul(xb_.data(), nl, w_.output, logits_.data(), threads);
    final_softcap(logits_.data(), nl, threads);
    return;
  }
  plain_rows_.clear();
  for (int64_t i = 0; i < nl; i++)
    if (!layer_ran_on(plan_.logit_src[i])) plain_rows_.push_back(static_cast<int32_t>(i));
  for (size_t p0 = 0; p0 < plain_rows_.size(); p0 += kHeadRows) {
    const int64_t m = std::min<int64_t>(kHeadRows, static_cast<int64_t>(plain_rows_.size() - p0));
    for (int64_t j = 0; j < m; j++)
      rmsnorm(&x_[plan_.logit_src[plain_rows_[p0 + j]] * dim], w_.output_norm, dim, cfg_.norm_eps, &xb_[j * dim]);
    matmul(xb_.data(), m, w_.output, head_rows_.data(), threads);
    final_softcap(head_rows_.data(), m, threads);
    for (int64_t j = 0; j < m; j++) std::copy_n(&head_rows_[j * V], V, &logits_[int64_t{plain_rows_[p0 + j]} * V]);
  }
}

// Each of the spans' rows: its output logits (in pieces of kHeadRows rows; the requested ones copied out) and
// its greedy token a; then the draft layer on x + draft_token_scale * embedding(a) (later drafts attend to
// its keys and values); draft_in_ holds the spans' logit rows' draft-normalised output, the draft head's input.
void Transformer::draft_layer(MultiRowSchedule schedule) {
  const int64_t n = static_cast<int64_t>(plan_.rows.size()), V = cfg_.vocab_size;
  const int dim = cfg_.dim;
  const bool threads = schedule != MultiRowSchedule::Serial;
  greedy_.resize(static_cast<size_t>(n));
  std::vector<int32_t>& out_row = head_out_row_;  // each row's place among the logit rows, or -1
  out_row.assign(static_cast<size_t>(n), -1);
  for (size_t i = 0; i < plan_.logit_src.size(); i++) out_row[plan_.logit_src[i]] = static_cast<int32_t>(i);
  for (const RowSpan& span : draft_spans_) {
    for (int64_t r0 = span.first; r0 < span.end; r0 += kHeadRows) {
      const int64_t m = std::min<int64_t>(kHeadRows, span.end - r0);
      for (int64_t i = 0; i < m; i++) rmsnorm(&x_[(r0 + i) * dim], w_.output_norm, dim, cfg_.norm_eps, &xb_[i * dim]);
      matmul(xb_.data(), m, w_.output, head_rows_.data(), threads);
      final_softcap(head_rows_.data(), m, threads);
      for (int64_t i = 0; i < m; i++) {
        const float* row = &head_rows_[i * V];
        greedy_[r0 + i] = static_cast<int32_t>(argmax(row, V));
        if (out_row[r0 + i] >= 0) std::copy_n(row, V, &logits_[int64_t{out_row[r0 + i]} * V]);
      }
    }
    float* e = xb_.data();  // free until the layer's first norm
    for (int64_t r = span.first; r < span.end; r++) {
      dequantize_row(w_.tok_embd.type, w_.tok_embd.row(greedy_[r]), e, dim);
      add_draft_token(&x_[r * dim], w_.draft_token_scale, e, dim);
    }
    run_layer(cfg_.n_layers, schedule, span.first, span.end);
    n_draft_layer_rows_ += static_cast<uint64_t>(span.end - span.first);
  }
  for (size_t i = 0; i < plan_.logit_src.size(); i++)
    if (layer_ran_on(plan_.logit_src[i]))
      rmsnorm(&x_[plan_.logit_src[i] * dim], w_.draft_output_norm, dim, cfg_.norm_eps, &draft_in_[i * dim]);
}

// Which logit rows have draft logits: a draft layer's, the rows of the sequences that asked (computed when
// first asked for); a draft head's (on the model's own output), every logit row, in one product now.
void Transformer::prepare_drafts(std::span<SequenceInput* const> seqs, bool threads) {
  const int64_t nl = static_cast<int64_t>(plan_.logit_src.size());
  drafted_ = w_.draft_output.data && std::any_of(seqs.begin(), seqs.end(), [](const SequenceInput* s) { return s->draft_logits; });
  if (!drafted_) return;
  if (!w_.draft_output_norm) {
    matmul(xb_.data(), nl, w_.draft_output, draft_logits_.data(), threads);
    final_softcap(draft_logits_.data(), nl, threads);
    n_draft_head_rows_ += static_cast<uint64_t>(nl);
    draft_state_.assign(static_cast<size_t>(nl), kDrafted);
    return;
  }
  draft_state_.assign(static_cast<size_t>(nl), kNoDraft);
  for (int64_t i = 0; i < nl; i++)
    if (draft_rows_.draft_logit[static_cast<size_t>(i)] >= 0) draft_state_[static_cast<size_t>(i)] = kToDraft;
}

const float* Transformer::row_draft_logits(int r) {
  const int64_t V = cfg_.vocab_size;
  if (!drafted_ || r < 0 || r >= static_cast<int>(draft_state_.size())) return nullptr;
  DraftState& state = draft_state_[static_cast<size_t>(r)];
  float* out = draft_logits_.data() + r * V;
  if (state == kNoDraft) return nullptr;
  if (state == kToDraft) {
    // A draft layer's rows are drafted one at a time, when first asked: a decoder uses one or two of them
    // (the last verified row's shifted draft), and the draft head over every row cost as much again as the
    // layer (with a 128k vocabulary, more than the model's layers). One row gives the same bits as a batch.
    matmul(&draft_in_[r * cfg_.dim], 1, w_.draft_output, out, num_threads() > 1);
    final_softcap(out, 1, false);
    state = kDrafted;
    n_draft_head_rows_++;
  }
  return out;
}

}  // namespace jf
