// The forward pass of a decoder transformer (llama, qwen2/3, phi3, gemma2/3) over a batch of new tokens from
// one or more sequences.
// Holds only workspaces; weights and KV caches are owned elsewhere. Not thread-safe: one forward at a
// time per Transformer (kernels parallelise internally).
#pragma once
#include <span>
#include <string>
#include <vector>

#include "base/aligned.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/draft_rows.h"
#include "model/draft_tree_plan.h"
#include "model/forward_pass.h"
#include "kernels/ops.h"
#include "model/kv_cache.h"
#include "model/row_plan.h"
#include "model/schedule.h"
#include "model/weights.h"

namespace jf {

class Transformer : public ForwardPass {
 public:
  Transformer(const ModelConfig& cfg, const ModelWeights& w);

  const ModelConfig& config() const override { return cfg_; }
  // The draft logits of the last chain's last virtual row (vocab_size floats).
  const float* last_chain_logits() const { return chain_logits_.data(); }
  uint64_t n_forwards() const { return n_forwards_; }
  uint64_t n_draft_layer_runs() const { return n_draft_layer_runs_; }  // forwards that ran the draft layer
  uint64_t n_draft_head_rows() const { return n_draft_head_rows_; }    // rows the draft head was computed for
  uint64_t n_draft_layer_rows() const { return n_draft_layer_rows_; }  // rows the draft layer ran on

 protected:
  // Each weight is read once for all rows of all sequences.
  void run(std::span<SequenceInput* const> seqs) override;
  const float* row_logits(int r) override { return logits_.data() + static_cast<int64_t>(r) * cfg_.vocab_size; }
  bool has_draft_logits() const override { return drafted_; }
  const float* row_draft_logits(int r) override;  // model/draft_layer.cpp
  int row_chain(int r, int32_t first, int count, int32_t* out) override;  // model/draft_chain.cpp
  int row_tree(int r, std::span<const DraftNode> nodes, int k, DraftGuess* out) override;  // model/draft_tree_rows.cpp
  void end_row_tree() override;

 private:
  void qkv_rows(int layer, int64_t r0, int64_t r1, bool threads);
  void attend_units(int layer, int64_t u0, int64_t u1);
  void out_ffn_rows(int layer, int64_t r0, int64_t r1, bool threads);
  void run_layer(int layer, MultiRowSchedule schedule, int64_t first, int64_t end);
  // model/draft_layer.cpp: the draft layer inside a forward, on the rows of the sequences that draft from it
  void find_draft_spans(std::span<SequenceInput* const> seqs);
  bool layer_ran_on(int64_t row) const;
  void output_head(bool threads);
  void draft_layer(MultiRowSchedule schedule);
  void prepare_drafts(std::span<SequenceInput* const> seqs, bool threads);
  // Layer l's weights; l == n_layers is the draft layer (global attention, whatever the model's pattern).
  const LayerWeights& layer_weights(int l) const { return l < cfg_.n_layers ? w_.layers[l] : w_.draft_layer; }
  bool local_layer(int l) const { return l < cfg_.n_layers && cfg_.local_layer(l); }
  void ensure_capacity(int64_t rows, int64_t logit_rows);
  void final_softcap(float* logits, int64_t rows, bool threads) const;

  ModelConfig cfg_;
  const ModelWeights& w_;
  uint64_t n_forwards_ = 0, n_draft_layer_runs_ = 0, n_draft_head_rows_ = 0, n_draft_layer_rows_ = 0;
  static constexpr size_t kRowParallelMaxBytes = size_t(8) << 20;  // layer weights, see the constructor
  bool row_parallel_ = false;  // small enough that splitting rows between threads may pay
  ScheduleChooser schedule_;
  RowPlan plan_;  // this forward's rows and their visible slots
  // activations, rows x width, allocated once for the largest batch seen
  aligned_vector<float> x_, xb_, q_, k_, v_, att_, hg_, hu_, rope_cos_, rope_sin_, logits_;
  aligned_vector<float> draft_logits_;  // the draft head's, when the last forward asked for them
  aligned_vector<float> draft_in_;      // a draft layer's logit rows, draft-normalised: the draft head's input
  enum DraftState : char { kNoDraft, kToDraft, kDrafted };
  std::vector<DraftState> draft_state_;  // [logit row] of the last forward
  struct RowSpan {
    int64_t first, end;
  };
  DraftRows draft_rows_;              // the rows the draft layer ran on, and the draft logits asked for
  std::vector<RowSpan> draft_spans_;  // those rows, adjacent ones merged
  std::vector<int32_t> plain_rows_;   // logit rows outside them
  static constexpr int64_t kHeadRows = 64;  // rows per output-head product when every row needs its logits
  aligned_vector<float> head_rows_;         // (a model with a draft layer) and their greedy tokens
  std::vector<int32_t> greedy_, head_out_row_;
  aligned_vector<float> chain_logits_;  // a draft chain's draft logits, one row
  // A draft tree's virtual rows after a forward (row_tree), and the forward row it grows from.
  DraftTreePlan tree_;
  int64_t tree_source_ = -1;
  aligned_vector<float> tree_x_, tree_logits_;  // [node] layer outputs; a pass's draft logits
  void expand_tree_rows(std::span<const DraftNode> nodes, int k, DraftGuess* out);
  void virtual_draft_rows(int64_t r0, int64_t m, float* logits, bool threads);  // model/draft_chain.cpp
  bool drafted_ = false;
  aligned_vector<float> local_cos_, local_sin_;  // angles of local layers, when their RoPE base differs
};

}  // namespace jf
