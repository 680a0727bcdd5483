#include "decode/generation_batch.h"

#include <algorithm>
#include <vector>

#include "base/error.h"
#include "base/timer.h"

namespace jf {

namespace {

struct InFlight {
  std::unique_ptr<Session> session;
  std::unique_ptr<Generation> generation;
  int index = -1;
};

}  // namespace

void run_generation_batch(ForwardPass& fwd, int count, int parallel, int context_size, DType kv_type,
                          const StartGeneration& start, const FinishGeneration& finish) {
  if (parallel < 1) throw Error("the number of generations in flight must be >= 1");
  std::vector<InFlight> slots(static_cast<size_t>(std::min(parallel, std::max(count, 1))));
  for (InFlight& s : slots) s.session = std::make_unique<Session>(fwd, context_size, kv_type);
  int next = 0;
  std::vector<SequenceInput*> inputs;
  std::vector<InFlight*> stepping;
  for (;;) {
    inputs.clear();
    stepping.clear();
    for (InFlight& s : slots) {
      // A generation can end without a forward (nothing to generate): hand it over and start the next one.
      while (!s.generation && next < count) {
        s.session->cache().truncate(0);
        s.index = next++;
        s.generation = start(s.index, *s.session);
        if (s.generation->finished()) {
          finish(s.index, s.generation->take_result());
          s.generation.reset();
        }
      }
      if (!s.generation) continue;
      inputs.push_back(s.generation->next_input());
      stepping.push_back(&s);
    }
    if (inputs.empty()) return;
    const double t0 = now_seconds();
    const ForwardResult result = fwd.forward(inputs);
    const double seconds = now_seconds() - t0;
    int offset = 0;
    for (size_t i = 0; i < stepping.size(); i++) {
      const int n = static_cast<int>(inputs[i]->logit_rows.size());
      const ForwardResult own = result.slice(offset, n);
      offset += n;  // before consume(): a finished generation takes its input along
      InFlight& s = *stepping[i];
      s.generation->consume(own, seconds);
      if (s.generation->finished()) {
        finish(s.index, s.generation->take_result());
        s.generation.reset();
      }
    }
  }
}

}  // namespace jf
