#include "model/forward_timing.h"

#include <algorithm>

#include "base/timer.h"

namespace jf {

std::vector<double> fastest_forward_seconds(ForwardPass& fwd, KvCache& cache, int context, const std::vector<int>& rows,
                                            SequenceInput::Logits logits, double budget_seconds, int max_rounds) {
  const int vocab = fwd.config().vocab_size;
  std::vector<std::vector<int32_t>> tokens(rows.size());
  for (size_t r = 0; r < rows.size(); r++)
    for (int i = 0; i < rows[r]; i++) tokens[r].push_back(static_cast<int32_t>((i * 7 + 1) % vocab));
  SequenceInput in;
  std::vector<double> fastest(rows.size(), 1e30);
  const double t_end = now_seconds() + budget_seconds;
  for (int round = 0; round < 3 || (now_seconds() < t_end && round < max_rounds); round++)
    for (size_t r = 0; r < rows.size(); r++) {
      cache.truncate(context);
      in.set_causal(&cache, tokens[r], logits);
      const double t0 = now_seconds();
      fwd.forward(in);
      fastest[r] = std::min(fastest[r], now_seconds() - t0);
    }
  cache.truncate(context);
  return fastest;
}

}  // namespace jf
