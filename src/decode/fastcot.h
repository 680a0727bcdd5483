// FastCoT (Zhang et al. 2023, "a glimpse of the future from Jacobi decoding"): APPROXIMATE, not lossless.
// Running-window Jacobi decoding produces the rationale for a fixed budget of forwards; its exact tokens are
// then followed by the window's unverified (approximate) tokens and an answer trigger ("So the answer is"),
// and the answer is decoded autoregressively from there. The output is the exact rationale prefix, the
// approximate tokens, the trigger, then the answer; it differs from ar's whenever the rationale was cut.
#pragma once
#include "decode/decoder.h"
#include "decode/draft_init.h"

namespace jf {

struct FastCotOptions {
  int window = 8;                    // rows per rationale forward: the pending token and window - 1 guesses
  int iterations = 32;               // rationale forwards before the answer is triggered
  std::vector<int32_t> trigger;      // answer trigger tokens (may be empty)
  DraftInit init = DraftInit::Context;
  uint64_t seed = 1234;
};

class FastCotDecoder : public Decoder {
 public:
  explicit FastCotDecoder(const FastCotOptions& o) : opt_(o) {}
  std::string name() const override { return "fastcot"; }

  DecodeLoop decode(DecodeContext& ctx) override;

 private:
  FastCotOptions opt_;
};

}  // namespace jf
