#include "decode/jacobi.h"

#include <algorithm>

#include "kernels/ops.h"

namespace jf {

int max_draft(const DecodeContext& ctx, int wanted) {
  return std::max(0, std::min({wanted, ctx.room() - 1, ctx.remaining() - 1}));
}

void redraft_from_rows(const std::function<int32_t(int)>& next_of, int accepted, int rows, int keep, std::vector<int32_t>& next) {
  next.clear();
  for (int r = accepted + 1; r < rows && static_cast<int>(next.size()) < keep; r++) next.push_back(next_of(r));
}

int lead_with_shifted(int32_t first, std::vector<int32_t>& next) {
  if (!next.empty()) {
    next[0] = first;
    return 0;
  }
  next.push_back(first);
  return 1;
}

int PendingChain::fill(DecodeContext& ctx, int depth, int sent, std::vector<int32_t>& draft) {
  const int from = row;
  row = -1;
  if (depth < 0) depth = ctx.session().forward_pass().config().draft_chain;
  const int count = std::min({depth, sent - 1, static_cast<int>(draft.size()) - 1});
  if (from < 0 || count <= 0) return 0;
  const int made = ctx.draft_chain(from, draft[0], count, draft.data() + 1);
  ctx.count("draft_chain_tokens", made);
  return made;
}

int up_front_chain(const ForwardPass& model, int option_chain, int block) {
  if (model.draft_shift() == 0) return 0;
  return std::max(0, std::min(option_chain < 0 ? model.config().draft_chain : option_chain, block - 2));
}

int draft_layer_tokens(const ForwardPass& model, int option_chain, int block) {
  if (model.draft_shift() == 0) return block;
  return 1 + std::max(0, option_chain < 0 ? model.config().draft_chain : option_chain);
}

void append_unsent(std::span<const int32_t> draft, int sent, int keep, std::vector<int32_t>& next) {
  for (size_t i = static_cast<size_t>(sent) + 1; i < draft.size() && static_cast<int>(next.size()) < keep; i++)
    next.push_back(draft[i]);
}

DecodeLoop JacobiDecoder::decode(DecodeContext& ctx) {
  // (Sampling takes the tree's loop whatever the model: without a draft layer its forwards carry one row.)
  const bool layer = opt_.draft_head && ctx.session().forward_pass().config().draft_layer;
  const bool tree = opt_.tree.nodes > 0 && (layer || !ctx.config().sampling.greedy());
  return tree ? decode_tree(ctx) : decode_chain(ctx);
}

DecodeLoop JacobiDecoder::decode_chain(DecodeContext& ctx) {
  Session& s = ctx.session();
  const int V = s.vocab_size(), n = opt_.block;
  Rng rng(opt_.seed);
  const int shift = s.forward_pass().draft_shift();
  DraftTree tree;
  SequenceInput in;
  in.need = SequenceInput::Need::Greedy;
  Acceptance acc;
  std::vector<int32_t> draft, next;
  PendingChain chain;
  int budget = 0;  // per-block mode: tokens the current block still has to commit
  int64_t block_start = 0;  // per-block mode: history index of the block's first token (the pending one)
  int guessed_from = 0;  // draft[guessed_from ..] are guesses, the tokens before it predictions
  int drafted_upto = 0;  // draft[.. drafted_upto] came from the draft layer or head
  const ModelConfig& cfg = s.forward_pass().config();
  const bool model_drafts = opt_.draft_head && (cfg.draft_layer || cfg.draft_head);
  const int layer_tokens = draft_layer_tokens(s.forward_pass(), opt_.draft_chain, n);
  const int chain_depth = up_front_chain(s.forward_pass(), opt_.draft_chain, n);
  std::vector<int> kinds;  // of each draft token
  std::vector<int32_t> state;
  while (!ctx.done()) {
    if (ctx.room() < 1) {
      ctx.stop_context_full();
      co_return;
    }
    if (opt_.running) {
      budget = n;
      if (static_cast<int>(draft.size()) < n - 1) add_guesses(opt_.init, ctx.history(), V, rng, n - 1 - static_cast<int>(draft.size()), draft);
    } else if (budget == 0) {
      budget = n;
      draft.clear();
      add_guesses(opt_.init, ctx.history(), V, rng, n - 1, draft);
      guessed_from = 0;
      ctx.count("blocks");
      block_start = static_cast<int64_t>(ctx.history().size()) - 1;
    }
    draft.resize(static_cast<size_t>(max_draft(ctx, std::min<int>(static_cast<int>(draft.size()), budget - 1))));

    // ---- forward the pending token and the part of the draft that pays, as one causal chain
    kinds.assign(draft.size(), kGuess);
    std::fill_n(kinds.begin(), std::min<size_t>(static_cast<size_t>(guessed_from), kinds.size()), static_cast<int>(kPredicted));
    // The drafted tokens: the layer's shifted one, and the chain's after it when a chain is pending (it fills
    // only what is sent, so it is priced as what it would be).
    const int drafted = std::min<int>(chain.row >= 0 ? std::max(drafted_upto, layer_tokens) : drafted_upto, static_cast<int>(draft.size()));
    std::fill_n(kinds.begin(), drafted, static_cast<int>(kDrafted));
    const bool priced = opt_.adaptive && !opt_.observer;
    int sent = priced ? policy_.choose(kinds, ctx.pricer(), 1.0, 1, kGuess, kPredicted) : static_cast<int>(draft.size());
    const int chained = chain.fill(ctx, opt_.draft_chain, sent, draft);
    // Jump-forward: tokens a grammar forces lead the draft and are all sent (they cost rows, not forwards).
    if (const int forced = ctx.lead_with_forced(draft, max_draft(ctx, kMaxForcedDraft)); forced > 0) {
      sent = std::max(forced, std::min(sent, static_cast<int>(draft.size())));
      kinds.resize(draft.size(), kPredicted);
    }
    for (int i = std::max(drafted_upto, 1 + chained); i < drafted; i++) kinds[static_cast<size_t>(i)] = i < guessed_from ? kPredicted : kGuess;
    // Under a grammar, guesses it refuses are not worth rows.
    sent = ctx.allowed_draft(std::span<const int32_t>(draft).first(std::min(static_cast<size_t>(sent), draft.size())));
    ctx.count("draft_tokens_cut", static_cast<int64_t>(draft.size()) - sent);
    if (opt_.observer && !opt_.running) {  // (the state this forward sends)
      state.assign(ctx.history().begin() + block_start, ctx.history().end());
      state.insert(state.end(), draft.begin(), draft.end());
      if (static_cast<int>(state.size()) == n) opt_.observer->on_state(block_start, state);
    }
    const int S = s.cache().size();
    prepare_chain(ctx, std::span<const int32_t>(draft).first(static_cast<size_t>(sent)), tree, in);
    // (A lone pending row drafts only through a shifted draft: the token after the one it verifies.)
    const bool layer = model_drafts && (!priced || layer_.choose(policy_, ctx.pricer(), kDrafted, kPredicted, layer_tokens, max_draft(ctx, n - 1)));
    if (!layer && model_drafts) ctx.count("forwards_without_draft_layer");
    in.draft_logits = layer && (sent > 0 || shift > 0);
    in.chain_depth = in.draft_logits ? chain_depth : 0;  // (the next drafts' chain: a GPU runs it in this forward)
    const ForwardResult out = co_await ctx.forward(in);

    // ---- accept the matching prefix plus one token; rejected positions' predictions form the next draft
    accept_greedy(tree, out, acc, ctx.rule_walk());
    const int k = static_cast<int>(acc.path.size());
    keep_path(s.cache(), S, acc);
    policy_.record(kinds, sent, k);
    ctx.count("draft_tokens", sent);
    ctx.count("accepted_draft_tokens", k);
    budget = std::max(0, budget - (k + 1));
    const int L = tree.size();
    // block mode: stay inside the block; running: as many as the draft had after the committed tokens
    const int keep = opt_.running ? static_cast<int>(draft.size()) - k : std::max(0, budget - 1);
    // A draft head's rows give every next draft. A draft layer's are shifted (ForwardPass::draft_shift): the
    // last verified row's drafts the token after the bonus one and replaces the first; the rest come from the
    // rows' own next tokens.
    const bool drafts = ctx.drafted();
    const bool shifted = drafts && shift > 0;
    redraft_from_rows([&](int r) { return drafts && !shifted ? ctx.draft_greedy(r) : out.greedy(r); }, k, L, keep, next);
    int covered = sent;  // the draft positions this forward's rows predicted for
    if (shifted && keep > 0) {
      covered += lead_with_shifted(ctx.draft_greedy(k), next);
      chain.row = k;
    }
    if (drafts) ctx.count("draft_head_forwards");
    const int predicted = static_cast<int>(next.size());
    drafted_upto = !drafts ? 0 : shifted ? (keep > 0 && predicted > 0 ? 1 : 0) : predicted;
    append_unsent(draft, covered, keep, next);
    guessed_from = predicted + std::max(0, guessed_from - (sent + 1));
    draft.swap(next);
    const int committed = ctx.commit(acc.tokens);
    if (opt_.observer && !opt_.running && budget == 0 && committed == k + 1) {
      const auto& h = ctx.history();
      opt_.observer->on_fixed_point(block_start, std::span<const int32_t>(h).subspan(block_start, n));
    } else if (opt_.observer && !opt_.running && committed < k + 1 && ctx.is_eos(acc.tokens[committed])) {
      // The block ends in EOS (not committed to the history): report the text up to and including it.
      std::vector<int32_t> tail(ctx.history().begin() + block_start, ctx.history().end());
      tail.push_back(acc.tokens[committed]);
      opt_.observer->on_fixed_point(block_start, tail);
    }
  }
}

}  // namespace jf
