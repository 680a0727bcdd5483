// Prompt lookup decoding: the longest suffix of the text (1..ngram_max tokens) that occurred earlier
// proposes the tokens that followed it there; they are verified like any draft (greedy, or sample then
// match — lossless either way).
#pragma once
#include <unordered_map>

#include "decode/decoder.h"
#include "decode/draft_tree.h"

namespace jf {

struct PldOptions {
  int draft_max = 8;  // defaults as in decode/options.h
  int ngram_max = 4;
  bool adaptive = true;  // cut each proposal to the length with the best expected tokens per unit of time
};

// Index of where each n-gram (n = 1..ngram_max) last ended in a growing token sequence.
class NgramIndex {
 public:
  explicit NgramIndex(int ngram_max) : max_n_(ngram_max), last_(static_cast<size_t>(ngram_max)) {}
  // Proposes up to `max` tokens following the most recent earlier occurrence of the longest matching
  // suffix of `text`. Indexes text[0 .. size-2] first (the suffix itself must not match itself). Returns
  // the length of the matched suffix (0: no proposal).
  int propose(std::span<const int32_t> text, int max, std::vector<int32_t>& out);

 private:
  static uint64_t hash(std::span<const int32_t> t);
  int max_n_;
  size_t indexed_ = 0;  // n-grams ending before this index are in the maps
  std::vector<std::unordered_map<uint64_t, size_t>> last_;  // [n-1]: hash -> end index (exclusive)
};

// How often draft token i was accepted, given that tokens 0..i-1 were, for proposals whose matched suffix
// had n tokens; and the draft length that maximises expected committed tokens per unit of forward time.
class DraftLengthPolicy {
 public:
  DraftLengthPolicy(int ngram_max, int draft_max);
  // Best length <= available for a proposal from an n-token match (0: forward the pending token alone).
  int choose(int n, int available, const RowCostModel& cost) const;
  // Records a verified proposal of `drafted` tokens of which the first `accepted` matched.
  void record(int n, int drafted, int accepted);
  // P(token i accepted | 0..i-1 accepted), with one success and one failure as the prior (and at least 1/2
  // until the case has been tried kExplore times).
  double p_accept(int n, int i) const;
  static constexpr int64_t kExplore = 8;

 private:
  int positions_;
  std::vector<int64_t> tried_, hit_;  // [(n-1) * positions_ + min(i, positions_-1)]
};

// Keeps its acceptance statistics across generations: what it learned about this model's text carries over
// to the next prompt.
class PldDecoder : public Decoder {
 public:
  explicit PldDecoder(const PldOptions& o) : opt_(o), policy_(o.ngram_max, o.draft_max) {}
  std::string name() const override { return "pld"; }

 protected:
  void decode(DecodeContext& ctx) override;

 private:
  PldOptions opt_;
  DraftLengthPolicy policy_;
};

}  // namespace jf
