// Byte-level BPE training: pre-tokenized words are counted once, then the most frequent adjacent pair is merged
// repeatedly, with pair counts updated incrementally (pair -> words index, max-heap with lazy invalidation).
#include "tokenizer/bpe_train.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "base/error.h"
#include "base/timer.h"
#include "tokenizer/internal.h"
#include "tokenizer/pretokenize.h"

namespace jf {

namespace {

using PairKey = uint64_t;
using WordCounts = std::unordered_map<std::string, int64_t, tok::StringHash, std::equal_to<>>;

inline PairKey pair_key(int32_t l, int32_t r) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
}
inline int32_t pair_left(PairKey k) { return static_cast<int32_t>(k >> 32); }
inline int32_t pair_right(PairKey k) { return static_cast<int32_t>(k & 0xFFFFFFFFu); }

const char* const kChatMLTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
    "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// GPT-2's bytes_to_unicode list: the printable bytes first, then the others in byte order.
std::vector<uint8_t> gpt2_byte_order() {
  std::vector<uint8_t> order;
  auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
  for (int b = 0; b < 256; b++) {
    if (printable(b)) order.push_back(static_cast<uint8_t>(b));
  }
  for (int b = 0; b < 256; b++) {
    if (!printable(b)) order.push_back(static_cast<uint8_t>(b));
  }
  return order;
}

struct Word {
  std::vector<int32_t> syms;
  int64_t count;
};

struct HeapEntry {
  int64_t count;
  PairKey pair;
};

class Trainer {
 public:
  explicit Trainer(const BpeTrainOptions& o) : o_(o), t0_(now_seconds()) {}
  VocabSpec run(const std::vector<std::string>& documents);

 private:
  WordCounts count_words(const std::vector<std::string>& documents);
  void build_words(WordCounts counts);
  void count_pairs();
  bool pop_best(HeapEntry& best);
  void merge(PairKey p, int32_t t);
  void merge_word(int32_t w, int32_t a, int32_t b, int32_t t);
  void add_pair(int32_t l, int32_t r, int64_t delta, int32_t w);
  bool lower_priority(const HeapEntry& x, const HeapEntry& y) const;
  int32_t token_for(const std::string& text);
  VocabSpec finish() const;
  void report(BpeTrainProgress::Stage stage);

  const BpeTrainOptions& o_;
  double t0_;
  BpeTrainProgress prog_;
  std::vector<std::string> str_;  // token strings in the GPT-2 alphabet
  tok::TokenMap ids_;
  int32_t byte_id_[256];
  std::vector<std::string> merges_;
  std::vector<Word> words_;
  std::unordered_map<PairKey, int64_t> counts_;              // current weighted count of every live pair
  std::unordered_map<PairKey, std::vector<int32_t>> where_;  // words that contain (or once contained) a pair
  std::vector<HeapEntry> heap_;  // for every live pair, at least one entry with count >= its current count
  std::vector<PairKey> grown_;   // pairs whose count rose during the current merge
  std::vector<uint32_t> stamp_;  // per word: the last merge that visited it
  uint32_t merge_no_ = 0;
  PairKey merging_ = ~PairKey{0};
};

void Trainer::report(BpeTrainProgress::Stage stage) {
  if (!o_.progress) return;
  prog_.stage = stage;
  prog_.seconds = now_seconds() - t0_;
  o_.progress(prog_);
}

WordCounts Trainer::count_words(const std::vector<std::string>& documents) {
  RegexSplitter splitter(pre_tokenizer_regexes(o_.pre));
  WordCounts counts;
  std::vector<std::pair<size_t, size_t>> spans;
  std::string fixed;
  prog_.total = documents.size();
  for (size_t d = 0; d < documents.size(); d++) {
    std::string_view text = documents[d];
    if (!tok::utf8_valid(text)) {
      fixed = tok::utf8_sanitize(text);  // as encode() does, so training sees what inference will
      text = fixed;
    }
    spans.clear();
    splitter.split(text, spans);
    for (auto [b, e] : spans) {
      std::string_view w = text.substr(b, e - b);
      auto it = counts.find(w);
      if (it == counts.end()) {
        counts.emplace(std::string(w), 1);
      } else {
        it->second++;
      }
    }
    prog_.bytes += text.size();
    prog_.done = d + 1;
    if (prog_.done % 256 == 0 || prog_.done == documents.size()) report(BpeTrainProgress::Stage::Count);
  }
  return counts;
}

void Trainer::build_words(WordCounts counts) {
  std::vector<std::pair<std::string, int64_t>> sorted(counts.begin(), counts.end());
  counts.clear();
  std::sort(sorted.begin(), sorted.end());  // a fixed word order, whatever the hash map did
  words_.reserve(sorted.size());
  for (auto& [text, n] : sorted) {
    Word w{{}, n};
    w.syms.reserve(text.size());
    for (char c : text) w.syms.push_back(byte_id_[static_cast<uint8_t>(c)]);
    words_.push_back(std::move(w));
  }
  stamp_.assign(words_.size(), 0);
  prog_.words = words_.size();
  prog_.tokens = prog_.bytes;
}

void Trainer::count_pairs() {
  for (size_t wi = 0; wi < words_.size(); wi++) {
    const Word& w = words_[wi];
    for (size_t i = 0; i + 1 < w.syms.size(); i++) {
      PairKey k = pair_key(w.syms[i], w.syms[i + 1]);
      counts_[k] += w.count;
      auto& list = where_[k];
      if (list.empty() || list.back() != static_cast<int32_t>(wi)) list.push_back(static_cast<int32_t>(wi));
    }
  }
  heap_.reserve(counts_.size() * 2);
  for (auto [k, n] : counts_) heap_.push_back({n, k});
  std::make_heap(heap_.begin(), heap_.end(), [this](const HeapEntry& x, const HeapEntry& y) { return lower_priority(x, y); });
}

// Higher count first; on equal counts the pair whose merge line "left right" is bytewise smaller. Every character
// of the GPT-2 alphabet is above ' ', so comparing (left, right) as a tuple orders the merge lines bytewise.
bool Trainer::lower_priority(const HeapEntry& x, const HeapEntry& y) const {
  if (x.count != y.count) return x.count < y.count;
  int c = str_[pair_left(x.pair)].compare(str_[pair_left(y.pair)]);
  if (c != 0) return c > 0;
  return str_[pair_right(x.pair)].compare(str_[pair_right(y.pair)]) > 0;
}

bool Trainer::pop_best(HeapEntry& best) {
  auto less = [this](const HeapEntry& x, const HeapEntry& y) { return lower_priority(x, y); };
  while (!heap_.empty()) {
    std::pop_heap(heap_.begin(), heap_.end(), less);
    HeapEntry e = heap_.back();
    heap_.pop_back();
    auto it = counts_.find(e.pair);
    const int64_t cur = it == counts_.end() ? 0 : it->second;
    if (cur == e.count) {
      best = e;
      return true;
    }
    if (cur > 0 && cur < e.count) {  // the count fell since: requeue it where it now belongs
      heap_.push_back({cur, e.pair});
      std::push_heap(heap_.begin(), heap_.end(), less);
    }
    // cur > e.count: a newer entry holds the higher count; cur == 0: the pair is gone.
  }
  return false;
}

void Trainer::add_pair(int32_t l, int32_t r, int64_t delta, int32_t w) {
  const PairKey k = pair_key(l, r);
  if (k == merging_) return;  // the pair being merged disappears as a whole
  if (delta > 0) {
    counts_[k] += delta;
    auto& list = where_[k];
    if (list.empty() || list.back() != w) list.push_back(w);
    grown_.push_back(k);
    return;
  }
  auto it = counts_.find(k);
  JF_CHECK(it != counts_.end() && it->second >= -delta, "BPE pair count went negative");
  it->second += delta;
  if (it->second == 0) {
    counts_.erase(it);
    where_.erase(k);
  }
}

// Replaces every (a, b) in the word, left to right, by t, moving the neighbouring pairs' counts along.
void Trainer::merge_word(int32_t w, int32_t a, int32_t b, int32_t t) {
  std::vector<int32_t>& s = words_[w].syms;
  const int64_t c = words_[w].count;
  const size_t n = s.size();
  size_t out = 0;
  for (size_t i = 0; i < n;) {
    if (i + 1 < n && s[i] == a && s[i + 1] == b) {
      if (out > 0) {
        add_pair(s[out - 1], a, -c, w);
        add_pair(s[out - 1], t, c, w);
      }
      if (i + 2 < n) {
        add_pair(b, s[i + 2], -c, w);
        add_pair(t, s[i + 2], c, w);
      }
      s[out++] = t;
      i += 2;
      prog_.tokens -= static_cast<uint64_t>(c);
    } else {
      s[out++] = s[i++];
    }
  }
  s.resize(out);
}

void Trainer::merge(PairKey p, int32_t t) {
  merge_no_++;
  merging_ = p;
  grown_.clear();
  auto it = where_.find(p);
  JF_CHECK(it != where_.end(), "merged BPE pair has no words");
  const std::vector<int32_t> ws = std::move(it->second);
  where_.erase(it);
  for (int32_t w : ws) {
    if (stamp_[w] == merge_no_) continue;  // listed twice
    stamp_[w] = merge_no_;
    merge_word(w, pair_left(p), pair_right(p), t);
  }
  counts_.erase(p);
  merging_ = ~PairKey{0};
  std::sort(grown_.begin(), grown_.end());
  grown_.erase(std::unique(grown_.begin(), grown_.end()), grown_.end());
  auto less = [this](const HeapEntry& x, const HeapEntry& y) { return lower_priority(x, y); };
  for (PairKey k : grown_) {
    auto c = counts_.find(k);
    if (c == counts_.end()) continue;
    heap_.push_back({c->second, k});
    std::push_heap(heap_.begin(), heap_.end(), less);
  }
}

// Two merges can spell the same token ("ab c", "a bc"): the second reuses the first one's id.
int32_t Trainer::token_for(const std::string& text) {
  auto it = ids_.find(text);
  if (it != ids_.end()) return it->second;
  const auto id = static_cast<int32_t>(str_.size());
  str_.push_back(text);
  ids_.emplace(text, id);
  return id;
}

VocabSpec Trainer::run(const std::vector<std::string>& documents) {
  for (uint8_t b : gpt2_byte_order()) byte_id_[b] = token_for(tok::byte_to_unicode(b));
  build_words(count_words(documents));
  count_pairs();

  const std::unordered_set<std::string> specials(o_.special_tokens.begin(), o_.special_tokens.end());
  const size_t target = static_cast<size_t>(o_.vocab_size) - o_.special_tokens.size();
  prog_.done = 0;
  prog_.total = target - str_.size();
  HeapEntry best;
  while (str_.size() < target && pop_best(best)) {
    if (best.count < o_.min_frequency) break;
    const std::string& l = str_[pair_left(best.pair)];
    const std::string& r = str_[pair_right(best.pair)];
    const std::string joined = l + r;
    if (specials.count(joined)) continue;  // would shadow a special token: never merged
    merges_.push_back(l + " " + r);
    merge(best.pair, token_for(joined));
    prog_.done = merges_.size();
    prog_.last_count = best.count;
    if (prog_.done % 64 == 0) report(BpeTrainProgress::Stage::Merge);
  }
  prog_.done = merges_.size();
  report(BpeTrainProgress::Stage::Done);
  return finish();
}

VocabSpec Trainer::finish() const {
  VocabSpec s;
  s.kind = VocabKind::Bpe;
  s.pre = o_.pre;
  s.tokens = str_;
  s.types.assign(str_.size(), TokenKind::Normal);
  s.merges = merges_;
  for (const auto& sp : o_.special_tokens) {
    s.tokens.push_back(sp);
    s.types.push_back(TokenKind::Control);
  }
  auto find = [&](const std::string& t) -> int32_t {
    auto it = std::find(s.tokens.begin() + static_cast<long>(str_.size()), s.tokens.end(), t);
    return t.empty() || it == s.tokens.end() ? -1 : static_cast<int32_t>(it - s.tokens.begin());
  };
  s.bos = find(o_.bos_token);
  s.eos = find(o_.eos_token);
  s.add_bos = o_.add_bos && s.bos >= 0;
  s.add_eos = false;
  s.add_space_prefix = false;
  if (find("<|im_start|>") >= 0 && find("<|im_end|>") >= 0) s.chat_template = kChatMLTemplate;
  detect_eog_tokens(s);  // <|im_end|>, <|endoftext|>: end of generation, as the loaders would mark them
  return s;
}

}  // namespace

void validate_bpe_train_options(const BpeTrainOptions& o) {
  pre_tokenizer_regexes(o.pre);  // unknown names fail here, listing the supported ones
  const size_t min_vocab = 256 + o.special_tokens.size();
  if (o.vocab_size < 0 || static_cast<size_t>(o.vocab_size) < min_vocab)
    throw Error("vocabulary size " + std::to_string(o.vocab_size) + " is too small (256 byte tokens + " +
                std::to_string(o.special_tokens.size()) + " special tokens need " + std::to_string(min_vocab) + ")");
  if (o.min_frequency < 1) throw Error("minimum pair frequency must be at least 1, got " + std::to_string(o.min_frequency));
  std::unordered_set<std::string> seen;
  for (int b = 0; b < 256; b++) seen.insert(tok::byte_to_unicode(static_cast<uint8_t>(b)));
  for (const auto& s : o.special_tokens) {
    if (s.empty()) throw Error("special tokens must not be empty");
    if (!seen.insert(s).second) throw Error("special token '" + s + "' is listed twice or spells a byte token");
  }
  for (const std::string* t : {&o.bos_token, &o.eos_token}) {
    if (!t->empty() && std::find(o.special_tokens.begin(), o.special_tokens.end(), *t) == o.special_tokens.end())
      throw Error("BOS/EOS token '" + *t + "' is not among the special tokens");
  }
}

VocabSpec train_bpe(const BpeTrainOptions& opts, const std::vector<std::string>& documents) {
  validate_bpe_train_options(opts);
  Trainer t(opts);
  return t.run(documents);
}

}  // namespace jf
