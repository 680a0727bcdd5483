#include "model/tree_growth.h"

#include <algorithm>
#include <numeric>

namespace jf {

int TreeGrowth::bucket(float prob) const { return std::clamp(static_cast<int>(prob * static_cast<float>(buckets)), 0, buckets - 1); }

// (volatile: each product and sum rounded to float, as the device's `precise` operations, whatever the
// compiler's contraction of a multiply-add)
float TreeGrowth::estimate(int depth, float prob) const {
  const size_t i = static_cast<size_t>((std::clamp(depth, 1, depths) - 1) * buckets + bucket(prob));
  volatile float product = prob * b[i];
  volatile float sum = a[i] + product;
  return sum;
}

float growth_score(const TreeGrowth& g, float parent, int depth, float prob) {
  volatile float score = parent * g.estimate(depth, prob);
  return score;
}

float growth_floor(std::span<const float> scores, int max_nodes) {
  if (max_nodes <= 0 || static_cast<int>(scores.size()) < max_nodes) return 0.0f;
  std::vector<float> s(scores.begin(), scores.end());
  std::nth_element(s.begin(), s.begin() + (max_nodes - 1), s.end(), std::greater<>());
  return s[static_cast<size_t>(max_nodes - 1)];
}

std::vector<int> growth_choice(std::span<const float> level, float floor, int beam) {
  std::vector<int> order(level.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return level[static_cast<size_t>(x)] > level[static_cast<size_t>(y)]; });
  std::vector<int> chosen;
  for (int i : order) {
    if (static_cast<int>(chosen.size()) == beam || level[static_cast<size_t>(i)] < floor) break;
    chosen.push_back(i);
  }
  return chosen;
}

}  // namespace jf
