// Prompt lookup decoding: the longest suffix of the text (1..ngram_max tokens) that occurred earlier — in
// this text, or in the decoder's memory of earlier generations — proposes the tokens that followed it there;
// they are verified like any draft (greedy, or sample then match — lossless either way).
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "decode/decoder.h"
#include "decode/draft_tree.h"
#include "decode/row_cost.h"

namespace jf {

class PldMemory;

struct PldOptions {
  int draft_max = 8;  // defaults as in decode/options.h
  int ngram_max = 4;
  bool adaptive = true;  // cut each proposal to the length with the best expected tokens per unit of time
  int memory_tokens = 1 << 16;  // earlier generations' text kept to draft from (0: only the current text)
  std::vector<int32_t> corpus;  // tokens of a reference text to draft from as well (never dropped)
  // When set (and memory_tokens > 0), the memory of earlier generations is this one, shared with other
  // decoders (a server's requests) instead of the decoder's own. Decoders sharing it must run on one thread.
  std::shared_ptr<PldMemory> shared_memory;
};

// Where each n-gram (n = 1..ngram_max) of a growing token sequence last ended.
class NgramIndex {
 public:
  explicit NgramIndex(int ngram_max) : max_n_(ngram_max), tables_(static_cast<size_t>(ngram_max)) {}
  // Indexes the n-grams of `text` that end at or before `end` (exclusive end); text must extend the text
  // indexed so far.
  void extend(std::span<const int32_t> text, size_t end);
  // The longest n in [min_n, ngram_max] whose last n tokens of `query` occur in the indexed part of `text`
  // followed by a token; sets *next to the index of that token (most recent occurrence). 0 if none.
  int longest_match(std::span<const int32_t> text, std::span<const int32_t> query, int min_n, size_t* next) const;
  void clear();

 private:
  // One open-addressing table per n-gram length. A slot holds the end (exclusive, >= 1) of the most recent
  // occurrence of one n-gram, 0 when empty; the n-gram itself is read back from the text, so a slot is 4
  // bytes (a 4M-token corpus indexes in ~130 MB, where hash-map nodes took ~1 GB).
  struct Table {
    std::vector<uint32_t> slots;  // size a power of two, at most half full
    size_t used = 0;
  };
  static uint64_t hash(std::span<const int32_t> t);
  // The slot holding `gram` (its occurrences read back from `text`), or the empty slot where it would go.
  static size_t find_slot(const Table& t, std::span<const int32_t> text, std::span<const int32_t> gram);
  static void insert(Table& t, std::span<const int32_t> text, int n, size_t end);
  int max_n_;
  size_t indexed_end_ = 0;  // n-grams ending at or before this index are in the tables
  std::vector<Table> tables_;  // [n-1]
};

// What pld remembers across generations: finished texts (prompt and output) to draft from, newest kept
// within a token budget, with their n-gram index; and the acceptance statistics of its proposals. A decoder
// owns one, or decoders share one (PldOptions::shared_memory: a server's requests).
class PldMemory {
 public:
  PldMemory(int capacity_tokens, int ngram_max) : capacity_(static_cast<size_t>(capacity_tokens)), index_(ngram_max) {}
  // Adds a finished text, dropping the oldest texts (whole) when it would exceed the budget.
  void remember(std::span<const int32_t> text);
  // As NgramIndex::longest_match over the remembered texts; *next indexes texts().
  int longest_match(std::span<const int32_t> query, int min_n, size_t* next) const {
    return index_.longest_match(texts_, query, min_n, next);
  }
  // The texts, each preceded by kSeparator.
  std::span<const int32_t> texts() const { return texts_; }
  static constexpr int32_t kSeparator = -1;  // never a token: no n-gram or continuation crosses it
  // The statistics shared by decoders with these proposal kinds and draft cap (created on first use).
  DraftLengthPolicy& policy(int kinds, int draft_max);

 private:
  size_t capacity_;
  std::vector<int32_t> texts_;
  NgramIndex index_;
  std::map<std::pair<int, int>, DraftLengthPolicy> policies_;
};

// Keeps its acceptance statistics and (up to memory_tokens) the texts of its earlier generations: what it
// saw of this model's text carries over to the next prompt, as a server's would. A proposal comes from the
// longest match among the current text, that memory and the reference corpus (ties: in that order).
class PldDecoder : public Decoder {
 public:
  explicit PldDecoder(const PldOptions& o);
  std::string name() const override { return "pld"; }

  DecodeLoop decode(DecodeContext& ctx) override;

 private:
  // Where a proposal came from; its policy kind is source * ngram_max + matched suffix length.
  enum Source { kText, kMemory, kCorpus, kSources };
  int kind(Source src, int n) const { return n == 0 ? 0 : src * opt_.ngram_max + n; }
  PldOptions opt_;
  std::shared_ptr<PldMemory> memory_;  // null when memory_tokens is 0
  DraftLengthPolicy own_policy_;
  DraftLengthPolicy* policy_;  // own_policy_, or the shared memory's
  NgramIndex corpus_index_;
};

}  // namespace jf
