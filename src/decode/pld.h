// Prompt lookup decoding: the longest suffix of the text (1..ngram_max tokens) that occurred earlier
// proposes the tokens that followed it there; they are verified like any draft (greedy, or sample then
// match — lossless either way).
#pragma once
#include <unordered_map>

#include "decode/decoder.h"
#include "decode/draft_tree.h"

namespace jf {

struct PldOptions {
  int draft_max = 2;  // defaults as in decode/options.h
  int ngram_max = 4;
};

// Index of where each n-gram (n = 1..ngram_max) last ended in a growing token sequence.
class NgramIndex {
 public:
  explicit NgramIndex(int ngram_max) : max_n_(ngram_max), last_(static_cast<size_t>(ngram_max)) {}
  // Proposes up to `max` tokens following the most recent earlier occurrence of the longest matching
  // suffix of `text`. Indexes text[0 .. size-2] first (the suffix itself must not match itself).
  void propose(std::span<const int32_t> text, int max, std::vector<int32_t>& out);

 private:
  static uint64_t hash(std::span<const int32_t> t);
  int max_n_;
  size_t indexed_ = 0;  // n-grams ending before this index are in the maps
  std::vector<std::unordered_map<uint64_t, size_t>> last_;  // [n-1]: hash -> end index (exclusive)
};

class PldDecoder : public Decoder {
 public:
  explicit PldDecoder(const PldOptions& o) : opt_(o) {}
  std::string name() const override { return "pld"; }

 protected:
  void decode(DecodeContext& ctx) override;

 private:
  PldOptions opt_;
};

}  // namespace jf
