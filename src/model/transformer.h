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
#include "kernels/ops.h"
#include "model/kv_cache.h"
#include "model/row_plan.h"
#include "model/schedule.h"
#include "model/weights.h"

namespace jf {

// What decoders need from a model: one forward over a batch of sequences. The Transformer is the real
// one; tests substitute deterministic fakes to drive decoders through exact scenarios.
class ForwardPass {
 public:
  virtual ~ForwardPass() = default;
  // Runs every sequence's new tokens through the model in one pass, appends their keys/values to each
  // sequence's cache (size grows by the number of new tokens), and returns logits for the requested rows,
  // sequence after sequence, vocab_size floats per row. The pointer is valid until the next call.
  // Throws jf::Error on bad tokens/positions or a full cache.
  virtual const float* forward(std::span<SequenceInput* const> seqs) = 0;
  virtual const ModelConfig& config() const = 0;
  // The draft head's logits (ModelWeights::draft_output) for the logit row that `logits` points to in the
  // last forward's result; valid as long as `logits`. Null when the model has no draft head or no
  // sequence of that forward set SequenceInput::draft_logits. A backend may compute a row when it is first
  // asked for (the CPU does for a draft layer's rows), so ask for each row used, never index from another.
  virtual const float* draft_logits_for(const float* logits) {
    (void)logits;
    return nullptr;
  }
  // Whether the last forward gives draft logits (draft_logits_for is not null for its logit rows).
  virtual bool has_draft_logits() const { return false; }
  // The greedy token of a row of logits or draft logits of the last forward: the index of its largest
  // value, the lowest among equals (argmax). A GPU backend has it computed on the device, so a greedy decoder
  // need not read the rows back from it.
  virtual int32_t greedy_token(const float* row) { return static_cast<int32_t>(argmax(row, config().vocab_size)); }
  // Which token a draft row predicts: 0, the one after its input (a draft head on the model's hidden
  // state); 1, the one after that (a draft layer, given the input's hidden state and the model's greedy
  // next token there: the last verified row then drafts the token after the bonus one).
  virtual int draft_shift() const { return config().draft_layer ? 1 : 0; }
  // A draft chain (a draft layer; config().draft_chain says how far its file was trained to go): from the
  // logit row `logits` of the last forward, the last verified row, with which its sequence's `cache` must now
  // end, and that row's shifted draft `first`, runs the draft layer again on a virtual row one position
  // further on, its input the previous pass's output plus the embedding of the previous draft, up to `count`
  // times. Writes the drafts (the tokens after `first`) to `out` and returns how many; 0 without a draft
  // layer. The virtual rows' keys and values go to the cache's free slots, which stay free.
  virtual int draft_chain(const float* logits, KvCache& cache, int32_t first, int count, int32_t* out) {
    (void)logits, (void)cache, (void)first, (void)count, (void)out;
    return 0;
  }

  // A KV cache for this forward pass (a GPU backend keeps its keys and values in device memory). Every
  // sequence a forward gets must use a cache made by that forward pass's make_cache.
  virtual KvCache make_cache(int capacity, DType type = DType::F32) { return KvCache(config(), capacity, type); }
  // Device time of the last forward in seconds, where the backend measures it (GPU timestamps); < 0: not measured.
  virtual double last_device_seconds() const { return -1.0; }
  // Where the device time of the forwards since the last call went, per kernel (a Markdown table), where the
  // backend profiles them (JF_VULKAN_PROFILE=1); "" otherwise.
  virtual std::string take_profile() { return ""; }
  // Where the forward runs, for reports: "cpu", or a GPU backend's device name.
  virtual std::string device_name() const { return "cpu"; }

  const float* forward(SequenceInput& seq) {
    SequenceInput* p = &seq;
    return forward(std::span<SequenceInput* const>(&p, 1));
  }
  int vocab_size() const { return config().vocab_size; }
};

class Transformer : public ForwardPass {
 public:
  Transformer(const ModelConfig& cfg, const ModelWeights& w);

  // Each weight is read once for all rows of all sequences.
  const float* forward(std::span<SequenceInput* const> seqs) override;
  using ForwardPass::forward;
  const ModelConfig& config() const override { return cfg_; }
  const float* draft_logits_for(const float* logits) override;
  bool has_draft_logits() const override { return drafted_; }
  int draft_chain(const float* logits, KvCache& cache, int32_t first, int count, int32_t* out) override;
  // The draft logits of the last draft_chain call's last virtual row (vocab_size floats).
  const float* last_chain_logits() const { return chain_logits_.data(); }
  uint64_t n_forwards() const { return n_forwards_; }
  uint64_t n_draft_layer_runs() const { return n_draft_layer_runs_; }  // forwards that ran the draft layer
  uint64_t n_draft_head_rows() const { return n_draft_head_rows_; }    // rows the draft head was computed for
  uint64_t n_draft_layer_rows() const { return n_draft_layer_rows_; }  // rows the draft layer ran on

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
  std::vector<RowSpan> draft_spans_;  // rows the draft layer ran on: its sequences', adjacent ones merged
  std::vector<int32_t> plain_rows_;   // logit rows outside them
  static constexpr int64_t kHeadRows = 64;  // rows per output-head product when every row needs its logits
  aligned_vector<float> head_rows_;         // (a model with a draft layer) and their greedy tokens
  std::vector<int32_t> greedy_, head_out_row_;
  aligned_vector<float> chain_logits_;  // a draft chain's draft logits, one row
  bool drafted_ = false;
  aligned_vector<float> local_cos_, local_sin_;  // angles of local layers, when their RoPE base differs
};

}  // namespace jf
