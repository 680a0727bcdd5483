#include "grammar/class_runs.h"

#include <algorithm>

#include "base/error.h"

namespace jf {

namespace {
constexpr uint32_t kMaxCodePoint = 0x10FFFF;
// Lengths with a precomputed mask (longer runs, a few hundred tokens of 128k, are walked).
constexpr size_t kMaskedLengths = 48;

// The code point at b[i] as the grammar's matcher reads UTF-8 (no overlong forms, nothing past U+10FFFF),
// and its length in bytes; 0 if the bytes there are not a whole code point.
int decode(const std::string& b, size_t i, uint32_t& cp) {
  const uint8_t lead = static_cast<uint8_t>(b[i]);
  const int n = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + static_cast<size_t>(n) > b.size()) return 0;
  cp = n == 1 ? lead : lead & (0x7Fu >> n);
  for (int k = 1; k < n; k++) {
    const uint8_t c = static_cast<uint8_t>(b[i + static_cast<size_t>(k)]);
    if ((c & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (c & 0x3Fu);
  }
  const uint32_t min = n == 2 ? 0x80 : n == 3 ? 0x800 : n == 4 ? 0x10000 : 0;
  return cp < min || cp > kMaxCodePoint ? 0 : n;
}
}  // namespace

CodeSet CodeSet::of(const CharClass& c) {
  std::vector<std::pair<uint32_t, uint32_t>> r;
  for (auto [lo, hi] : c.ranges)
    if (lo <= hi && lo <= kMaxCodePoint) r.emplace_back(lo, std::min(hi, kMaxCodePoint));
  std::sort(r.begin(), r.end());
  CodeSet s;
  for (const auto& [lo, hi] : r) {
    if (!s.ranges.empty() && lo <= s.ranges.back().second + 1) s.ranges.back().second = std::max(s.ranges.back().second, hi);
    else s.ranges.emplace_back(lo, hi);
  }
  if (!c.negated) return s;
  CodeSet out;
  uint32_t next = 0;  // the first code point not yet covered
  for (const auto& [lo, hi] : s.ranges) {
    if (lo > next) out.ranges.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.ranges.emplace_back(next, kMaxCodePoint);
  return out;
}

bool CodeSet::contains(uint32_t c) const {
  const auto it = std::upper_bound(ranges.begin(), ranges.end(), std::make_pair(c, kMaxCodePoint + 1));
  return it != ranges.begin() && std::prev(it)->second >= c;
}

bool CodeSet::subset_of(const CodeSet& o) const {
  size_t j = 0;
  for (const auto& [lo, hi] : ranges) {
    while (j < o.ranges.size() && o.ranges[j].second < lo) j++;
    if (j == o.ranges.size() || o.ranges[j].first > lo || o.ranges[j].second < hi) return false;
  }
  return true;
}

bool CodeSet::disjoint(const CodeSet& o) const {
  size_t i = 0, j = 0;
  while (i < ranges.size() && j < o.ranges.size()) {
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

ClassRuns::ClassRuns(const VocabIndex& vocab, const CodeSet& s) : set(s) {
  JF_CHECK(!set.ranges.empty(), "the runs of an empty character set");
  representative = set.ranges[0].first;
  if (set.contains('a')) representative = 'a';  // (an ASCII character steps through the grammar's byte tables)
  std::vector<std::vector<int32_t>> pure;                              // by run length
  std::vector<std::vector<std::pair<std::string, int32_t>>> rest_of;  // by run length
  for (int32_t t = 0; t < vocab.n_vocab; t++) {
    const std::string& b = vocab.bytes[static_cast<size_t>(t)];
    if (b.empty()) continue;
    size_t i = 0, run = 0;
    for (uint32_t cp = 0; i < b.size(); run++) {
      const int n = decode(b, i, cp);
      if (n == 0 || !set.contains(cp)) break;
      i += static_cast<size_t>(n);
    }
    if (i == b.size() && run <= kMaskedLengths) {
      if (pure.size() <= run) pure.resize(run + 1);
      pure[run].push_back(t);
    } else {
      if (rest_of.size() <= run) rest_of.resize(run + 1);
      rest_of[run].emplace_back(b.substr(i), t);
    }
  }
  up_to.assign(pure.size(), TokenMask(static_cast<size_t>((vocab.n_vocab + 63) / 64), 0));
  for (size_t k = 0; k < pure.size(); k++) {
    if (k > 0) up_to[k] = up_to[k - 1];
    for (int32_t t : pure[k]) mask_set(up_to[k], t);
  }
  rest.resize(rest_of.size());
  for (size_t r = 0; r < rest_of.size(); r++) rest[r] = PrefixTree::build(std::move(rest_of[r]));
}

}  // namespace jf
