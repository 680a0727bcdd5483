// A vocabulary as grammars see it: each token's bytes, in byte order with the prefix each shares with the
// one before, built once per tokenizer and shared by every grammar compiled against it (sorting 150k
// strings costs more than compiling a schema).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace jf {

class Tokenizer;

struct VocabIndex {
  int n_vocab = 0;
  std::vector<std::string> bytes;  // each token's text (empty: never allowed: control tokens)
  std::vector<bool> eog;           // end-of-generation tokens
  std::vector<int32_t> sorted;     // tokens with text, in byte order
  std::vector<uint16_t> shared;    // bytes sorted[i] shares with sorted[i - 1]
  size_t longest = 0;              // bytes of the longest token

  explicit VocabIndex(const Tokenizer& tok);
  // The index of this tokenizer's vocabulary, built on first use and kept while a grammar uses it (the last
  // one asked for is kept in any case).
  static std::shared_ptr<const VocabIndex> of(const Tokenizer& tok);
};

}  // namespace jf
