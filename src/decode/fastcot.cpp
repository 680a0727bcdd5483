#include "decode/fastcot.h"

#include <algorithm>

#include "decode/draft_tree.h"
#include "decode/jacobi.h"
#include "kernels/ops.h"

namespace jf {

DecodeLoop FastCotDecoder::decode(DecodeContext& ctx) {
  Session& s = ctx.session();
  const int V = s.vocab_size(), n = std::max(1, opt_.window);
  Rng rng(opt_.seed);
  DraftTree tree;
  SequenceInput in;
  in.need = SequenceInput::Need::Greedy;
  Acceptance acc;
  std::vector<int32_t> draft, next, tail;

  // ---- rationale: running-window Jacobi for a fixed number of forwards (exact tokens are committed)
  for (int it = 0; it < opt_.iterations && !ctx.done(); it++) {
    if (ctx.room() < 1) {
      ctx.stop_context_full();
      co_return;
    }
    if (static_cast<int>(draft.size()) < n - 1)
      add_guesses(opt_.init, ctx.history(), V, rng, n - 1 - static_cast<int>(draft.size()), draft);
    draft.resize(static_cast<size_t>(max_draft(ctx, std::min<int>(static_cast<int>(draft.size()), n - 1))));
    const int S = s.cache().size();
    prepare_chain(ctx, draft, tree, in);
    const ForwardResult out = co_await ctx.forward(in);
    accept_greedy(tree, out, acc, ctx.rule_walk());
    const int k = static_cast<int>(acc.path.size());
    keep_path(s.cache(), S, acc);
    redraft_from_rows([&](int r) { return out.greedy(r); }, k, tree.size(), tree.size(), next);
    draft.swap(next);
    ctx.count("exact_tokens", ctx.commit(acc.tokens));
  }
  if (ctx.done()) co_return;

  // ---- the glimpse of the future: the window's approximate tokens, then the answer trigger, committed as
  // text; they have no cache entries yet and go through the model with the next forward
  tail.clear();
  for (int32_t t : draft) {  // an end token among them would end the text before the answer: cut there
    if (ctx.is_eos(t)) break;
    tail.push_back(t);
  }
  ctx.count("approximate_tokens", static_cast<int64_t>(tail.size()));
  tail.insert(tail.end(), opt_.trigger.begin(), opt_.trigger.end());
  if (!tail.empty()) ctx.commit_unforwarded(tail);

  // ---- the answer, autoregressively, from everything after the cached prefix
  while (!ctx.done()) {
    const auto& h = ctx.history();
    const int S = s.cache().size();
    const int uncached = static_cast<int>(h.size()) - S;  // the pending token and what follows the cache
    if (s.cache().capacity() - S < uncached || ctx.room() < 1) {
      ctx.stop_context_full();
      co_return;
    }
    // A driver's row cap may be below the uncached tail: feed it in pieces, logits only for the last.
    const int rows = std::min(uncached, ctx.room());
    in.set_causal(&s.cache(), std::span<const int32_t>(h).subspan(static_cast<size_t>(S), static_cast<size_t>(rows)),
                  rows == uncached ? SequenceInput::Logits::Last : SequenceInput::Logits::None);
    const ForwardResult out = co_await ctx.forward(in);
    if (rows < uncached) continue;
    const int32_t tok[1] = {out.greedy(0)};
    ctx.commit(tok);
  }
}

}  // namespace jf
