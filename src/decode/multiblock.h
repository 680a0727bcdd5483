// Jacobi Forcing multi-block decoding with rejection recycling (greedy). Up to K blocks of n tokens are in
// flight. The real-active block sits on the committed prefix: only its verified tokens are committed. The
// pseudo-active blocks follow it in the same forward, conditioned on its unverified draft, and iterate under
// Jacobi; their cache entries are dropped. A block spawns when the newest block has ceil(r*n) accepted
// tokens; when the real-active block completes, the next block is promoted and all its tokens are verified
// again as a draft. Rejected tails and earlier drafts go into a small pool that persists across blocks;
// entries containing the pending token propose alternative drafts, verified in the same forward as a tree.
#pragma once
#include <deque>

#include "decode/decoder.h"
#include "decode/draft_init.h"
#include "decode/draft_tree.h"

namespace jf {

struct MultiblockOptions {
  int block = 8;             // n
  int max_blocks = 2;        // K
  float spawn_ratio = 0.85f; // r
  int pool = 4;              // recycled sequences kept (0 = no rejection recycling)
  DraftInit init = DraftInit::Context;
  uint64_t seed = 1234;
};

class MultiblockDecoder : public Decoder {
 public:
  explicit MultiblockDecoder(const MultiblockOptions& o) : opt_(o) {}
  std::string name() const override { return "multiblock"; }

  DecodeLoop decode(DecodeContext& ctx) override;

 private:
  MultiblockOptions opt_;
};

}  // namespace jf
