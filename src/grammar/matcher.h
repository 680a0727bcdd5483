// Where a text stands in a grammar: the set of ways it can continue, as stacks of grammar positions (the
// top of each is the character class the next code point must match; the rest are what follows once the
// current rule ends; an empty stack: the grammar is complete). Advanced a byte at a time, so that a token
// may end inside a UTF-8 sequence.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace jf {

using GrammarStack = std::vector<uint32_t>;  // element indices, top at the back

struct GrammarState {
  std::vector<GrammarStack> stacks;  // sorted, unique
  uint32_t partial = 0;              // the bits of a code point read so far
  int8_t partial_left = 0;           // its continuation bytes still to come
  int8_t partial_size = 0;           // its length in bytes (so that an overlong encoding is refused)
  bool dead() const { return stacks.empty(); }
  // A string naming the state exactly (a cache key).
  std::string key() const;
};

class GrammarMatcher {
 public:
  explicit GrammarMatcher(const Grammar& g);
  const Grammar& grammar() const { return g_; }
  GrammarState start() const;
  // Consumes one byte; false (and the state dead) when no continuation of the grammar allows it.
  bool advance(GrammarState& s, uint8_t byte) const;
  bool advance(GrammarState& s, std::string_view bytes) const;
  // The text so far is a whole sentence of the grammar (an end-of-generation token may follow).
  bool complete(const GrammarState& s) const;
  // The grammar allows nothing more: complete and no stack left with a character to match.
  bool finished(const GrammarState& s) const;
  // The text every continuation of `s` starts with (the grammar allows exactly one next code point, then
  // again, ...), up to max_bytes: what jump-forward sends as drafts. Empty inside a partial code point.
  std::string forced_text(const GrammarState& s, size_t max_bytes = 256) const;
  // Whether the whole of `text` is a sentence of the grammar.
  bool accepts(std::string_view text) const;

 private:
  const Grammar& g_;
  // Pushes the stacks `s` expands to (each top a character class, or empty) into `out`.
  void expand(GrammarStack s, std::vector<GrammarStack>& out, int depth) const;
  void step(const GrammarState& from, uint32_t code_point, GrammarState& to) const;
  static void normalize(std::vector<GrammarStack>& stacks);
};

}  // namespace jf
