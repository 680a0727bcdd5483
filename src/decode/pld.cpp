#include "decode/pld.h"

#include <algorithm>

#include "decode/jacobi.h"

namespace jf {

uint64_t NgramIndex::hash(std::span<const int32_t> t) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int32_t x : t) h = (h ^ static_cast<uint32_t>(x)) * 0x100000001b3ull;
  return h;
}

void NgramIndex::propose(std::span<const int32_t> text, int max, std::vector<int32_t>& out) {
  out.clear();
  const size_t H = text.size();
  if (H < 2) return;
  for (; indexed_ + 1 < H; indexed_++) {  // n-grams ending at index indexed_
    for (int n = 1; n <= max_n_ && static_cast<size_t>(n) <= indexed_ + 1; n++)
      last_[n - 1][hash(text.subspan(indexed_ + 1 - n, n))] = indexed_ + 1;
  }
  for (int n = std::min<int>(max_n_, static_cast<int>(H) - 1); n >= 1; n--) {
    auto suffix = text.subspan(H - n, n);
    auto it = last_[n - 1].find(hash(suffix));
    if (it == last_[n - 1].end()) continue;
    const size_t end = it->second;  // occurrence is text[end-n .. end)
    if (!std::equal(suffix.begin(), suffix.end(), text.begin() + (end - n))) continue;  // hash collision
    for (size_t i = end; i < H && static_cast<int>(out.size()) < max; i++) out.push_back(text[i]);
    return;
  }
}

void PldDecoder::decode(DecodeContext& ctx) {
  Session& s = ctx.session();
  const int V = s.vocab_size();
  Sampler sampler(ctx.config().sampling, V);
  const bool greedy = ctx.config().sampling.greedy();
  NgramIndex index(opt_.ngram_max);
  DraftTree tree;
  SequenceInput in;
  Acceptance acc;
  std::vector<int32_t> draft;
  while (!ctx.done()) {
    if (ctx.room() < 1) return ctx.stop_context_full();
    index.propose(ctx.history(), max_draft(ctx, opt_.draft_max), draft);
    const int S = s.cache().size();
    const float* logits = forward_chain(ctx, draft, tree, in);
    auto row = [&](int node) { return logits + static_cast<size_t>(node) * V; };
    if (greedy)
      accept_greedy(tree, row, V, acc);
    else
      accept_sampled(tree, row, sampler, acc);
    keep_path(s.cache(), S, acc);
    ctx.count("draft_tokens", static_cast<int64_t>(draft.size()));
    ctx.count("accepted_draft_tokens", static_cast<int64_t>(acc.path.size()));
    if (!draft.empty()) ctx.count("lookups_hit");
    ctx.commit(acc.tokens);
  }
}

}  // namespace jf
