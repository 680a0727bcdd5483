#include "decode/tree_draft.h"

#include <algorithm>
#include <functional>
#include <numeric>

#include "kernels/ops.h"

namespace jf {

int AcceptanceCalibration::bucket(float prob) {
  if (prob < 0.0f) return kBuckets;
  return std::min(static_cast<int>(prob * kBuckets), kBuckets - 1);
}

double AcceptanceCalibration::estimate(int depth, float prob) const {
  const size_t c = cell(depth, bucket(prob));
  const double prior = prob < 0.0f ? 0.5 : std::min(1.0f, prob);
  return (static_cast<double>(hit_[c]) + kPrior * prior) / (static_cast<double>(tried_[c]) + kPrior);
}

void AcceptanceCalibration::tables(TreeGrowth& g) const {
  g.depths = kDepths, g.buckets = kBuckets;
  g.a.resize(static_cast<size_t>(kDepths * kBuckets)), g.b.resize(g.a.size());
  for (int d = 1; d <= kDepths; d++)
    for (int b = 0; b < kBuckets; b++) {  // (hit + kPrior * prob) / (tried + kPrior)
      const size_t c = cell(d, b), i = static_cast<size_t>((d - 1) * kBuckets + b);
      const double n = static_cast<double>(tried_[c]) + kPrior;
      g.a[i] = static_cast<float>(static_cast<double>(hit_[c]) / n);
      g.b[i] = static_cast<float>(kPrior / n);
    }
}

void AcceptanceCalibration::record(int depth, float prob, bool accepted) {
  const size_t c = cell(depth, bucket(prob));
  tried_[c]++;
  hit_[c] += accepted ? 1 : 0;
}

namespace {

// learn()'s counter names, built once (it runs after every forward): "tree_tried_D_B" and "tree_accepted_D_B" for
// depth D <= kDepths and probability bucket B, "tree_reached_depth_D" for D <= 64 (the deepest tree).
enum Counter { kTried, kAccepted };
const std::string& cell_counter(Counter c, int depth, int bucket) {
  constexpr int kCells = AcceptanceCalibration::kBuckets + 1;
  static const auto names = [] {
    std::array<std::vector<std::string>, 2> n;
    for (int d = 1; d <= AcceptanceCalibration::kDepths; d++)
      for (int b = 0; b < kCells; b++) {
        const std::string cell = std::to_string(d) + "_" + std::to_string(b);
        n[kTried].push_back("tree_tried_" + cell);
        n[kAccepted].push_back("tree_accepted_" + cell);
      }
    return n;
  }();
  return names[c][static_cast<size_t>((depth - 1) * kCells + bucket)];
}
const std::string& depth_counter(int depth) {
  static const auto names = [] {
    std::vector<std::string> n;
    for (int d = 0; d <= 64; d++) n.push_back("tree_reached_depth_" + std::to_string(d));
    return n;
  }();
  return names[static_cast<size_t>(std::min(depth, 64))];
}

}  // namespace

double TreeDrafter::build(DecodeContext& ctx, int r, int max_nodes, const RowPricer* price, DraftTree& tree) {
  tree.reset(ctx.pending());
  node_prob_.assign(1, 1.0f);
  node_rank_.assign(1, 0);
  cands_.clear();
  order_.clear();
  if (max_nodes <= 0) return 0.0;
  grow(ctx, r, max_nodes, price);
  // The likeliest first; a child never before its parent (its score is at most its parent's; ties by depth).
  order_.resize(cands_.size());
  std::iota(order_.begin(), order_.end(), 0);
  std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
    const Candidate &x = cands_[static_cast<size_t>(a)], &y = cands_[static_cast<size_t>(b)];
    return x.score != y.score ? x.score > y.score : x.depth < y.depth;
  });
  std::vector<int> node_of(cands_.size(), -1);
  // Under a grammar, a candidate it refuses (and so everything below it) is never accepted: not placed.
  const RuleState* rules = ctx.rules();
  if (rules) grammar_at_.assign(cands_.size(), rules->draft_start());
  size_t kept = 0, refused = 0;
  for (int c : order_) {
    if (static_cast<int>(kept) == max_nodes) break;
    const Candidate& cand = cands_[static_cast<size_t>(c)];
    if (cand.parent >= 0 && node_of[static_cast<size_t>(cand.parent)] < 0) continue;
    if (rules) {
      TokenGrammar::State& at = grammar_at_[static_cast<size_t>(c)];
      if (cand.parent >= 0) at = grammar_at_[static_cast<size_t>(cand.parent)];
      if (!rules->draft_step(at, cand.token)) {
        refused++;
        continue;
      }
    }
    node_of[static_cast<size_t>(c)] = 0;  // (placed below)
    order_[kept++] = c;
  }
  if (refused) ctx.count("draft_tokens_refused", static_cast<int64_t>(refused));
  order_.resize(kept);
  order_.resize(static_cast<size_t>(choose_count(price, static_cast<int>(kept))));
  double expected = 0.0;
  sent_depth_ = 0;
  for (int c : order_) {
    const Candidate& cand = cands_[static_cast<size_t>(c)];
    sent_depth_ = std::max(sent_depth_, cand.depth);
    node_of[static_cast<size_t>(c)] = tree.add(cand.parent < 0 ? 0 : node_of[static_cast<size_t>(cand.parent)], cand.token);
    node_prob_.push_back(cand.prob);
    node_rank_.push_back(cand.rank);
    expected += cand.score;
  }
  ctx.count("tree_forwards");
  ctx.count("tree_nodes", static_cast<int64_t>(order_.size()));
  return expected;
}

void TreeDrafter::ask(SequenceInput& in, int max_nodes) const {
  TreeGrowth& g = in.grow_tree;
  const int deepest = shape_.depth - 1;
  g.levels = std::min(deepest, sent_depth_ < 0 ? deepest : std::max(1, sent_depth_));
  if (g.levels < 1) return;  // (a tree of depth 1: the host takes the first guesses itself)
  g.width = shape_.width, g.beam = shape_.beam, g.max_nodes = max_nodes;
  calibration_.tables(g);
}

// The candidates a forward grew (TreeDrafter::ask), scored again in double by the calibration.
void TreeDrafter::take_grown(const GrownTree& grown) {
  for (const GrownCandidate& c : grown.candidates) {
    const double parent = c.parent < 0 ? 1.0 : cands_[static_cast<size_t>(c.parent)].score;
    cands_.push_back({c.parent, c.token, c.prob, parent * calibration_.estimate(c.depth, c.prob), c.depth, c.rank});
  }
}

// Every candidate: the source row's guesses, then level by level the children of the level's best `beam`.
void TreeDrafter::grow(DecodeContext& ctx, int r, int max_nodes, const RowPricer* price) {
  if (const GrownTree* grown = ctx.grown_tree(r)) {
    ctx.count("trees_grown_in_forward");
    take_grown(*grown);
    return;
  }
  const float* lead = ctx.draft_logits(r);
  if (!lead) return;
  const int V = ctx.session().vocab_size(), K = std::min(shape_.width, V);
  std::vector<int32_t> ids(static_cast<size_t>(K));
  std::vector<float> probs(static_cast<size_t>(K));
  softmax_top_k(lead, V, K, ids.data(), probs.data());
  for (int g = 0; g < K; g++) {
    const float p = probs[static_cast<size_t>(g)];
    cands_.push_back({-1, ids[static_cast<size_t>(g)], p, calibration_.estimate(1, p), 1, g});
  }
  std::vector<int> level;
  struct EndTree {  // (also when a pass throws: the next forward needs the cache as it was)
    DecodeContext& ctx;
    ~EndTree() { ctx.end_tree(); }
  } closer{ctx};
  size_t begin = 0;
  int expanded = 0;
  for (int depth = 1; depth < shape_.depth; depth++) {
    const size_t end = cands_.size();
    level.resize(end - begin);
    std::iota(level.begin(), level.end(), static_cast<int>(begin));
    std::stable_sort(level.begin(), level.end(),
                     [&](int a, int b) { return cands_[static_cast<size_t>(a)].score > cands_[static_cast<size_t>(b)].score; });
    // A node below the max_nodes-th best score so far cannot be sent, nor can its children (scores only fall);
    // priced, nor one whose children could not pay for their rows.
    best_scores_.clear();
    for (const Candidate& c : cands_) best_scores_.push_back(c.score);
    std::sort(best_scores_.begin(), best_scores_.end(), std::greater<>());
    best_scores_.resize(std::min(best_scores_.size(), static_cast<size_t>(max_nodes)));
    double floor = static_cast<int>(best_scores_.size()) == max_nodes ? best_scores_.back() : 0.0;
    if (price) floor = std::max(floor, least_paying(*price));
    nodes_.clear();
    for (int c : level) {
      if (static_cast<int>(nodes_.size()) == shape_.beam || cands_[static_cast<size_t>(c)].score < floor) break;
      const int parent = cands_[static_cast<size_t>(c)].parent;
      nodes_.push_back({parent < 0 ? -1 : cands_[static_cast<size_t>(parent)].expanded, cands_[static_cast<size_t>(c)].token});
    }
    if (nodes_.empty()) break;
    guesses_.resize(nodes_.size() * static_cast<size_t>(K));
    const int made = ctx.expand_tree(r, nodes_, K, guesses_.data());
    if (made == 0) {
      if (depth == 1) chain_fallback(ctx, r);
      break;
    }
    for (int j = 0; j < made; j++) {
      const int c = level[static_cast<size_t>(j)];
      cands_[static_cast<size_t>(c)].expanded = expanded + j;
      const double score = cands_[static_cast<size_t>(c)].score;
      for (int g = 0; g < K; g++) {
        const DraftGuess& guess = guesses_[static_cast<size_t>(j) * static_cast<size_t>(K) + static_cast<size_t>(g)];
        cands_.push_back({c, guess.token, guess.prob, score * calibration_.estimate(depth + 1, guess.prob), depth + 1, g});
      }
    }
    expanded += made;
    begin = end;
  }
}

// No trees on this backend: the layer's chain under each of the `beam` likeliest first guesses (a chain each,
// its drafts' probabilities unknown; on a GPU each but the one asked for up front is a submission of its own).
int TreeDrafter::chain_fallback(DecodeContext& ctx, int r) {
  ctx.count("tree_chain_fallbacks");
  std::vector<int32_t> chain(static_cast<size_t>(std::max(0, shape_.depth - 1)));
  const int firsts = std::min<int>(shape_.beam, static_cast<int>(cands_.size()));
  int total = 0;
  for (int f = 0; f < firsts; f++) {  // (the first level is in the draft's order: index f is its f-th guess)
    const int made = ctx.draft_chain(r, cands_[static_cast<size_t>(f)].token, static_cast<int>(chain.size()), chain.data());
    int parent = f;
    for (int j = 0; j < made; j++) {
      const double score = cands_[static_cast<size_t>(parent)].score * calibration_.estimate(j + 2, -1.0f);
      cands_.push_back({parent, chain[static_cast<size_t>(j)], -1.0f, score, j + 2, 0});
      parent = static_cast<int>(cands_.size()) - 1;
    }
    total += made;
  }
  return total;
}

// The score a further node needs to pay for its row beside the best candidates so far (best_scores_, likeliest
// first): the rate of the best count n of them times the cost of one row more, rate(n) * (relative(n + 2) -
// relative(n + 1)).
double TreeDrafter::least_paying(const RowPricer& price) const {
  double rate = 0.0;
  const int n = price.best_count(best_scores_, 1.0, 1, 0.0, &rate);
  return rate * (price.relative(n + 2) - price.relative(n + 1));
}

// How many of the candidates, in order, to send: all, or as many as pay (RowPricer::best_count on their scores).
int TreeDrafter::choose_count(const RowPricer* price, int available) {
  if (!price) return available;
  best_scores_.clear();
  for (int n = 0; n < available; n++) best_scores_.push_back(cands_[static_cast<size_t>(order_[static_cast<size_t>(n)])].score);
  return price->best_count(best_scores_);
}

void TreeDrafter::learn(DecodeContext& ctx, const DraftTree& tree, const Acceptance& acc) {
  if (tree.size() <= 1 || static_cast<int>(node_prob_.size()) != tree.size()) return;
  std::vector<char> on_path(static_cast<size_t>(tree.size()), 0);
  on_path[0] = 1;
  for (int n : acc.path) on_path[static_cast<size_t>(n)] = 1;
  for (int n = 1; n < tree.size(); n++) {
    if (!on_path[static_cast<size_t>(tree.parent(n))]) continue;  // (never tested)
    const float p = node_prob_[static_cast<size_t>(n)];
    const int depth = std::min(tree.depth(n), AcceptanceCalibration::kDepths), b = AcceptanceCalibration::bucket(p);
    calibration_.record(depth, p, on_path[static_cast<size_t>(n)] != 0);
    ctx.count(cell_counter(kTried, depth, b));
    if (on_path[static_cast<size_t>(n)]) ctx.count(cell_counter(kAccepted, depth, b));
  }
  for (int d = 1; d <= static_cast<int>(acc.path.size()); d++) ctx.count(depth_counter(d));
  // Accepted where the draft's first guess was not: what a chain would have missed.
  for (int n : acc.path)
    if (node_rank_[static_cast<size_t>(n)] > 0) ctx.count("tree_branch_accepted");
}

}  // namespace jf
