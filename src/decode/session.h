// One sequence being decoded: the model's forward pass plus this sequence's KV cache, with the forward
// timed and counted for statistics.
#pragma once
#include <cstdint>
#include <memory>

#include "decode/row_cost.h"
#include "model/batch.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/transformer.h"

namespace jf {

class Session {
 public:
  // context_size <= 0: the model's trained context; kv_type: the KV cache's element type (see KvCache).
  Session(const Model& model, int context_size, DType kv_type = DType::F32);
  // Any forward pass (tests use deterministic fakes); `fwd` must outlive the session.
  Session(ForwardPass& fwd, int context_size, DType kv_type = DType::F32);

  const ModelConfig& config() const { return fwd_->config(); }
  int vocab_size() const { return fwd_->config().vocab_size; }
  KvCache& cache() { return cache_; }
  const KvCache& cache() const { return cache_; }
  int context_size() const { return cache_.capacity(); }

  // Timed forward of one sequence's input (see Transformer::forward).
  ForwardResult forward(SequenceInput& in);
  // The model, for a driver that batches several sessions' inputs into one forward.
  ForwardPass& forward_pass() { return *fwd_; }
  // Counts a forward this session's rows took part in (its wall time, shared with the batch); `in`, its input,
  // says whether it drafted (ran the draft layer or head: priced apart, RowCostModel::record), and then
  // `draft_seconds` of draft work on the host for it (a draft chain, a draft row computed when asked) count
  // as the layer's cost too.
  void record_forward(const SequenceInput& in, double seconds, double draft_seconds = 0);
  void reset_counters();
  int64_t n_forwards() const { return n_forwards_; }
  int64_t n_rows() const { return n_rows_; }  // tokens pushed through the model
  double forward_seconds() const { return forward_seconds_; }
  // Device time of the forwards this session took part in where the backend measures it (GPU timestamps;
  // a batched forward counts whole for each of its sessions), else 0.
  double device_seconds() const { return device_seconds_; }
  // Cost of a forward by row count, from this session's timed forwards (kept across reset_counters).
  // A fixed curve may be set on it (RowCostModel::set_curve): measured beforehand, or synthetic in tests.
  const RowCostModel& row_cost() const { return row_cost_; }
  RowCostModel& row_cost() { return row_cost_; }

 private:
  std::unique_ptr<ForwardPass> owned_;
  ForwardPass* fwd_;
  KvCache cache_;
  int64_t n_forwards_ = 0, n_rows_ = 0;
  double forward_seconds_ = 0, device_seconds_ = 0;
  RowCostModel row_cost_;
};

}  // namespace jf
