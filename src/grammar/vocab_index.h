// A vocabulary as grammars see it: each token's bytes, as a prefix tree, built once per tokenizer and shared by every grammar compiled against it (sorting 150k
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
  // The tokens as a prefix tree: node 0 is the empty prefix; a node's children are its one-byte extensions,
  // and the tokens spelled by a node are ends[end_begin .. end_end). A mask walks it, and a prefix the
  // grammar refuses skips every token under it at once.
  struct Node {
    int32_t first_child = -1, next_sibling = -1;
    int32_t end_begin = 0, end_end = 0;
    int32_t subtree_end = 0;  // nodes are in preorder: the descendants are the nodes before this one
    uint64_t below[2] = {0, 0};  // the ASCII bytes of the edges below (a set)
    bool below_high = false;     // some edge below is a byte >= 0x80
    uint8_t byte = 0;
  };
  std::vector<Node> trie;
  std::vector<int32_t> ends;

  explicit VocabIndex(const Tokenizer& tok);
  // The index of this tokenizer's vocabulary, built on first use and kept while a grammar uses it (the last
  // one asked for is kept in any case).
  static std::shared_ptr<const VocabIndex> of(const Tokenizer& tok);
};

}  // namespace jf
