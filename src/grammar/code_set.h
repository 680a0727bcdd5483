// Sets of Unicode code points (0 .. 0x10FFFF) as sorted, disjoint, non-adjacent inclusive ranges: what a
// grammar's character class allows (token masks, class_runs.h) and what a regular expression's sets are
// (regex_gbnf.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar.h"

namespace jf {

using CodeRanges = std::vector<std::pair<uint32_t, uint32_t>>;
inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Any inclusive ranges (overlapping, unsorted, past U+10FFFF) made sorted, disjoint and non-adjacent.
CodeRanges normalized(CodeRanges r);
// The code points outside / inside both of normalized ranges.
CodeRanges complement(const CodeRanges& r);
CodeRanges intersect(const CodeRanges& x, const CodeRanges& y);
bool contains(const CodeRanges& r, uint32_t cp);  // (normalized ranges)

struct CodeSet {
  CodeRanges ranges;  // normalized
  static CodeSet of(const CharClass& c);
  bool contains(uint32_t c) const { return jf::contains(ranges, c); }
  bool subset_of(const CodeSet& o) const;
  bool disjoint(const CodeSet& o) const;
  uint64_t size() const;
  std::string key() const;
};

}  // namespace jf
