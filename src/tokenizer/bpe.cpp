// Byte-level BPE: pre-tokenize with regexes, map bytes to GPT-2's unicode alphabet, apply merges by rank.
#include <algorithm>

#include "tokenizer/internal.h"
#include "tokenizer/pretokenize.h"

namespace jf {

namespace {

using tok::Symbol;

struct Bigram {
  int left, right;
  int32_t rank;
  size_t size;
};

// Lowest rank first; on equal ranks the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

inline uint64_t pair_key(int32_t l, int32_t r) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
}

}  // namespace

void Tokenizer::Impl::encode_bpe(std::string_view raw, std::vector<int32_t>& out) const {
  const std::string text = tok::utf8_sanitize(raw);
  std::vector<std::pair<size_t, size_t>> words;
  splitter->split(text, words);

  std::vector<Symbol> syms;
  std::vector<Bigram> heap;
  std::string encoded;
  for (auto [wb, we] : words) {
    if (ignore_merges) {
      encoded.clear();
      for (size_t k = wb; k < we; k++) encoded += tok::byte_to_unicode(static_cast<uint8_t>(text[k]));
      int32_t id = find(encoded);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    syms.clear();
    for (size_t k = wb; k < we; k++) {
      int idx = static_cast<int>(syms.size());
      syms.push_back({idx - 1, k + 1 == we ? -1 : idx + 1, k, 1, bytelevel_ids[static_cast<uint8_t>(text[k])]});
    }
    heap.clear();
    auto try_add = [&](int l, int r) {
      if (l < 0 || r < 0 || syms[l].id < 0 || syms[r].id < 0) return;
      auto it = merges.find(pair_key(syms[l].id, syms[r].id));
      if (it == merges.end()) return;
      heap.push_back({l, r, it->second.rank, syms[l].n + syms[r].n});
      std::push_heap(heap.begin(), heap.end(), BigramLess{});
    };
    for (int i = 1; i < static_cast<int>(syms.size()); i++) try_add(i - 1, i);

    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), BigramLess{});
      Bigram bg = heap.back();
      heap.pop_back();
      Symbol& l = syms[bg.left];
      Symbol& r = syms[bg.right];
      if (l.n == 0 || r.n == 0 || l.n + r.n != bg.size || l.next != bg.right) continue;  // stale
      l.id = merges.at(pair_key(l.id, r.id)).merged;
      tok::absorb_next(syms, bg.left);
      try_add(l.prev, bg.left);
      try_add(bg.left, l.next);
    }

    for (const Symbol& s : syms) {
      if (s.n == 0) continue;
      if (s.id >= 0) {
        out.push_back(s.id);
        continue;
      }
      // Text that is not a token: llama.cpp looks up each byte of its encoded spelling on its own, which
      // only finds the printable ASCII characters that stand for themselves.
      for (size_t k = s.start; k < s.start + s.n; k++) {
        auto c = static_cast<uint8_t>(text[k]);
        if (c >= 0x21 && c <= 0x7E && bytelevel_ids[c] >= 0) out.push_back(bytelevel_ids[c]);
      }
    }
  }
}

}  // namespace jf
