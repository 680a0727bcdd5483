// Whether a drafting decoder's next forward runs the model's draft layer (or head). Its drafts are far better
// than the base's own rows' predictions, but it costs a share of every forward it runs in (the layer, and the
// output head over each row): on a GPU, little; on two CPU cores with a small model, 30-50%. The decoder
// compares the tokens per unit of cost it expects either way (row pricing, decode/row_cost.h, with the
// measured overhead) and the switch follows the better, trying the other way now and then (every kProbe
// forwards, further apart while the probes change nothing) so that neither estimate goes
// stale. Either way the output is the model's own: drafts are only ever proposals.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "decode/row_cost.h"

namespace jf {

class DraftLayerSwitch {
 public:
  // rate_with / rate_without: expected committed tokens per unit of forward cost with the layer and without.
  // A probe that leaves the choice as it was doubles the distance to the next, up to kMaxProbe: on a CPU
  // where the layer never pays, a probe every kProbe forwards (a layer and a chain on the host) costs ~3%.
  // A choice that flips starts again at kProbe.
  bool choose(double rate_with, double rate_without) {
    const bool better = rate_with >= rate_without;
    if (probed_) probe_every_ = better == on_ ? std::min(2 * probe_every_, kMaxProbe) : kProbe;
    probed_ = false;
    if (better != on_) on_ = better, run_ = 0, probe_every_ = kProbe;
    if (++run_ < probe_every_) return on_;
    run_ = 0;
    probed_ = true;
    return !on_;
  }
  // The same, pricing drafts of `length` tokens whose first `drafted` are the layer's (`drafted_kind` in
  // `policy`) against drafts of the rows' own predictions (`predicted_kind`), the former at the cost model's
  // measured draft overhead.
  bool choose(const DraftLengthPolicy& policy, const RowPricer& price, int drafted_kind, int predicted_kind, int drafted,
              int length) {
    with_.assign(static_cast<size_t>(std::max(0, length)), predicted_kind);
    std::fill_n(with_.begin(), std::clamp(drafted, 0, std::max(0, length)), drafted_kind);
    without_.assign(with_.size(), predicted_kind);
    return choose(policy.best_rate(with_, price) / (1.0 + price.draft_overhead()), policy.best_rate(without_, price));
  }
  static constexpr int64_t kProbe = 32, kMaxProbe = 512;

 private:
  bool on_ = true;
  int64_t run_ = 0, probe_every_ = kProbe;
  bool probed_ = false;  // the last choice was a probe
  std::vector<int> with_, without_;
};

}  // namespace jf
