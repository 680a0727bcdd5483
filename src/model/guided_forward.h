// Classifier-free guidance as a forward pass. Each logit row becomes u + scale * (c - u): c, the model's
// logits on the sequence; u, its logits on the sequence's unconditional twin, the same tokens with everything
// before the anchor token (a text-to-image prompt's caption, before "<image WxH>") replaced by an
// unconditional prefix (the model trained with some captions dropped). Rows before the anchor are not guided.
//
// Decoders run on it unchanged and stay exact, now for the guided distribution: a twin is a deterministic
// function of the sequence's tokens, its cache follows the sequence's (KvFollower: every truncate and keep
// reaches it), and it runs in the same forward as the sequence (one submission on a GPU).
#pragma once
#include <cstdint>
#include <vector>

#include "model/forward_pass.h"

namespace jf {

class GuidedForward : public ForwardPass {
 public:
  // `inner` must outlive this pass. scale 1 gives the conditional logits (twins still computed).
  GuidedForward(ForwardPass& inner, int32_t anchor, std::vector<int32_t> uncond_prefix, float scale);

  const ModelConfig& config() const override { return inner_.config(); }
  int draft_shift() const override { return inner_.draft_shift(); }
  // The sequence's cache, with an empty follower for its twin.
  KvCache make_cache(int capacity, DType type = DType::F32) override;
  DType preferred_kv_type() const override { return inner_.preferred_kv_type(); }
  double last_device_seconds() const override { return inner_.last_device_seconds(); }
  DeviceSyncs device_syncs() const override { return inner_.device_syncs(); }
  std::string take_profile() override { return inner_.take_profile(); }
  std::string device_name() const override { return inner_.device_name(); }

 protected:
  void run(std::span<SequenceInput* const> seqs) override;
  const float* row_logits(int r) override;

 private:
  // The twin of `s` from its row `first` on (the anchor's row, or 0 once the twin is primed) into `t`.
  void make_twin(const SequenceInput& s, int first, SequenceInput& t);

  ForwardPass& inner_;
  int32_t anchor_;
  std::vector<int32_t> uncond_prefix_;
  float scale_;
  std::vector<SequenceInput> twins_;
  std::vector<SequenceInput*> batch_;  // the sequences, then their twins
  ForwardResult result_;                // the inner forward's
  std::vector<int> twin_row_;           // each logit row's twin row in result_, -1 where not guided
  std::vector<float> guided_;           // guided logit rows, computed when first asked for
  std::vector<uint8_t> done_;
};

}  // namespace jf
