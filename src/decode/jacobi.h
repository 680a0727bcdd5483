// Jacobi decoding (greedy): the pending token plus a draft of guesses go through one forward; the prefix of
// the draft that matches the model's own predictions is committed with one more token, and the predictions
// at the rejected positions become the next draft. Per-block mode: a block of n tokens, the draft shrinks
// as the block fills. Running-window mode: the draft is topped up to n-1 guesses after every step.
#pragma once
#include "decode/decoder.h"
#include "decode/draft_init.h"
#include "decode/draft_tree.h"

namespace jf {

struct JacobiOptions {
  int block = 4;
  bool running = false;
  DraftInit init = DraftInit::Context;
  uint64_t seed = 1234;
};

class JacobiDecoder : public Decoder {
 public:
  explicit JacobiDecoder(const JacobiOptions& o) : opt_(o) {}
  std::string name() const override { return "jacobi"; }

 protected:
  void decode(DecodeContext& ctx) override;

 private:
  JacobiOptions opt_;
};

// Longest draft a forward can carry: room for the pending row, no further than the generation may go.
int max_draft(const DecodeContext& ctx, int wanted);

}  // namespace jf
