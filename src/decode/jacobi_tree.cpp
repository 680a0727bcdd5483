// Jacobi decoding with draft trees (JacobiOptions::tree): every forward carries the pending token and a tree of
// the draft layer's guesses grown from the last forward's last verified row (decode/tree_draft.h); the path
// the model agrees with is committed with its next token. Greedy: the model's greedy text; sampling: each
// token drawn from the model's distribution and followed into the tree where a child matches (sample then
// match), so the text is distributed exactly as the model's.
#include "decode/jacobi.h"

namespace jf {

DecodeLoop JacobiDecoder::decode_tree(DecodeContext& ctx) {
  Session& s = ctx.session();
  const bool greedy = ctx.config().sampling.greedy();
  Sampler sampler(ctx.config().sampling, s.vocab_size());
  DraftTree tree;
  SequenceInput in;
  in.need = greedy ? SequenceInput::Need::Greedy : SequenceInput::Need::Logits;
  Acceptance acc;
  std::vector<int32_t> forced;
  int source = -1;  // the last forward's last verified row, with the draft logits that lead the next tree
  const bool model_drafts = opt_.draft_head && s.forward_pass().config().draft_layer;
  constexpr double kKeep = 0.95;  // the moving averages' weight: about the last 20 trees
  while (!ctx.done()) {
    if (ctx.room() < 1) {
      ctx.stop_context_full();
      co_return;
    }
    // ---- the tree, as large as pays; the layer runs where its trees beat a forward of one row
    const RowPricer price = ctx.pricer();
    const int cap = max_draft(ctx, opt_.tree.nodes);
    if (source >= 0 && cap > 0) tree_.build(ctx, source, cap, opt_.adaptive ? &price : nullptr, tree);
    else tree.reset(ctx.pending());
    // Jump-forward: the text a grammar forces, as one more branch (a tree holding it already adds no rows).
    forced.clear();
    if (ctx.lead_with_forced(forced, std::min(kMaxForcedDraft, ctx.room() - tree.size())) > 0) tree.add_chain(0, forced);
    const bool layer = model_drafts && (!opt_.adaptive || layer_.choose(tree_tokens_ / price.relative(static_cast<int>(tree_rows_ + 0.5)) / (1.0 + price.draft_overhead()),
                                        1.0 / price.relative(1)));
    if (!layer && model_drafts) ctx.count("forwards_without_draft_layer");
    const int S = s.cache().size();
    in.reset_rows(&s.cache(), tree.size());
    tree.emit(in, S);
    in.draft_logits = layer;
    if (layer && greedy) tree_.ask(in, opt_.tree.nodes);  // (the next tree: a GPU grows it in this forward)
    ctx.tag_rows(1, tree.size() - 1, RowRole::Draft);
    const ForwardResult out = co_await ctx.forward(in);

    // ---- follow the model through the tree
    accept_and_keep(tree, out, greedy, sampler, s.cache(), S, acc, ctx.rule_walk());
    tree_.learn(ctx, tree, acc);
    if (tree.size() > 1) {
      tree_tokens_ = kKeep * tree_tokens_ + (1 - kKeep) * static_cast<double>(acc.path.size() + 1);
      tree_rows_ = kKeep * tree_rows_ + (1 - kKeep) * tree.size();
    }
    ctx.count("draft_tokens", tree.size() - 1);
    ctx.count("accepted_draft_tokens", static_cast<int64_t>(acc.path.size()));
    source = ctx.drafted() ? (acc.path.empty() ? 0 : acc.path.back()) : -1;
    if (source >= 0) ctx.count("draft_head_forwards");
    ctx.commit(acc.tokens);
  }
}

}  // namespace jf
