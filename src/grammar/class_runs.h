// A vocabulary's tokens by how they start with a run of one character set: what lets a grammar state inside
// a string compute its mask without walking the vocabulary.
//
// Where every character of a set X takes a grammar state to one same next state (the ordinary characters
// of a JSON string, free or of bounded length: the state counts them, it does not look at them), a token
// that starts with r characters of X reaches the state r such steps away, whichever characters they are. So
// the tokens made only of X are allowed by length alone (one precomputed mask per length), and only the
// tokens that leave X (a quote, an escape, a control character, an unfinished UTF-8 sequence: ~5% of a
// 128k vocabulary) are walked, from the state their run reaches. This is XGrammar's split of the vocabulary
// into context-independent tokens and the rest, made per character set and vocabulary instead of per
// grammar position, so every grammar and request shares it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "grammar/code_set.h"
#include "grammar/vocab_index.h"

namespace jf {

struct ClassRuns {
  CodeSet set;
  // Tokens made only of the set's characters: up_to[k] holds those of at most k characters.
  std::vector<TokenMask> up_to;
  // The other tokens (and those made only of the set but longer than up_to covers), by the number of the
  // set's characters they start with: rest[r] holds each one's bytes after its run.
  std::vector<PrefixTree> rest;
  uint32_t representative = 0;  // a character of the set (the step every character of it takes)

  ClassRuns(const VocabIndex& vocab, const CodeSet& set);
};

}  // namespace jf
