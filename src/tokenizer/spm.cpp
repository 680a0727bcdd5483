// SentencePiece-style BPE: merge adjacent symbols by the score of the token they form (llama.cpp's SPM path).
#include <climits>
#include <queue>

#include "base/error.h"
#include "tokenizer/internal.h"

namespace jf {

namespace {

using tok::Symbol;

struct Bigram {
  int left, right;
  float score;
  size_t size;
};

// Highest score first; on equal scores the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

// `text` has spaces already escaped to U+2581 (and the dummy prefix added when the vocabulary wants one).
void Tokenizer::Impl::encode_spm(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  // Symbols link to each other by int index, one per character to begin with.
  if (text.size() >= static_cast<size_t>(INT_MAX))
    throw Error("a text of " + std::to_string(text.size()) + " bytes is too long to tokenize in one piece (limit 2 GiB)");
  std::vector<Symbol> syms;
  syms.reserve(text.size());
  for (size_t off = 0; off < text.size();) {
    size_t n = std::min(tok::utf8_len(static_cast<unsigned char>(text[off])), text.size() - off);
    int idx = static_cast<int>(syms.size());
    syms.push_back({idx - 1, off + n == text.size() ? -1 : idx + 1, off, n, -1});
    off += n;
  }

  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  auto try_add = [&](int l, int r) {
    if (l < 0 || r < 0) return;
    std::string_view pair = text.substr(syms[l].start, syms[l].n + syms[r].n);
    int32_t id = find(pair);
    if (id < 0) return;
    queue.push({l, r, spec.scores[id], pair.size()});
  };
  for (int i = 1; i < static_cast<int>(syms.size()); i++) try_add(i - 1, i);

  while (!queue.empty()) {
    Bigram bg = queue.top();
    queue.pop();
    Symbol& l = syms[bg.left];
    Symbol& r = syms[bg.right];
    if (l.n == 0 || r.n == 0 || l.n + r.n != bg.size) continue;  // stale: one side was merged meanwhile
    tok::absorb_next(syms, bg.left);
    try_add(l.prev, bg.left);
    try_add(bg.left, l.next);
  }

  for (int i = 0; i != -1; i = syms[i].next) {
    std::string_view piece = text.substr(syms[i].start, syms[i].n);
    int32_t id = find(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    // Not in the vocabulary: one byte token per byte (byte fallback), else <unk>.
    for (unsigned char c : piece) {
      int32_t b = byte_ids[c];
      if (b >= 0) {
        out.push_back(b);
      } else if (spec.unk >= 0) {
        out.push_back(spec.unk);
      }
    }
  }
}

}  // namespace jf
