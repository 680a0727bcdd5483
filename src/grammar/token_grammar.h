// A grammar compiled against a tokenizer: which tokens may come next (a bitmask over the vocabulary), and
// which tokens the grammar forces (jump-forward drafts).
//
// A token is allowed when its bytes keep the text a prefix of some sentence of the grammar; end-of-generation
// tokens when the text is a whole sentence; control tokens never. Grammar states at code point boundaries are
// interned as they are met, each with a table of its successor per byte (and caches for the bytes inside a
// multi-byte code point); the matcher's stack work is done once per state and signature (which of the
// classes on top of its stacks take the code point), so the grammar behaves as a lazily built automaton. A state's mask walks the vocabulary's prefix tree (vocab_index.h) through
// those tables: tokens sharing a prefix share its steps, a dead prefix skips every token under it, and a
// subtree whose bytes lead the state back to itself is taken whole. A state where every character of a large
// set takes one same step (inside a string) skips the walk: its tokens are taken by their runs of that set
// (class_runs.h). Masks (and forced tokens) are cached per state, and a structured text revisits few states
// (every character inside a JSON string leaves the same one), so most steps are a lookup.
#pragma once
#include <array>
#include <list>
#include <mutex>
#include <optional>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/class_runs.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/vocab_index.h"

namespace jf {

class Tokenizer;

// Where a text stands: an interned state at a code point boundary, and the bytes of a code point read since.
struct GrammarCursor {
  int32_t state = -1;  // -1: the text left the grammar
  uint32_t partial = 0;
  int8_t left = 0, size = 0;  // continuation bytes still to come; the code point's length
  bool dead() const { return state < 0; }
  bool operator==(const GrammarCursor&) const = default;
  uint64_t key() const {
    return (static_cast<uint64_t>(static_cast<uint32_t>(state)) << 32) | (uint64_t{partial} << 8) | (uint64_t(left) << 4) | uint64_t(size);
  }
};

class TokenGrammar {
 public:
  using State = GrammarCursor;
  static constexpr State kDead = {};  // the text left the grammar

  TokenGrammar(const Grammar& grammar, const Tokenizer& tok);
  TokenGrammar(const TokenGrammar&) = delete;
  TokenGrammar& operator=(const TokenGrammar&) = delete;

  const GrammarMatcher& matcher() const { return matcher_; }
  State start() const { return start_; }
  // The state after the token; kDead when its bytes leave the grammar. An end-of-generation token is
  // accepted where the grammar is complete and leaves the state as it was. Not thread-safe (the tables).
  State advance(State s, int32_t token);
  State advance(State s, std::string_view bytes);
  bool complete(State s) const { return !s.dead() && s.left == 0 && complete_[static_cast<size_t>(s.state)]; }
  // The matcher's state at `s` (for tests and the matcher's own functions).
  GrammarState state(State s) const;
  // Allowed tokens after `s` (not kDead); valid until the next call.
  const TokenMask& allowed(State s);
  // The tokens of the text the grammar forces after `s` (GrammarMatcher::forced_text), tokenized as the
  // tokenizer encodes that text on its own (its canonical tokenization; a sentencepiece dummy-prefix space
  // dropped), cut before the first token the grammar would not allow; at most `max_tokens`.
  std::vector<int32_t> forced_tokens(State s, int max_tokens);
  int n_vocab() const { return vocab_->n_vocab; }
  int64_t mask_hits() const { return hits_; }
  int64_t mask_misses() const { return misses_; }
  int64_t masks_by_runs() const { return by_runs_; }  // misses computed from a character set's runs
  int64_t matcher_steps() const { return matcher_steps_; }  // code points stepped by the matcher itself
  size_t states() const { return states_.size(); }

 private:
  Grammar grammar_;
  GrammarMatcher matcher_;
  const Tokenizer& tok_;
  std::shared_ptr<const VocabIndex> vocab_;
  std::vector<GrammarState> states_;           // interned, at code point boundaries
  std::vector<bool> complete_;
  std::vector<std::array<int32_t, 256>> next_;  // per byte: the next state, kDead, or (a lead byte) kPartial
  // A step depends only on which of the state's stack-top classes take the code point (its signature), and
  // whether a partial code point lives only on the classes: both are kept by those classes (the state's
  // profile), so the matcher runs once per state and signature, not per code point.
  std::vector<int32_t> profile_of_;                 // per state: its distinct top classes, as a profile id
  std::vector<std::vector<uint32_t>> profiles_;     // sorted class ids
  std::unordered_map<std::string, int32_t> profile_ids_;
  std::unordered_map<uint64_t, bool> prefix_alive_;  // (profile, partial cursor): some class can finish it
  std::unordered_map<uint64_t, int32_t> by_signature_;  // (state, signature): the next state, or -1
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_map<uint64_t, TokenMask> masks_;
  std::unordered_map<uint64_t, std::vector<int32_t>> forced_;  // forced_tokens per state, uncut
  std::vector<State> walk_;     // (compute's stack: states, and their nodes of the vocabulary's tree)
  std::vector<int32_t> nodes_;
  std::unordered_map<int32_t, std::array<uint64_t, 4>> self_loops_;  // per state: ASCII bytes leading back to it
  std::vector<std::unique_ptr<CodeSet>> class_sets_;                  // per class of the grammar, made on use
  std::vector<std::optional<std::array<uint64_t, 4>>> first_bytes_;   // per class: class_first_bytes
  std::unordered_map<uint32_t, std::shared_ptr<const ClassRuns>> runs_;  // per class, where it has runs
  std::vector<State> chain_;  // (compute_by_runs: the states after 0, 1, 2, ... characters of the set)
  State start_ = kDead;
  int64_t hits_ = 0, misses_ = 0, by_runs_ = 0, matcher_steps_ = 0;
  int32_t intern(GrammarState&& s);
  State step(State s, uint8_t byte);
  State step_code_point(int32_t s, uint32_t cp);
  int32_t profile(const GrammarState& s);
  bool loops_on(int32_t s, const uint64_t bytes[2]);
  void compute(State s, TokenMask& out);
  void walk(const PrefixTree& tree, State s, TokenMask& out);
  bool compute_by_runs(State s, TokenMask& out);
  const CodeSet& class_set(uint32_t cls);
  const std::array<uint64_t, 4>& class_first_bytes(uint32_t cls);
  const ClassRuns* runs_at(int32_t s);
  int takes_set(int32_t s, const CodeSet& set);
  std::vector<int32_t> compute_forced(State s);
};

// Parses GBNF and compiles it against `tok` (jf::Error for a bad grammar).
std::shared_ptr<TokenGrammar> compile_grammar(std::string_view gbnf, const Tokenizer& tok);

// The grammars compiled last, kept with their states and masks: a server's clients send the same schema
// request after request, and each then starts with the masks the earlier ones computed. The grammars it
// hands out are shared: use them from one thread at a time (a server's model thread).
class GrammarCache {
 public:
  explicit GrammarCache(size_t capacity = 16) : capacity_(capacity) {}
  std::shared_ptr<TokenGrammar> get(std::string_view gbnf, const Tokenizer& tok);  // thread-safe

 private:
  struct Entry {
    std::string gbnf;
    const Tokenizer* tok;
    std::shared_ptr<TokenGrammar> grammar;
  };
  size_t capacity_;
  std::mutex mu_;
  std::list<Entry> entries_;
};

}  // namespace jf
