// A vocabulary as grammars see it: each token's bytes, as a prefix tree, built once per tokenizer and shared
// by every grammar compiled against it (sorting 150k strings costs more than compiling a schema), with the
// tables of its tokens' runs of a character set (class_runs.h) made as grammars ask for them.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace jf {

class Tokenizer;
struct ClassRuns;
struct CodeSet;

using TokenMask = std::vector<uint64_t>;  // bit t set: token t allowed
inline bool mask_has(const TokenMask& m, int32_t t) { return (m[static_cast<size_t>(t) >> 6] >> (t & 63)) & 1; }
inline void mask_set(TokenMask& m, int32_t t) { m[static_cast<size_t>(t) >> 6] |= uint64_t{1} << (t & 63); }

// Strings with token ids as a prefix tree: node 0 is the empty prefix; a node's children are its one-byte
// extensions, and the tokens spelled by a node are ends[end_begin .. end_end). A mask walks it, and a prefix
// the grammar refuses skips every token under it at once.
struct PrefixTree {
  struct Node {
    int32_t first_child = -1, next_sibling = -1;
    int32_t end_begin = 0, end_end = 0;
    int32_t subtree_end = 0;  // nodes are in preorder: the descendants are the nodes before this one
    uint64_t below[2] = {0, 0};  // the ASCII bytes of the edges below (a set)
    bool below_high = false;     // some edge below is a byte >= 0x80
    uint8_t byte = 0;
  };
  std::vector<Node> nodes;
  std::vector<int32_t> ends;
  // From (bytes, token) pairs, in any order.
  static PrefixTree build(std::vector<std::pair<std::string, int32_t>> entries);
};

struct VocabIndex {
  int n_vocab = 0;
  std::vector<std::string> bytes;  // each token's text (empty: never allowed: control tokens)
  std::vector<bool> eog;           // end-of-generation tokens
  std::vector<int32_t> eog_tokens;
  PrefixTree tree;                 // the tokens with bytes

  explicit VocabIndex(const Tokenizer& tok);
  // The index of this tokenizer's vocabulary, built on first use and kept while a grammar uses it (the last
  // one asked for is kept in any case).
  static std::shared_ptr<const VocabIndex> of(const Tokenizer& tok);
  // The tokens' runs of `set` (built on first use, kept with the index; thread-safe); null past a bound on
  // how many sets one vocabulary keeps.
  std::shared_ptr<const ClassRuns> runs_of(const CodeSet& set) const;

 private:
  mutable std::mutex runs_mu_;
  mutable std::map<std::string, std::shared_ptr<const ClassRuns>> runs_;
};

}  // namespace jf
