// Draft trees from a model's draft layer: where the draft is unsure, its second and third guesses go into the
// same forward as its first, and one forward verifies every branch (decode/draft_tree.h). The tree grows as
// EAGLE-2's dynamic trees do: level by level, the most promising nodes (by their estimated chance of being
// accepted) are run through the draft layer as rows of one pass (ForwardResult::expand_tree), each adding its
// top guesses as children; then the nodes most likely to be accepted are sent, as many as pay at the row
// pricing (decode/row_cost.h) or, fixed, as many as the shape allows.
//
// A node's chance of acceptance is the product, along its path, of calibrated per-node estimates:
// P(accepted | parent accepted), learned online per depth and draft-probability bucket from every verified
// tree (the draft's own probabilities are overconfident or not, depending on the model and the text). Its sum
// over the sent nodes is the tree's expected accepted length, which is what the pricing weighs against rows.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "decode/decoder.h"
#include "decode/draft_tree.h"
#include "decode/row_cost.h"

namespace jf {

struct TreeShape {
  int nodes = 0;  // most draft rows a forward (below the pending token); 0: no tree
  int depth = 8;  // deepest level
  int width = 4;  // guesses per expanded node
  int beam = 4;   // nodes expanded per level
};

// P(node accepted | its parent accepted), per depth and draft-probability bucket (bucket kBuckets: drafts
// of unknown probability, a chain's).
class AcceptanceCalibration {
 public:
  static constexpr int kDepths = 8, kBuckets = 10;
  // With the draft's probability (1/2 where unknown, prob < 0) as a prior worth kPrior observations.
  double estimate(int depth, float prob) const;
  void record(int depth, float prob, bool accepted);
  int64_t tried(int depth, int bucket) const { return tried_[cell(depth, bucket)]; }
  int64_t accepted(int depth, int bucket) const { return hit_[cell(depth, bucket)]; }
  static int bucket(float prob);
  static constexpr double kPrior = 2.0;
  // The estimate as TreeGrowth's tables (a + prob * b per cell, the prior's pull included).
  void tables(TreeGrowth& g) const;

 private:
  static size_t cell(int depth, int bucket) {
    return static_cast<size_t>(std::min(std::max(depth, 1), kDepths) - 1) * (kBuckets + 1) + static_cast<size_t>(bucket);
  }
  std::array<int64_t, kDepths*(kBuckets + 1)> tried_{}, hit_{};
};

class TreeDrafter {
 public:
  explicit TreeDrafter(const TreeShape& shape) : shape_(shape) {}
  // The next forward's tree below the pending token (`tree` reset to it) from the last forward's logit row r,
  // its sequence's last verified row (the session's cache ending with it), whose draft logits lead: at most
  // `max_nodes` nodes, cut to those that pay at `price` (null: all). On a backend without trees, the draft's
  // guesses for the first token with the layer's chain under the best. Returns the expected accepted tokens.
  double build(DecodeContext& ctx, int r, int max_nodes, const RowPricer* price, DraftTree& tree);
  // Asks the forward `in` to grow the next tree up front (SequenceInput::grow_tree: on a GPU, inside the
  // forward's submission) by this shape and the calibration so far; build() then takes its candidates when
  // it grew from the row build() is given. Greedy verification only (the backend finds the verified row).
  // As deep as the last tree sent reached, plus one level (a backend grows every level it is asked for), and
  // at least the first two: where the pricing sends nothing, the next tree still costs no submission of its own.
  void ask(SequenceInput& in, int max_nodes) const;
  // After the tree last built was verified: learns which nodes were accepted, counts the accepted depth.
  void learn(DecodeContext& ctx, const DraftTree& tree, const Acceptance& acc);
  const AcceptanceCalibration& calibration() const { return calibration_; }

 private:
  struct Candidate {
    int parent;  // candidate index, -1: a child of the source row
    int32_t token;
    float prob;
    double score;  // estimated P(accepted)
    int depth;
    int rank;           // among its parent's guesses: 0, the draft's first
    int expanded = -1;  // its node in the model's tree (expand_tree's numbering)
  };
  void grow(DecodeContext& ctx, int r, int max_nodes, const RowPricer* price);
  void take_grown(const GrownTree& grown);
  double least_paying(const RowPricer& price) const;
  int chain_fallback(DecodeContext& ctx, int r);
  int choose_count(const RowPricer* price, int available);

  TreeShape shape_;
  AcceptanceCalibration calibration_;
  std::vector<Candidate> cands_;
  std::vector<int> order_;               // candidates in the order sent
  std::vector<TokenGrammar::State> grammar_at_;  // (build: the grammar after each candidate's path)
  int sent_depth_ = -1;                  // the deepest node of the tree last built (-1: none built yet)
  std::vector<float> node_prob_;         // [tree node] of the tree last built: its draft probability
  std::vector<int> node_rank_;           // [tree node]: Candidate::rank
  std::vector<DraftNode> nodes_;
  std::vector<DraftGuess> guesses_;
  std::vector<double> best_scores_;  // candidates' scores, likeliest first (grow's and choose_count's scratch)
};

}  // namespace jf
