// A context-free grammar over Unicode code points, written in GBNF (llama.cpp's notation):
//
//   root   ::= "{" ws pair ("," ws pair)* "}"       # literals, rule references, groups
//   pair   ::= [a-z]+ ":" ws ("yes" | "no")         # character classes, alternatives
//   ws     ::= [ \t\n]{0,4}                         # repetition: * + ? {m} {m,} {m,n}
//
// Parsed into a flat table that the matcher (grammar/matcher.h) walks with stacks: every rule is a list of
// alternatives, every alternative a run of elements ending with End. Groups and repetitions become rules of
// their own, so the table has only three kinds of element.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jf {

// A set of code points: ranges, or everything outside them.
struct CharClass {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // inclusive
  bool negated = false;
  bool matches(uint32_t c) const;
  // Whether any code point in [lo, hi] matches (a partly read UTF-8 sequence).
  bool matches_any(uint32_t lo, uint32_t hi) const;
};

struct GrammarElement {
  enum Kind : uint8_t { End, Ref, Chars };
  Kind kind = End;
  uint32_t value = 0;  // Ref: a rule; Chars: a CharClass
};

struct Grammar {
  std::vector<GrammarElement> elements;         // every alternative's elements, each run ending with End
  std::vector<std::vector<uint32_t>> rules;     // per rule, where each of its alternatives starts in elements
  std::vector<std::string> rule_names;
  std::vector<CharClass> classes;
  uint32_t root = 0;

  // Throws jf::Error "grammar: line L: ..." for a syntax error, an undefined rule, a missing root, left
  // recursion (which a top-down matcher cannot run) or a grammar past the size limits.
  static Grammar parse(std::string_view gbnf, std::string_view root = "root");
  int rule_index(std::string_view name) const;  // -1 if none
};

// Most elements a grammar may have (a bound on compile time and memory for text from a request).
inline constexpr size_t kMaxGrammarElements = 1 << 20;
// Most ways a text may continue at once (stacks of a matcher's state): a bound on the matcher's work a
// character (grammar/matcher.h).
inline constexpr size_t kMaxGrammarStacks = 2048;

}  // namespace jf
