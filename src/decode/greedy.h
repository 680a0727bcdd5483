// The token a greedy decoder takes from a row of logits or draft logits of the last forward
// (ForwardPass::greedy_token: on a GPU computed there, so the row is never read back). The shared verification
// and drafting helpers take one in place of the vocabulary size.
#pragma once
#include <cstdint>

#include "model/transformer.h"

namespace jf {

class Greedy {
 public:
  explicit Greedy(ForwardPass& f) : f_(&f) {}
  int32_t operator()(const float* row) const { return f_->greedy_token(row); }

 private:
  ForwardPass* f_;
};

}  // namespace jf
