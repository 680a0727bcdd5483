#include "decode/pld.h"

#include <algorithm>

#include "base/error.h"
#include "decode/jacobi.h"

namespace jf {

uint64_t NgramIndex::hash(std::span<const int32_t> t) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int32_t x : t) h = (h ^ static_cast<uint32_t>(x)) * 0x100000001b3ull;
  return h;
}

size_t NgramIndex::find_slot(const Table& t, std::span<const int32_t> text, std::span<const int32_t> gram) {
  const size_t mask = t.slots.size() - 1, n = gram.size();
  size_t i = hash(gram) & mask;
  while (t.slots[i] != 0 && !std::ranges::equal(text.subspan(t.slots[i] - n, n), gram)) i = (i + 1) & mask;
  return i;
}

void NgramIndex::insert(Table& t, std::span<const int32_t> text, int n, size_t end) {
  if ((t.used + 1) * 2 > t.slots.size()) {  // grow: re-place every entry (all distinct, so each finds a free slot)
    std::vector<uint32_t> old = std::move(t.slots);
    t.slots.assign(std::max<size_t>(1024, old.size() * 2), 0);
    for (uint32_t e : old)
      if (e != 0) t.slots[find_slot(t, text, text.subspan(e - n, n))] = e;
  }
  uint32_t& slot = t.slots[find_slot(t, text, text.subspan(end - n, n))];
  if (slot == 0) t.used++;
  slot = static_cast<uint32_t>(end);  // new, or seen before: keep the most recent end
}

void NgramIndex::extend(std::span<const int32_t> text, size_t end) {
  end = std::min(end, text.size());
  JF_CHECK(end < (size_t(1) << 32), "n-gram index: text too long");
  for (size_t e = indexed_end_ + 1; e <= end; e++)
    for (int n = 1; n <= max_n_ && static_cast<size_t>(n) <= e; n++) insert(tables_[n - 1], text, n, e);
  indexed_end_ = std::max(indexed_end_, end);
}

int NgramIndex::longest_match(std::span<const int32_t> text, std::span<const int32_t> query, int min_n,
                              size_t* next) const {
  for (int n = std::min<int>(max_n_, static_cast<int>(query.size())); n >= std::max(min_n, 1); n--) {
    const Table& t = tables_[n - 1];
    if (t.slots.empty()) continue;
    const size_t end = t.slots[find_slot(t, text, query.subspan(query.size() - n, n))];  // text[end-n .. end)
    if (end == 0 || end >= text.size()) continue;  // absent, or nothing followed it
    *next = end;
    return n;
  }
  return 0;
}

void NgramIndex::clear() {
  for (Table& t : tables_) t = Table{};
  indexed_end_ = 0;
}

PldDecoder::PldDecoder(const PldOptions& o)
    : opt_(o), own_policy_(kSources * o.ngram_max, o.draft_max), policy_(&own_policy_), corpus_index_(o.ngram_max) {
  corpus_index_.extend(opt_.corpus, opt_.corpus.size());
  if (opt_.memory_tokens > 0 && opt_.shared_memory) {
    memory_ = opt_.shared_memory;
    policy_ = &memory_->policy(kSources * o.ngram_max, o.draft_max);  // what earlier requests learnt
  } else if (opt_.memory_tokens > 0) {
    memory_ = std::make_shared<PldMemory>(opt_.memory_tokens, opt_.ngram_max);
  }
}

DraftLengthPolicy& PldMemory::policy(int kinds, int draft_max) {
  const auto key = std::make_pair(kinds, draft_max);
  auto it = policies_.find(key);
  if (it == policies_.end()) it = policies_.emplace(key, DraftLengthPolicy(kinds, draft_max)).first;
  return it->second;
}

void PldMemory::remember(std::span<const int32_t> text) {
  const size_t cap = capacity_;
  if (cap == 0 || text.empty()) return;
  if (text.size() + 1 > cap) text = text.subspan(text.size() + 1 - cap);
  if (texts_.size() + text.size() + 1 > cap) {
    // Keep the newest texts that fit in half the budget (whole texts: cut at a separator), re-index them.
    const size_t need = texts_.size() + text.size() + 1;
    size_t from = std::min(texts_.size(), need > cap / 2 ? need - cap / 2 : 0);
    while (from < texts_.size() && texts_[from] != kSeparator) from++;
    texts_.erase(texts_.begin(), texts_.begin() + static_cast<std::ptrdiff_t>(from));
    index_.clear();
  }
  texts_.push_back(kSeparator);
  texts_.insert(texts_.end(), text.begin(), text.end());
  index_.extend(texts_, texts_.size());
}

DecodeLoop PldDecoder::decode(DecodeContext& ctx) {
  Session& s = ctx.session();
  const int V = s.vocab_size();
  Sampler sampler(ctx.config().sampling, V);
  const bool greedy = ctx.config().sampling.greedy();
  NgramIndex index(opt_.ngram_max);
  DraftTree tree;
  SequenceInput in;
  in.need = greedy ? SequenceInput::Need::Greedy : SequenceInput::Need::Logits;
  Acceptance acc;
  std::vector<int32_t> draft;
  while (!ctx.done()) {
    if (ctx.room() < 1) {
      ctx.stop_context_full();
      break;
    }
    // ---- propose: the longest match in this text, or a longer one in the memory or the corpus
    const std::span<const int32_t> text = ctx.history();
    const int cap = max_draft(ctx, opt_.draft_max);
    index.extend(text, text.size() - 1);  // not the suffix itself
    size_t next = 0;
    int n = index.longest_match(text, text, 1, &next);
    std::span<const int32_t> source = text;
    Source from = kText;
    // (A shared memory may index longer n-grams than this decoder drafts from: its matches are cut to ours.)
    if (const int nm = memory_ ? std::min(opt_.ngram_max, memory_->longest_match(text, n + 1, &next)) : 0; nm > n) {
      n = nm, from = kMemory, source = memory_->texts();
      ctx.count("memory_hits");
    }
    if (const int nc = corpus_index_.longest_match(opt_.corpus, text, n + 1, &next); nc > n) {
      n = nc, from = kCorpus, source = opt_.corpus;
      ctx.count("corpus_hits");
    }
    const int proposal = kind(from, n);
    if (n == 0) next = source.size();
    draft.clear();
    for (size_t i = next; i < source.size() && source[i] != PldMemory::kSeparator && static_cast<int>(draft.size()) < cap; i++)
      draft.push_back(source[i]);
    if (opt_.adaptive) {
      const int k = policy_->choose(proposal, static_cast<int>(draft.size()), ctx.pricer());
      ctx.count("draft_tokens_cut", static_cast<int64_t>(draft.size()) - k);
      draft.resize(static_cast<size_t>(k));
    }
    ctx.lead_with_forced(draft, max_draft(ctx, kMaxForcedDraft));  // jump-forward: what a grammar forces
    draft.resize(static_cast<size_t>(ctx.allowed_draft(draft)));     // what it refuses is not worth rows
    // ---- verify
    const int S = s.cache().size();
    prepare_chain(ctx, draft, tree, in);
    const ForwardResult out = co_await ctx.forward(in);
    accept_and_keep(tree, out, greedy, sampler, s.cache(), S, acc, ctx.rule_walk());
    policy_->record(proposal, static_cast<int>(draft.size()), static_cast<int>(acc.path.size()));
    ctx.count("draft_tokens", static_cast<int64_t>(draft.size()));
    ctx.count("accepted_draft_tokens", static_cast<int64_t>(acc.path.size()));
    if (!draft.empty()) ctx.count("lookups_hit");
    if (from == kCorpus) {  // the server reports these as predicted-output tokens
      ctx.count("corpus_draft_tokens", static_cast<int64_t>(draft.size()));
      ctx.count("corpus_accepted_tokens", static_cast<int64_t>(acc.path.size()));
    }
    ctx.commit(acc.tokens);
  }
  if (memory_) memory_->remember(ctx.history());
}

}  // namespace jf
