#include "grammar/vocab_index.h"

#include <algorithm>
#include <map>
#include <mutex>

#include "tokenizer/tokenizer.h"

namespace jf {

VocabIndex::VocabIndex(const Tokenizer& tok) : n_vocab(tok.n_vocab()) {
  bytes.resize(static_cast<size_t>(n_vocab));
  eog.resize(static_cast<size_t>(n_vocab));
  for (int32_t t = 0; t < n_vocab; t++) {
    eog[t] = tok.is_eog(t);
    if (!eog[t] && !tok.is_control(t)) bytes[t] = tok.token_bytes(t);
    if (!bytes[t].empty()) sorted.push_back(t);
    longest = std::max(longest, bytes[t].size());
  }
  std::sort(sorted.begin(), sorted.end(), [&](int32_t a, int32_t b) { return bytes[a] < bytes[b]; });
  shared.resize(sorted.size());
  for (size_t i = 1; i < sorted.size(); i++) {
    const std::string &a = bytes[sorted[i - 1]], &b = bytes[sorted[i]];
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) n++;
    shared[i] = static_cast<uint16_t>(std::min<size_t>(n, 0xFFFF));
  }
}

std::shared_ptr<const VocabIndex> VocabIndex::of(const Tokenizer& tok) {
  static std::mutex mu;
  static std::map<const Tokenizer*, std::weak_ptr<const VocabIndex>> built;
  std::lock_guard lock(mu);
  std::shared_ptr<const VocabIndex> index = built[&tok].lock();
  // (Another tokenizer may since live at the same address: the index must still spell its tokens.)
  const int32_t probe = tok.n_vocab() / 2;
  if (!index || index->n_vocab != tok.n_vocab() ||
      (!index->bytes[probe].empty() && index->bytes[probe] != tok.token_bytes(probe))) {
    index = std::make_shared<const VocabIndex>(tok);
    built[&tok] = index;
  }
  static std::shared_ptr<const VocabIndex> last;  // (a process usually has one tokenizer: never index it twice)
  last = index;
  return index;
}

}  // namespace jf
