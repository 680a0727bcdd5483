// How long a forward of each row count takes on this machine: what row pricing (decode/row_cost.h), jf tune's
// cost table and the server's start-up curve are measured with.
#pragma once
#include <vector>

#include "model/batch.h"
#include "model/kv_cache.h"
#include "model/transformer.h"

namespace jf {

// Seconds of one causal forward of each of `rows` rows, on top of the first `context` tokens of `cache`
// (cut back to them after each): the fastest of at least 3 rounds, more while `budget_seconds` lasts, at
// most `max_rounds`. A round times every row count once, in turn, so that other work on the machine hits
// every row count alike; timed one count after another, a quiet spell made one look cheap (the 3-row cost
// of the default model measured 1.42-1.93x one row's from run to run). The fastest: other load only adds time.
std::vector<double> fastest_forward_seconds(ForwardPass& fwd, KvCache& cache, int context, const std::vector<int>& rows,
                                            SequenceInput::Logits logits, double budget_seconds, int max_rounds);

}  // namespace jf
