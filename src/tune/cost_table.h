// What one forward of this model costs on this machine, by rows M and by context length: the measurement
// `jf tune` predicts decoder speed from (TPS = TPF / cost(rows per forward)). On a CPU extra rows are
// nearly free only while a forward is memory-bound, and how far that lasts depends on the model and the
// machine, which is why it is measured rather than assumed.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "model/transformer.h"

namespace jf::tune {

struct CostTable {
  std::vector<int> contexts;                 // tokens already in the cache, increasing
  std::vector<int> rows;                     // rows per forward, increasing, rows[0] == 1
  std::vector<std::vector<double>> seconds;  // [context index][row index], seconds per forward (fastest run)

  bool empty() const { return contexts.empty() || rows.empty(); }
  // Seconds for a forward of `m` rows (fractional: a mean over forwards) at context `ctx`: linear in rows
  // between measured points (extrapolated past the last), linear in context between measured contexts.
  double at(double m, double ctx) const;
  // The largest measured M whose forward costs at most `tolerance` times one row's at context index c: up
  // to there extra rows are "nearly free" (1 if even two rows cost more).
  int free_rows(size_t c, double tolerance = 1.15) const;
};

using ProgressFn = std::function<void(int done, int total, const std::string& what)>;

// Times forwards of each row count at each context (causal rows, logits for every row as a draft-verifying
// decoder asks), the fastest of repeats lasting about `seconds_per_point` each (at least 3). Contexts past
// the model's limit are dropped.
CostTable measure_cost(ForwardPass& fwd, std::vector<int> contexts, const std::vector<int>& rows,
                       double seconds_per_point, const ProgressFn& progress = {});

}  // namespace jf::tune
