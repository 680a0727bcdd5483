// Jacobi trajectories: for each prompt, per-block Jacobi decoding with the current model, recording every
// intermediate state of every block and its fixed point. Stored as JSONL, one line per prompt:
//   {"id": i, "n": n, "prompt": [ids], "tokens": [generated ids], "stop": "eos"|"length"|"context",
//    "blocks": [{"start": s, "states": [[n ids], ...], "fixed": [n ids], "eos": e?}, ...]}
// where block tokens sit at positions start .. start+n-1 of prompt ++ tokens (the context of a block is
// everything before `start`). The block in which the model emits EOS is kept: its fixed point is the text
// up to and including EOS (index e), padded with that EOS to n (EOS itself is not part of `tokens`). Collection streams line by line, resumes by skipping ids already in the
// file (a line cut by an interruption is dropped), and shards prompts by id (--shard i/N).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "decode/decoder.h"
#include "kernels/dtype.h"

namespace jf {

struct TrajectoryBlock {
  int64_t start = 0;
  std::vector<std::vector<int32_t>> states;
  std::vector<int32_t> fixed;
  int eos = -1;  // the block that ends the response: index of its EOS in `fixed`, padded with EOS after it
};

struct TrajectoryRecord {
  int64_t id = 0;
  int n = 0;
  std::vector<int32_t> prompt, tokens;
  std::string stop;
  std::vector<TrajectoryBlock> blocks;

  std::string to_json() const;
  static TrajectoryRecord from_json(const std::string& line);  // throws jf::Error
  std::vector<int32_t> full() const;  // prompt ++ tokens
};

struct CollectOptions {
  int block = 16;         // n
  int max_new_tokens = 256;
  int shard = 0, shards = 1;
  std::vector<int32_t> eos_ids;
  uint64_t seed = 1234;   // initial draft guesses
  int parallel = 1;       // prompts decoded together, one forward for all (the file is the same for any value)
  int context_size = 0;   // KV slots of each prompt's cache (<= 0: the model's trained context)
  DType kv_type = DType::F32;
};

struct CollectSummary {
  int64_t prompts = 0, skipped = 0, blocks = 0, states = 0;
  double mean_iterations_per_block() const { return blocks ? double(states) / blocks : 0.0; }
};

// Reads the ids already complete in `path` (rewriting the file without a trailing partial line).
std::vector<int64_t> completed_ids(const std::string& path);

// Collects trajectories for prompts[i] (token ids) whose i belongs to this shard and is not yet in `path`,
// appending to `path` in prompt order. `progress(done, total)` is called after each prompt is written.
CollectSummary collect_trajectories(ForwardPass& fwd, const std::vector<std::vector<int32_t>>& prompts,
                                    const CollectOptions& opt, const std::string& path,
                                    const std::function<void(int64_t, int64_t)>& progress = {});

// Reads a whole trajectory file (throws jf::Error with the line number on malformed lines).
std::vector<TrajectoryRecord> read_trajectories(const std::string& path);

}  // namespace jf
