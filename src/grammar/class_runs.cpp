#include "grammar/class_runs.h"

#include <algorithm>

#include "base/error.h"
#include "tokenizer/utf8.h"

namespace jf {

namespace {
// Lengths with a precomputed mask (longer runs, a few hundred tokens of 128k, are walked).
constexpr size_t kMaskedLengths = 48;
}  // namespace

ClassRuns::ClassRuns(const VocabIndex& vocab, const CodeSet& s) : set(s) {
  JF_CHECK(!set.ranges.empty(), "the runs of an empty character set");
  representative = set.ranges[0].first;
  if (set.contains('a')) representative = 'a';  // (an ASCII character steps through the grammar's byte tables)
  std::vector<std::vector<int32_t>> pure;                              // by run length
  std::vector<std::vector<std::pair<std::string, int32_t>>> rest_of;  // by run length
  for (int32_t t = 0; t < vocab.n_vocab; t++) {
    const std::string& b = vocab.bytes[static_cast<size_t>(t)];
    if (b.empty()) continue;
    // The run: whole, valid code points of the set (utf8_next refuses overlong forms and surrogates, which the
    // matcher may take: those end the run and are walked, which is exact either way).
    size_t i = 0, run = 0;
    for (uint32_t cp = 0; i < b.size(); run++) {
      size_t next = i;
      if (!tok::utf8_next(b, next, cp) || !set.contains(cp)) break;
      i = next;
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
