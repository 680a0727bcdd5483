// Many independent generations through one model, several in flight at a time: each step gathers the next
// input of every generation in flight into one multi-sequence forward, as the server's scheduler does for
// its requests (without the requests). A forward reads each weight once for all its rows, so on a CPU a
// batch of B single-token decodes costs far less than B forwards. Batch invariance makes every
// generation's tokens the same bits as generating it alone (tested).
#pragma once
#include <functional>
#include <memory>

#include "decode/decoder.h"
#include "decode/session.h"

namespace jf {

// Generation `index` on `session` (its cache is empty). The decoder it uses must outlive it.
using StartGeneration = std::function<std::unique_ptr<Generation>(int index, Session& session)>;
// Called once per generation when it ends, in the order they end (not necessarily index order).
using FinishGeneration = std::function<void(int index, GenerationResult&& result)>;

// Runs generations 0 .. count-1, at most `parallel` at a time, each in its own KV cache of
// `context_size` slots. Generations start in index order as earlier ones finish. An error in one
// generation (its prompt, its decode loop) propagates.
void run_generation_batch(ForwardPass& fwd, int count, int parallel, int context_size, DType kv_type,
                          const StartGeneration& start, const FinishGeneration& finish);

}  // namespace jf
