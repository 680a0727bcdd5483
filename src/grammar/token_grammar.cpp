#include "grammar/token_grammar.h"

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "tokenizer/utf8.h"
#include "tokenizer/tokenizer.h"

namespace jf {

namespace {
constexpr int32_t kUnknown = -2;  // a successor not computed yet
constexpr int32_t kPartial = -3;  // a lead byte some class can continue
// Masks kept per grammar: a JSON schema's grammar visits a few hundred states; the bound caps memory on a
// large vocabulary (151k tokens: 19 KB a mask).
constexpr size_t kMaskCacheEntries = 1024;
// States a grammar may intern (each with a 1 KB successor table): a recursive grammar nested this deep
// is refused rather than allowed to grow without bound.
constexpr size_t kMaxStates = 1 << 16;
// Subtrees smaller than this are walked rather than checked for a self-loop.
constexpr int32_t kLoopCheckNodes = 16;
// Character sets smaller than this are walked (a digit's state: few tokens start with one).
constexpr uint64_t kMinRunSet = 256;
}  // namespace

TokenGrammar::TokenGrammar(const Grammar& grammar, const Tokenizer& tok)
    : grammar_(grammar), matcher_(grammar_), tok_(tok), vocab_(VocabIndex::of(tok)) {
  start_.state = intern(matcher_.start());
}

GrammarState TokenGrammar::state(State s) const {
  if (s.dead()) return {};
  GrammarState g = states_[static_cast<size_t>(s.state)];
  g.partial = s.partial, g.partial_left = s.left, g.partial_size = s.size;
  return g;
}

int32_t TokenGrammar::intern(GrammarState&& s) {
  std::string key = s.key();
  const auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  if (states_.size() >= kMaxStates)
    throw Error("grammar: more than " + std::to_string(kMaxStates) + " states (the text nests too deeply for this grammar)");
  const int32_t id = static_cast<int32_t>(states_.size());
  complete_.push_back(matcher_.complete(s));
  // Bytes no class on top of a stack can start are dead now: a walk skips them without the matcher's step.
  std::array<uint64_t, 4> starts{};
  for (const GrammarStack& st : s.stacks)
    if (!st.empty()) {
      const std::array<uint64_t, 4>& c = class_first_bytes(grammar_.elements[st.back()].value);
      for (int w = 0; w < 4; w++) starts[w] |= c[w];
    }
  profile_of_.push_back(profile(s));
  states_.push_back(std::move(s));
  next_.emplace_back();
  // A lead byte lives exactly where some top class has a code point it can lead (class_first_bytes reads
  // the same ranges as the matcher's partial step).
  for (int b = 0; b < 256; b++)
    next_.back()[b] = !((starts[b >> 6] >> (b & 63)) & 1) ? -1 : b >= 0xC0 ? kPartial : kUnknown;
  ids_.emplace(std::move(key), id);
  return id;
}

// The first bytes of the UTF-8 encodings of a class's code points.
const std::array<uint64_t, 4>& TokenGrammar::class_first_bytes(uint32_t cls) {
  if (first_bytes_.size() <= cls) first_bytes_.resize(grammar_.classes.size());
  std::optional<std::array<uint64_t, 4>>& known = first_bytes_[cls];
  if (known) return *known;
  std::array<uint64_t, 4> bits{};
  const CharClass& c = grammar_.classes[cls];
  for (uint32_t b = 0; b < 256; b++) {
    // The code points a sequence led by b encodes (0xC0, 0xC1 and 0xF5.. lead only overlong or invalid ones).
    uint32_t lo = b, hi = b;
    if (b >= 0xC2 && b <= 0xDF) lo = (b & 0x1F) << 6, hi = lo | 0x3F;
    else if (b >= 0xE0 && b <= 0xEF) lo = std::max((b & 0x0Fu) << 12, 0x800u), hi = ((b & 0x0Fu) << 12) | 0xFFF;
    else if (b >= 0xF0 && b <= 0xF4) lo = std::max((b & 0x07u) << 18, 0x10000u), hi = std::min(((b & 0x07u) << 18) | 0x3FFFF, 0x10FFFFu);
    else if (b >= 0x80) continue;
    if (b < 0x80 ? c.matches(b) : c.matches_any(lo, hi)) bits[b >> 6] |= uint64_t{1} << (b & 63);
  }
  return *(known = bits);
}

int32_t TokenGrammar::profile(const GrammarState& s) {
  std::vector<uint32_t> classes;
  for (const GrammarStack& st : s.stacks)
    if (!st.empty()) classes.push_back(grammar_.elements[st.back()].value);
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  std::string key(reinterpret_cast<const char*>(classes.data()), classes.size() * sizeof(uint32_t));
  const auto [it, added] = profile_ids_.emplace(std::move(key), static_cast<int32_t>(profiles_.size()));
  if (added) profiles_.push_back(std::move(classes));
  return it->second;
}

// The state after whole code point cp: the matcher's step once per (state, signature), where the signature
// is which of the state's top classes take cp (past 47 classes, cp itself).
TokenGrammar::State TokenGrammar::step_code_point(int32_t s, uint32_t cp) {
  const std::vector<uint32_t>& classes = profiles_[static_cast<size_t>(profile_of_[static_cast<size_t>(s)])];
  uint64_t signature = 0;
  if (classes.size() > 47) {
    signature = uint64_t{1} << 47 | cp;
  } else {
    for (size_t i = 0; i < classes.size(); i++)
      if (class_set(classes[i]).contains(cp)) signature |= uint64_t{1} << i;
    if (signature == 0) return kDead;
  }
  const uint64_t key = static_cast<uint64_t>(s) << 48 | signature;
  const auto it = by_signature_.find(key);
  if (it != by_signature_.end()) return it->second < 0 ? kDead : State{it->second};
  matcher_steps_++;
  GrammarState after = states_[static_cast<size_t>(s)];
  std::string bytes;
  tok::utf8_append(bytes, cp);
  const int32_t to = matcher_.advance(after, bytes) ? intern(std::move(after)) : -1;
  by_signature_.emplace(key, to);
  return to < 0 ? kDead : State{to};
}

TokenGrammar::State TokenGrammar::step(State s, uint8_t byte) {
  if (s.left == 0) {  // at a code point boundary: the state's table
    const int32_t known = next_[static_cast<size_t>(s.state)][byte];
    if (known == kUnknown) {  // (an ASCII byte: lead bytes are known when the state is interned)
      const State to = step_code_point(s.state, byte);
      next_[static_cast<size_t>(s.state)][byte] = to.dead() ? -1 : to.state;  // (intern may have moved next_)
      return to;
    }
    if (known == kPartial) {
      const int n = (byte >> 5) == 6 ? 2 : (byte >> 4) == 14 ? 3 : 4;
      return State{s.state, byte & (0x7Fu >> n), static_cast<int8_t>(n - 1), static_cast<int8_t>(n)};
    }
    return known < 0 ? kDead : State{known};
  }
  if ((byte & 0xC0) != 0x80) return kDead;
  const uint32_t partial = (s.partial << 6) | (byte & 0x3Fu);
  const int8_t left = static_cast<int8_t>(s.left - 1);
  if (left == 0) {
    const uint32_t lowest = s.size == 2 ? 0x80 : s.size == 3 ? 0x800 : 0x10000;  // (shorter: overlong)
    return partial < lowest || partial > 0x10FFFF ? kDead : step_code_point(s.state, partial);
  }
  // Still inside: alive while a top class takes a code point with these leading bits (the matcher's rule).
  const State to{s.state, partial, left, s.size};
  const uint64_t key = (to.key() & 0xFFFFFFFF) | static_cast<uint64_t>(profile_of_[static_cast<size_t>(s.state)]) << 32;
  auto it = prefix_alive_.find(key);
  if (it == prefix_alive_.end()) {
    const int shift = 6 * left;
    const uint32_t lowest = s.size == 3 ? 0x800 : 0x10000;
    const uint32_t lo = std::max(partial << shift, lowest), hi = std::min((partial << shift) | ((1u << shift) - 1), 0x10FFFFu);
    bool alive = false;
    for (uint32_t c : profiles_[static_cast<size_t>(profile_of_[static_cast<size_t>(s.state)])])
      alive = alive || (lo <= hi && grammar_.classes[c].matches_any(lo, hi));
    it = prefix_alive_.emplace(key, alive).first;
  }
  return it->second ? to : kDead;
}

TokenGrammar::State TokenGrammar::advance(State s, std::string_view bytes) {
  for (char c : bytes) {
    if (s.dead()) break;
    s = step(s, static_cast<uint8_t>(c));
  }
  return s;
}

TokenGrammar::State TokenGrammar::advance(State s, int32_t token) {
  if (s.dead() || token < 0 || token >= vocab_->n_vocab) return kDead;
  if (vocab_->eog[token]) return complete(s) ? s : kDead;
  const std::string& b = vocab_->bytes[token];
  return b.empty() ? kDead : advance(s, b);
}

void TokenGrammar::compute(State s, TokenMask& out) {
  out.assign(static_cast<size_t>((vocab_->n_vocab + 63) / 64), 0);
  if (s.left > 0 || !compute_by_runs(s, out)) walk(vocab_->tree, s, out);
  if (complete(s))
    for (int32_t t : vocab_->eog_tokens) mask_set(out, t);
}

// A prefix tree, depth first, with the state after each node's bytes: a node the grammar refuses is not
// entered, so every token under it is skipped at once.
void TokenGrammar::walk(const PrefixTree& tree, State s, TokenMask& out) {
  const std::vector<PrefixTree::Node>& nodes = tree.nodes;
  walk_.clear();
  walk_.push_back(s);
  nodes_.clear();
  nodes_.push_back(0);
  while (!nodes_.empty()) {
    const size_t n = static_cast<size_t>(nodes_.back());
    const PrefixTree::Node& node = nodes[n];
    const State from = walk_.back();
    nodes_.pop_back();
    walk_.pop_back();
    // A subtree spelled only with bytes that lead the state back to itself (a string's ordinary characters):
    // every token in it is allowed, without walking it.
    const bool loops = node.first_child >= 0 && !node.below_high && from.left == 0 &&
                       node.subtree_end - static_cast<int32_t>(n) > kLoopCheckNodes && loops_on(from.state, node.below);
    const int32_t last = loops ? nodes[static_cast<size_t>(node.subtree_end - 1)].end_end : node.end_end;
    for (int32_t e = node.end_begin; e < last; e++) mask_set(out, tree.ends[static_cast<size_t>(e)]);
    if (loops) continue;
    for (int32_t c = node.first_child; c >= 0; c = nodes[static_cast<size_t>(c)].next_sibling) {
      const uint8_t byte = nodes[static_cast<size_t>(c)].byte;
      // (The common step inline: an ASCII byte at a code point boundary whose successor is known.)
      const int32_t known = from.left == 0 && byte < 0x80 ? next_[static_cast<size_t>(from.state)][byte] : kUnknown;
      const State to = known >= 0 ? State{known} : known == -1 ? kDead : step(from, byte);
      if (to.dead()) continue;
      nodes_.push_back(c);
      walk_.push_back(to);
    }
  }
}

const CodeSet& TokenGrammar::class_set(uint32_t cls) {
  if (class_sets_.size() <= cls) class_sets_.resize(grammar_.classes.size());
  if (!class_sets_[cls]) class_sets_[cls] = std::make_unique<CodeSet>(CodeSet::of(grammar_.classes[cls]));
  return *class_sets_[cls];
}

// 1 if every character of `set` takes state s to one same state, 2 if none is allowed there, 0 if some are:
// each stack's class holds the whole set or none of it.
int TokenGrammar::takes_set(int32_t s, const CodeSet& set) {
  bool takes = false;
  for (const GrammarStack& st : states_[static_cast<size_t>(s)].stacks) {
    if (st.empty()) continue;
    const CodeSet& c = class_set(grammar_.elements[st.back()].value);
    if (set.subset_of(c)) takes = true;
    else if (!set.disjoint(c)) return 0;
  }
  return takes ? 1 : 2;
}

// The runs of the largest class a stack of s expects next, if it is large enough to be worth it.
const ClassRuns* TokenGrammar::runs_at(int32_t s) {
  uint32_t best = 0;
  uint64_t best_size = 0;
  for (const GrammarStack& st : states_[static_cast<size_t>(s)].stacks) {
    if (st.empty()) continue;
    const uint32_t cls = grammar_.elements[st.back()].value;
    const uint64_t n = class_set(cls).size();
    if (n > best_size) best = cls, best_size = n;
  }
  if (best_size < kMinRunSet) return nullptr;
  auto it = runs_.find(best);
  if (it == runs_.end()) it = runs_.emplace(best, vocab_->runs_of(class_set(best))).first;
  return it->second.get();
}

// The mask of s from the runs of a character set every character of which takes s (and the states after it)
// one same step: tokens made of the set by length, the others walked from where their run leads. False
// (nothing written) where s is not such a state.
bool TokenGrammar::compute_by_runs(State s, TokenMask& out) {
  const ClassRuns* runs = runs_at(s.state);
  if (!runs) return false;
  const size_t longest = std::max(runs->up_to.size(), runs->rest.size()) - 1;  // the longest run in the vocabulary
  std::string step_bytes;
  tok::utf8_append(step_bytes, runs->representative);
  chain_.assign(1, s);
  size_t reach = 0, loop_from = SIZE_MAX;  // the longest run the chain allows; where it starts repeating
  for (;;) {
    const int takes = takes_set(chain_.back().state, runs->set);
    if (takes == 0) return false;
    reach = chain_.size() - 1;
    if (takes == 2 || reach == longest) break;
    const State next = advance(chain_.back(), step_bytes);
    const auto seen = std::find(chain_.begin(), chain_.end(), next);
    if (seen != chain_.end()) {
      loop_from = static_cast<size_t>(seen - chain_.begin()), reach = longest;
      break;
    }
    chain_.push_back(next);
  }
  by_runs_++;
  const size_t period = chain_.size() - std::min(loop_from, chain_.size());
  auto state_after = [&](size_t r) { return r < chain_.size() ? chain_[r] : chain_[loop_from + (r - loop_from) % period]; };
  if (!runs->up_to.empty()) {
    const TokenMask& pure = runs->up_to[std::min(reach, runs->up_to.size() - 1)];
    for (size_t w = 0; w < out.size(); w++) out[w] |= pure[w];
  }
  for (size_t r = 0; r <= reach && r < runs->rest.size(); r++)
    if (!runs->rest[r].nodes.empty()) walk(runs->rest[r], state_after(r), out);
  return true;
}

// Whether every ASCII byte of `bytes` leads state s (at a code point boundary) back to s.
bool TokenGrammar::loops_on(int32_t s, const uint64_t bytes[2]) {
  auto& known = self_loops_[s];  // [0..1]: the looping bytes; [2]: the bytes already tried
  for (int w = 0; w < 2; w++) {
    for (uint64_t todo = bytes[w] & ~known[2 + w]; todo; todo &= todo - 1) {
      const int b = w * 64 + __builtin_ctzll(todo);
      const State to = step(State{s}, static_cast<uint8_t>(b));
      if (to == State{s}) known[w] |= uint64_t{1} << (b & 63);
      known[2 + w] |= uint64_t{1} << (b & 63);
    }
    if (bytes[w] & ~known[w]) return false;
  }
  return true;
}

const TokenMask& TokenGrammar::allowed(State s) {
  JF_CHECK(!s.dead(), "a mask asked for a dead grammar state");
  const auto it = masks_.find(s.key());
  if (it != masks_.end()) {
    hits_++;
    return it->second;
  }
  misses_++;
  TokenMask m;
  compute(s, m);  // (before the cache holds an entry: compute may throw)
  if (masks_.size() >= kMaskCacheEntries) masks_.clear();
  return masks_[s.key()] = std::move(m);
}

std::vector<int32_t> TokenGrammar::forced_tokens(State s, int max_tokens) {
  if (s.dead() || s.left > 0 || max_tokens <= 0) return {};
  auto it = forced_.find(s.key());
  if (it == forced_.end()) {
    if (forced_.size() >= kMaskCacheEntries) forced_.clear();
    it = forced_.emplace(s.key(), compute_forced(s)).first;
  }
  const std::vector<int32_t>& all = it->second;
  return std::vector<int32_t>(all.begin(), all.begin() + std::min<ptrdiff_t>(max_tokens, static_cast<ptrdiff_t>(all.size())));
}

std::vector<int32_t> TokenGrammar::compute_forced(State s) {
  std::vector<int32_t> out;
  const std::string text = matcher_.forced_text(states_[static_cast<size_t>(s.state)]);
  if (text.empty()) return out;
  std::vector<int32_t> ids = tok_.encode(text, false, false);
  // A sentencepiece vocabulary prepends a space to the text it encodes: drop it when the text has none.
  std::string spelled;
  for (int32_t t : ids) spelled += t >= 0 && t < vocab_->n_vocab ? vocab_->bytes[t] : std::string();
  if (spelled.size() == text.size() + 1 && spelled[0] == ' ' && text[0] != ' ' && !ids.empty()) {
    if (vocab_->bytes[ids[0]] == " ") {
      ids.erase(ids.begin());
    } else {
      ids.clear();  // the space is fused into the first token: no canonical spelling without it
    }
  }
  for (int32_t t : ids) {
    s = advance(s, t);
    if (s.dead()) break;
    out.push_back(t);
  }
  return out;
}

std::shared_ptr<TokenGrammar> compile_grammar(std::string_view gbnf, const Tokenizer& tok) {
  return std::make_shared<TokenGrammar>(Grammar::parse(gbnf), tok);
}

std::shared_ptr<TokenGrammar> GrammarCache::get(std::string_view gbnf, const Tokenizer& tok) {
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->tok != &tok || it->gbnf != gbnf) continue;
    entries_.splice(entries_.begin(), entries_, it);  // most recently used first
    return entries_.front().grammar;
  }
  std::shared_ptr<TokenGrammar> g = compile_grammar(gbnf, tok);
  entries_.push_front({std::string(gbnf), &tok, g});
  if (entries_.size() > capacity_) entries_.pop_back();
  return g;
}

}  // namespace jf
