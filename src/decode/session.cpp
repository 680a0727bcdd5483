#include "decode/session.h"

#include "base/timer.h"

namespace jf {

Session::Session(const Model& model, int context_size, DType kv_type)
    : owned_(std::make_unique<Transformer>(model.config(), model.weights())),
      fwd_(owned_.get()),
      cache_(model.config(), context_size > 0 ? context_size : model.config().context_length, kv_type) {}

Session::Session(ForwardPass& fwd, int context_size, DType kv_type)
    : fwd_(&fwd), cache_(fwd.make_cache(context_size > 0 ? context_size : fwd.config().context_length, kv_type)) {}

ForwardResult Session::forward(SequenceInput& in) {
  const double t0 = now_seconds();
  const ForwardResult result = fwd_->forward(in);
  record_forward(in, now_seconds() - t0);
  return result;
}

void Session::record_forward(const SequenceInput& in, double seconds, double draft_seconds) {
  const int rows = static_cast<int>(in.tokens.size());
  forward_seconds_ += seconds;
  if (const double d = fwd_->last_device_seconds(); d >= 0) device_seconds_ += d;  // the forward just run
  const ModelConfig& c = fwd_->config();
  const bool drafted = (c.draft_layer && (in.draft_logits || in.draft_context)) || (c.draft_head && in.draft_logits);
  row_cost_.record(rows, drafted ? seconds + draft_seconds : seconds, drafted);
  n_forwards_++;
  n_rows_ += rows;
}

void Session::reset_counters() {
  n_forwards_ = 0;
  n_rows_ = 0;
  forward_seconds_ = 0;
}

}  // namespace jf
