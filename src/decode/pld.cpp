#include "decode/pld.h"

#include <algorithm>

#include "decode/jacobi.h"

namespace jf {

uint64_t NgramIndex::hash(std::span<const int32_t> t) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int32_t x : t) h = (h ^ static_cast<uint32_t>(x)) * 0x100000001b3ull;
  return h;
}

int NgramIndex::propose(std::span<const int32_t> text, int max, std::vector<int32_t>& out) {
  out.clear();
  const size_t H = text.size();
  if (H < 2) return 0;
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
    return out.empty() ? 0 : n;
  }
  return 0;
}

DraftLengthPolicy::DraftLengthPolicy(int ngram_max, int draft_max) : positions_(std::clamp(draft_max, 1, 64)) {
  const size_t cells = static_cast<size_t>(std::max(ngram_max, 1)) * positions_;
  tried_.assign(cells, 0);
  hit_.assign(cells, 0);
}

double DraftLengthPolicy::p_accept(int n, int i) const {
  const size_t c = static_cast<size_t>(n - 1) * positions_ + std::min(i, positions_ - 1);
  const double p = (hit_[c] + 1.0) / (tried_[c] + 2.0);
  // Optimistic until a case has been tried a few times: an early failure (or an early slow forward) must
  // not stop a case from ever being drafted, and so from ever being measured again.
  return tried_[c] < kExplore ? std::max(p, 0.5) : p;
}

int DraftLengthPolicy::choose(int n, int available, const RowCostModel& cost) const {
  if (n < 1 || available < 1) return 0;
  // Forwarding k draft tokens commits 1 + sum_{i<k} P(0..i accepted) tokens on average, for relative(1+k).
  int best_k = 0;
  double best = 1.0, expect = 1.0, all_accepted = 1.0;
  for (int k = 1; k <= available; k++) {
    all_accepted *= p_accept(n, k - 1);
    expect += all_accepted;
    const double rate = expect / cost.relative(1 + k);
    if (rate > best) best = rate, best_k = k;
  }
  return best_k;
}

void DraftLengthPolicy::record(int n, int drafted, int accepted) {
  if (n < 1) return;
  for (int i = 0; i < drafted && i <= accepted; i++) {
    const size_t c = static_cast<size_t>(n - 1) * positions_ + std::min(i, positions_ - 1);
    tried_[c]++;
    if (i < accepted) hit_[c]++;
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
    const int matched = index.propose(ctx.history(), max_draft(ctx, opt_.draft_max), draft);
    if (opt_.adaptive) {
      const int k = policy_.choose(matched, static_cast<int>(draft.size()), s.row_cost());
      ctx.count("draft_tokens_cut", static_cast<int64_t>(draft.size()) - k);
      draft.resize(static_cast<size_t>(k));
    }
    const int S = s.cache().size();
    const float* logits = forward_chain(ctx, draft, tree, in);
    auto row = [&](int node) { return logits + static_cast<size_t>(node) * V; };
    if (greedy)
      accept_greedy(tree, row, V, acc);
    else
      accept_sampled(tree, row, sampler, acc);
    keep_path(s.cache(), S, acc);
    policy_.record(matched, static_cast<int>(draft.size()), static_cast<int>(acc.path.size()));
    ctx.count("draft_tokens", static_cast<int64_t>(draft.size()));
    ctx.count("accepted_draft_tokens", static_cast<int64_t>(acc.path.size()));
    if (!draft.empty()) ctx.count("lookups_hit");
    ctx.commit(acc.tokens);
  }
}

}  // namespace jf
