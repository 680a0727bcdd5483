// A forward pass around another one, for tests that count, slow down or fail forwards: it runs the inner pass
// and answers every row from the inner result.
#pragma once
#include "model/forward_pass.h"

namespace jf::test {

class WrappedForward : public ForwardPass {
 public:
  explicit WrappedForward(ForwardPass& inner) : inner_(&inner) {}
  const ModelConfig& config() const override { return inner_->config(); }
  int draft_shift() const override { return inner_->draft_shift(); }
  KvCache make_cache(int capacity, DType type = DType::F32) override { return inner_->make_cache(capacity, type); }
  DeviceSyncs device_syncs() const override { return inner_->device_syncs(); }

 protected:
  void run(std::span<SequenceInput* const> seqs) override { result_ = inner_->forward(seqs); }
  const float* row_logits(int r) override { return result_.logits(r); }
  int32_t row_greedy(int r) override { return result_.greedy(r); }
  bool has_draft_logits() const override { return result_.drafted(); }
  const float* row_draft_logits(int r) override { return result_.draft_logits(r); }
  int32_t row_draft_greedy(int r) override { return result_.draft_greedy(r); }
  int row_chain(int r, int32_t first, int count, int32_t* out) override { return result_.chain(r, first, count, out); }
  void set_inner(ForwardPass& inner) { inner_ = &inner; }

 private:
  ForwardPass* inner_;
  ForwardResult result_;
};

}  // namespace jf::test
