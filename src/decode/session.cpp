#include "decode/session.h"

#include "base/timer.h"

namespace jf {

Session::Session(const Model& model, int context_size)
    : model_(model),
      transformer_(model.config(), model.weights()),
      cache_(model.config(), context_size > 0 ? context_size : model.config().context_length) {}

const float* Session::forward(SequenceInput& in) {
  const double t0 = now_seconds();
  const float* logits = transformer_.forward(in);
  forward_seconds_ += now_seconds() - t0;
  n_forwards_++;
  n_rows_ += static_cast<int64_t>(in.tokens.size());
  return logits;
}

void Session::reset_counters() {
  n_forwards_ = 0;
  n_rows_ = 0;
  forward_seconds_ = 0;
}

}  // namespace jf
