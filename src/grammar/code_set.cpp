#include "grammar/code_set.h"

#include <algorithm>

namespace jf {

CodeRanges normalized(CodeRanges r) {
  std::sort(r.begin(), r.end());
  CodeRanges out;
  for (auto [a, b] : r) {
    if (a > b || a > kMaxCodePoint) continue;
    b = std::min(b, kMaxCodePoint);
    if (!out.empty() && a <= out.back().second + 1) out.back().second = std::max(out.back().second, b);
    else out.emplace_back(a, b);
  }
  return out;
}

CodeRanges complement(const CodeRanges& r) {
  CodeRanges out;
  uint32_t next = 0;  // the first code point not yet covered
  for (const auto& [a, b] : r) {
    if (a > next) out.emplace_back(next, a - 1);
    next = b + 1;
  }
  if (next <= kMaxCodePoint) out.emplace_back(next, kMaxCodePoint);
  return out;
}

CodeRanges intersect(const CodeRanges& x, const CodeRanges& y) {
  CodeRanges out;
  for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    const uint32_t lo = std::max(x[i].first, y[j].first), hi = std::min(x[i].second, y[j].second);
    if (lo <= hi) out.emplace_back(lo, hi);
    if (x[i].second < y[j].second) i++;
    else j++;
  }
  return out;
}

bool contains(const CodeRanges& r, uint32_t cp) {
  const auto it = std::upper_bound(r.begin(), r.end(), std::make_pair(cp, ~uint32_t{0}));
  return it != r.begin() && std::prev(it)->second >= cp;
}

CodeSet CodeSet::of(const CharClass& c) {
  CodeSet s{normalized(c.ranges)};
  if (c.negated) s.ranges = complement(s.ranges);
  return s;
}

bool CodeSet::subset_of(const CodeSet& o) const {
  size_t j = 0;
  for (const auto& [lo, hi] : ranges) {
    while (j < o.ranges.size() && o.ranges[j].second < lo) j++;
    if (j == o.ranges.size() || o.ranges[j].first > lo || o.ranges[j].second < hi) return false;
  }
  return true;
}

bool CodeSet::disjoint(const CodeSet& o) const {  // (without building the intersection: a mask's hot path)
  for (size_t i = 0, j = 0; i < ranges.size() && j < o.ranges.size();) {
    if (ranges[i].second < o.ranges[j].first) i++;
    else if (o.ranges[j].second < ranges[i].first) j++;
    else return false;
  }
  return true;
}

uint64_t CodeSet::size() const {
  uint64_t n = 0;
  for (const auto& [lo, hi] : ranges) n += uint64_t{hi} - lo + 1;
  return n;
}

std::string CodeSet::key() const {
  std::string k;
  for (const auto& [lo, hi] : ranges) k += std::to_string(lo) + "-" + std::to_string(hi) + ",";
  return k;
}

}  // namespace jf
