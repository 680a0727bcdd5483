// A draft tree grown by the backend right after a forward (SequenceInput::grow_tree), so that a GPU grows it in
// the forward's own submission instead of one submission a level. It grows from the sequence's last verified
// row, found as greedy verification finds it (SequenceInput::verify_parent), by a rule every backend follows
// bit for bit in float arithmetic:
//  - the verified row's draft guesses (its top `width`) are the first level's candidates;
//  - a candidate's score is its parent's (1 at the verified row) times estimate(depth, prob);
//  - at each of `levels` levels, of the newest level's candidates the `beam` best (ties: the earlier) whose
//    score is at least the floor (the max_nodes-th best score of all candidates so far; 0 while fewer) are
//    expanded: run through the draft layer as rows of one pass (as ForwardResult::expand_tree), each adding
//    its top `width` guesses as candidates one level deeper, in the order of its rank, then of its guesses.
// The decoder then sends the best of the candidates as its next tree (decode/tree_draft.h).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

namespace jf {

struct TreeGrowth {
  int levels = 0, width = 0, beam = 0, max_nodes = 0;  // width 0: no tree asked for
  // estimate(depth, prob) = a[i] + prob * b[i], i = (min(depth, depths) - 1) * buckets + bucket(prob), each
  // operation rounded to float (no multiply-add contracted): P(accepted | parent accepted), calibrated.
  int depths = 0, buckets = 0;
  std::vector<float> a, b;

  bool asked() const { return width > 0; }
  int bucket(float prob) const;
  float estimate(int depth, float prob) const;
  // Most candidates the rule makes.
  int max_candidates() const { return width + levels * beam * width; }
};

// A candidate of a grown tree, in the order the rule made them (the first level, then each level's).
struct GrownCandidate {
  int32_t parent = -1;  // an earlier candidate, -1: a child of the verified row
  int32_t token = 0;
  float prob = 0.0f;   // its draft probability
  float score = 0.0f;  // the rule's score
  int32_t depth = 1;
  int32_t rank = 0;       // among its parent's guesses (0: the draft's first)
  bool expanded = false;  // its children are candidates too
};
struct GrownTree {
  int32_t source = -1;  // the verified row it grew from (a logit row of the forward)
  std::vector<GrownCandidate> candidates;
};

// The rule's parts, for a backend that grows trees on the host and for tests that replay a device's: the floor
// over every candidate's score so far, and the level's candidates expanded (indices into `level`, best first).
float growth_floor(std::span<const float> scores, int max_nodes);
std::vector<int> growth_choice(std::span<const float> level, float floor, int beam);
// A child's score: parent * estimate, rounded to float.
float growth_score(const TreeGrowth& g, float parent, int depth, float prob);

}  // namespace jf
