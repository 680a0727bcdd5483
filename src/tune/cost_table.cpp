#include "tune/cost_table.h"

#include <algorithm>

#include "base/error.h"
#include "model/forward_timing.h"
#include "model/kv_cache.h"

namespace jf::tune {

namespace {

double in_rows(const std::vector<int>& rows, const std::vector<double>& t, double m) {
  if (rows.size() == 1 || m <= rows[0]) return t[0] * std::max(m, 1.0) / rows[0];
  size_t i = 1;
  while (i + 1 < rows.size() && m > rows[i]) i++;
  return t[i - 1] + (t[i] - t[i - 1]) * (m - rows[i - 1]) / (rows[i] - rows[i - 1]);
}

}  // namespace

double CostTable::at(double m, double ctx) const {
  JF_CHECK(!empty(), "empty cost table");
  if (contexts.size() == 1 || ctx <= contexts[0]) return in_rows(rows, seconds[0], m);
  size_t c = 1;
  while (c + 1 < contexts.size() && ctx > contexts[c]) c++;
  const double a = in_rows(rows, seconds[c - 1], m), b = in_rows(rows, seconds[c], m);
  const double f = std::min(1.0, (ctx - contexts[c - 1]) / double(contexts[c] - contexts[c - 1]));
  return a + (b - a) * f;
}

int CostTable::free_rows(size_t c, double tolerance) const {
  int best = 1;
  for (size_t i = 0; i < rows.size(); i++)
    if (seconds[c][i] <= tolerance * seconds[c][0]) best = std::max(best, rows[i]);
    else break;
  return best;
}

CostTable measure_cost(ForwardPass& fwd, std::vector<int> contexts, const std::vector<int>& rows,
                       double seconds_per_point, const ProgressFn& progress) {
  JF_CHECK(!rows.empty() && rows[0] == 1, "cost rows must start at 1");
  const int max_rows = *std::max_element(rows.begin(), rows.end());
  const int limit = fwd.config().context_length > 0 ? fwd.config().context_length : 4096;
  std::sort(contexts.begin(), contexts.end());
  contexts.erase(std::remove_if(contexts.begin(), contexts.end(), [&](int c) { return c < 0 || c + max_rows > limit; }),
                 contexts.end());
  if (contexts.empty()) contexts.push_back(0);
  CostTable t;
  t.contexts = contexts;
  t.rows = rows;
  const int vocab = fwd.config().vocab_size;
  KvCache cache = fwd.make_cache(contexts.back() + max_rows);
  SequenceInput in;
  std::vector<int32_t> tokens;
  const int total = static_cast<int>(contexts.size() * rows.size());
  int done = 0;
  for (int ctx : contexts) {
    // Fill the cache up to the context once (in chunks, like a prefill); every timed forward then goes on
    // top of it and is cut off again.
    cache.truncate(0);
    for (int filled = 0; filled < ctx;) {
      const int len = std::min(512, ctx - filled);
      tokens.resize(static_cast<size_t>(len));
      for (int i = 0; i < len; i++) tokens[i] = static_cast<int32_t>((filled + i) * 13 % vocab);
      in.set_causal(&cache, tokens, SequenceInput::Logits::None);
      fwd.forward(in);
      filled += len;
    }
    if (progress) progress(done, total, "cost: rows 1-" + std::to_string(max_rows) + " at context " + std::to_string(ctx));
    std::vector<double> row_times = fastest_forward_seconds(fwd, cache, ctx, rows, SequenceInput::Logits::All,
                                                            seconds_per_point * static_cast<double>(rows.size()), 50);
    done += static_cast<int>(rows.size());
    // More rows never cost less: keep the curve monotone so noise cannot make a wide draft look free.
    for (size_t i = 1; i < row_times.size(); i++) row_times[i] = std::max(row_times[i], row_times[i - 1]);
    t.seconds.push_back(std::move(row_times));
  }
  if (progress) progress(total, total, "cost measured");
  return t;
}

}  // namespace jf::tune
