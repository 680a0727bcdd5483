#include "decode/multiblock.h"

#include <algorithm>
#include <cmath>

#include "decode/jacobi.h"
#include "kernels/ops.h"

namespace jf {

namespace {

// Pseudo-active blocks placed after the real-active chain: rows, positions, visibility, logit rows.
void emit_pseudo(const std::vector<PseudoBlock>& blocks, int n, const std::vector<int>& ra_chain, int first_row,
                 int first_pos, SequenceInput& in, std::vector<int>& draft_rows) {
  draft_rows.clear();
  int row = first_row;
  for (const PseudoBlock& b : blocks) {
    const std::vector<int32_t> t = b.tokens();
    for (int j = 0; j < n; j++) {
      const int r = row + j;
      in.tokens[r] = t[j];
      in.positions[r] = first_pos + (row - first_row) + j;
      in.mask.set(r, 0);
      for (int node : ra_chain) in.mask.set(r, node);
      for (int e = first_row; e <= r; e++) in.mask.set(r, e);  // earlier blocks and itself, causally
      if (j >= static_cast<int>(b.acc.size())) {
        in.logit_rows.push_back(r);
        draft_rows.push_back(r);
      }
    }
    row += n;
  }
}

}  // namespace

bool advance_pseudo(PseudoBlock& b, const std::vector<int32_t>& g, int32_t before, const std::vector<int32_t>& shifted) {
  return advance_pseudo(b, g, before, [&](int j) { return j < static_cast<int>(shifted.size()) ? shifted[static_cast<size_t>(j)] : -1; });
}

bool advance_pseudo(PseudoBlock& b, const std::vector<int32_t>& g, int32_t before,
                    const std::function<int32_t(int)>& shifted_of) {
  const int L = static_cast<int>(b.draft.size());
  if (L == 0) return false;  // already converged
  if (b.acc.empty() && !b.first_predicted && (before < 0 || before != b.draft[0])) {
    // A guessed first token is not pseudo-verified: it takes the prediction of the row before it, and
    // the rest of the block shifts under Jacobi as usual; nothing is pseudo-accepted this step.
    std::vector<int32_t> next = {before >= 0 ? before : b.draft[0]};
    next.insert(next.end(), g.begin(), g.end() - 1);
    b.draft.swap(next);
    b.first_predicted = before >= 0;
    return false;
  }
  int a = 1;  // the first draft token is given: predicted by the row before the block
  while (a < L && b.draft[a] == g[a - 1]) a++;
  b.acc.insert(b.acc.end(), b.draft.begin(), b.draft.begin() + a);
  if (a == L) {
    b.draft.clear();
    b.after = g[L - 1];
    return false;
  }
  std::vector<int32_t> next = {g[a - 1]};
  next.insert(next.end(), g.begin() + a, g.end() - 1);
  const int32_t lead_token = next.size() > 1 ? shifted_of(a - 1) : -1;
  const bool lead = lead_token >= 0;
  if (lead) next[1] = lead_token;
  b.draft.swap(next);
  return lead;
}

DecodeLoop MultiblockDecoder::decode(DecodeContext& ctx) {
  Session& s = ctx.session();
  const int shift = s.forward_pass().draft_shift();
  const int V = s.vocab_size(), n = opt_.block, K = opt_.max_blocks;
  // ceil(r*n) is n for small n at r = 0.85, and a block with n accepted has no budget left to spawn in:
  // cap at n - 1 so every block size >= 2 can spawn.
  const int spawn_at = std::max(1, std::min(static_cast<int>(std::ceil(opt_.spawn_ratio * n - 1e-6f)), n - 1));
  Rng rng(opt_.seed);
  DraftTree tree;
  SequenceInput in;
  in.need = SequenceInput::Need::Greedy;
  Acceptance acc;
  std::vector<int32_t> draft, next, cand, g;
  PendingChain chain;
  DraftTree layer_tree;  // the draft layer's tree (MultiblockOptions::tree), merged into `tree`
  std::vector<int> layer_node;  // [tree node]: its node in layer_tree, or -1
  Acceptance layer_acc;
  const bool trees = opt_.tree.nodes > 0 && s.forward_pass().config().draft_layer;
  int tree_source = -1;  // the last forward's last verified row, when it drafted: the layer's tree grows from it
  std::vector<std::vector<int>> chains;  // tree chains: [0] the real-active draft, then recycled candidates
  std::vector<int32_t> forced;
  std::vector<int> pseudo_rows;
  std::vector<PseudoBlock> pseudo;
  std::deque<std::vector<int32_t>> recycle;
  int budget = 0;  // tokens the real-active block still has to commit
  bool pushed = false;  // whether the previous step added to the recycling pool (its newest entry is the draft)
  std::vector<int> kinds, next_kinds, chain_was;  // of each draft token; kinds[1 ..] before a chain's
  bool just_promoted = false;
  int64_t pseudo_rows_spent = 0;  // pseudo-active rows sent since the last promotion
  const ModelConfig& cfg = s.forward_pass().config();
  const bool model_drafts = opt_.draft_head && (cfg.draft_layer || cfg.draft_head);
  const int layer_tokens = draft_layer_tokens(s.forward_pass(), opt_.draft_chain, n);
  const int chain_depth = up_front_chain(s.forward_pass(), opt_.draft_chain, n);

  while (!ctx.done()) {
    if (ctx.room() < 1) {
      ctx.stop_context_full();
      co_return;
    }
    if (budget == 0) {  // the real-active block is complete: promote the next one, or start fresh
      draft.clear();
      if (!pseudo.empty()) {
        const std::vector<int32_t> t = pseudo.front().tokens();
        draft.assign(t.begin() + 1, t.end());  // its first token is now known: the pending token
        pseudo.erase(pseudo.begin());
        kinds.assign(draft.size(), kPromoted);
        just_promoted = true;
        ctx.count("blocks_promoted");
      } else {
        add_guesses(opt_.init, ctx.history(), V, rng, n - 1, draft);
        kinds.assign(draft.size(), kFresh);
        ctx.count("blocks_started");
      }
      budget = n;
    }
    const int d = max_draft(ctx, budget - 1);
    if (static_cast<int>(draft.size()) > d) draft.resize(static_cast<size_t>(d));
    if (static_cast<int>(draft.size()) < d) add_guesses(opt_.init, ctx.history(), V, rng, d - static_cast<int>(draft.size()), draft);
    kinds.resize(draft.size(), kFresh);
    // A pending chain fills the draft after the shifted token with the layer's: priced as what it would be.
    const int chain_upto = chain.row >= 0 ? std::min(layer_tokens, static_cast<int>(draft.size())) : 0;
    chain_was.assign(kinds.begin() + std::min<int>(1, chain_upto), kinds.begin() + chain_upto);
    std::fill(kinds.begin() + std::min<int>(1, chain_upto), kinds.begin() + chain_upto, static_cast<int>(kDrafted));

    // ---- price the forward: the whole draft with the pseudo-active blocks after it, or the draft's best prefix
    const RowPricer price = ctx.pricer();
    const int pseudo_n = static_cast<int>(pseudo.size()) * n;
    bool with_pseudo = !pseudo.empty() && d == budget - 1 && 1 + d + pseudo_n <= ctx.room();
    int sent = d;
    // Tokens this forward is expected to commit (and what a fresh block's rows are worth to the next one).
    double expect = 1.0 + policy_.expected(kinds, d, kFresh, kPredicted);
    if (opt_.adaptive) {
      const int cut = policy_.choose(kinds, price, 1.0, 1, kFresh, kPredicted);
      const double e_cut = 1.0 + policy_.expected(kinds, cut, kFresh, kPredicted);
      const double e_full = expect + pseudo_.per_row() * pseudo_n;
      const bool pseudo_pays = price.rate(e_full, 1 + d + pseudo_n) > price.rate(e_cut, 1 + cut);
      const bool could_pay = price.rate(expect + pseudo_.prior_per_row() * pseudo_n, 1 + d + pseudo_n) > price.rate(e_cut, 1 + cut);
      if (with_pseudo && (pseudo_pays || (pseudo_.retry() && could_pay))) {
        expect = e_full;
      } else {
        with_pseudo = false, sent = cut, expect = e_cut;
      }
    }
    const int chained = chain.fill(ctx, opt_.draft_chain, sent, draft);
    // Under a grammar, what it refuses is not worth rows (nor are the pseudo-active blocks placed after it).
    if (const int ok = ctx.allowed_draft(std::span<const int32_t>(draft).first(static_cast<size_t>(sent))); ok < sent)
      sent = ok, with_pseudo = false;
    const int extra_rows = with_pseudo ? pseudo_n : 0;
    ctx.count("draft_tokens_cut", d - sent);
    for (int i = 1 + chained; i < chain_upto; i++) kinds[static_cast<size_t>(i)] = chain_was[static_cast<size_t>(i - 1)];

    // ---- real-active draft plus recycled candidates that continue the pending token, as one tree
    const int S = s.cache().size();
    tree.reset(ctx.pending());
    const std::span<const int32_t> sent_draft = std::span<const int32_t>(draft).first(static_cast<size_t>(sent));
    chains.assign(1, tree.add_chain(0, sent_draft));
    int recycled_rows = 0;
    // (Candidates are as long as the whole draft, whatever part of it is sent: they are priced on their own.)
    for (int e = static_cast<int>(recycle.size()) - (pushed ? 2 : 1); e >= 0 && d > 0; e--) {
      const std::vector<int32_t>& entry = recycle[e];
      auto it = std::find(entry.begin(), entry.end(), ctx.pending());
      if (it == entry.end()) continue;
      cand.assign(it + 1, it + 1 + std::min<ptrdiff_t>(d, entry.end() - (it + 1)));
      for (size_t i = cand.size(); i < static_cast<size_t>(d); i++) cand.push_back(draft[i]);
      if (cand == draft || tree.size() + d + extra_rows > ctx.room()) continue;
      int shared = 0;  // tokens already in the tree
      for (int node = 0; shared < d && (node = tree.child(node, cand[shared])) >= 0;) shared++;
      const int rows = d - shared;
      if (opt_.adaptive && !price.pays(expect, tree.size() + extra_rows, recycled_.per_row() * rows, rows) &&
          !(recycled_.retry() && price.pays(expect, tree.size() + extra_rows, recycled_.prior_per_row() * rows, rows)))
        continue;
      expect += recycled_.per_row() * rows;
      recycled_rows += rows;
      chains.push_back(tree.add_chain(0, cand));
      ctx.count("recycled_candidates");
    }

    // Jump-forward: the text a grammar forces, as one more candidate (within the block, as candidates are).
    forced.clear();
    // (A chain the tree already holds adds no rows: add_chain reuses its nodes.)
    if (ctx.lead_with_forced(forced, std::min({kMaxForcedDraft, d, ctx.room() - tree.size() - extra_rows})) > 0)
      chains.push_back(tree.add_chain(0, forced));

    // ---- the draft layer's tree: branches beside the real-active draft (its first one mostly the same tokens)
    layer_tree.reset(ctx.pending());
    const int tree_cap = std::min(opt_.tree.nodes, ctx.room() - tree.size() - extra_rows);
    if (trees && tree_source >= 0 && tree_cap > 0) tree_.build(ctx, tree_source, tree_cap, opt_.adaptive ? &price : nullptr, layer_tree);
    layer_node.assign(static_cast<size_t>(tree.size()), -1);
    std::vector<int> merged(static_cast<size_t>(layer_tree.size()), 0);  // [layer_tree node]: its node in `tree`
    for (int v = 1; v < layer_tree.size(); v++) {
      const int before = tree.size();
      merged[static_cast<size_t>(v)] = tree.add(merged[static_cast<size_t>(layer_tree.parent(v))], layer_tree.token(v));
      if (tree.size() > before) layer_node.push_back(v);
      else layer_node[static_cast<size_t>(merged[static_cast<size_t>(v)])] = v;
    }

    // ---- pseudo-active blocks follow the real-active block's full draft
    const int M = tree.size() + extra_rows;
    in.reset_rows(&s.cache(), M);
    tree.emit(in, S);
    if (with_pseudo) emit_pseudo(pseudo, n, chains[0], tree.size(), S + budget, in, pseudo_rows);
    ctx.tag_rows(1, static_cast<int>(chains[0].size()), RowRole::Draft, 0);  // the first chain is nodes 1..sent
    ctx.tag_rows(1 + static_cast<int>(chains[0].size()), tree.size() - 1 - static_cast<int>(chains[0].size()), RowRole::Candidate);
    if (with_pseudo)
      for (size_t b = 0; b < pseudo.size(); b++)
        ctx.tag_rows(tree.size() + static_cast<int>(b) * n, n, RowRole::Block, static_cast<int>(b) + 1);
    // (A lone pending row drafts only through a shifted draft: the token after the one it verifies.)
    const bool layer = model_drafts && (!opt_.adaptive || layer_.choose(policy_, price, kDrafted, kPredicted, layer_tokens, d));
    if (!layer && model_drafts) ctx.count("forwards_without_draft_layer");
    in.draft_logits = layer && (M > 1 || shift > 0);
    in.chain_depth = in.draft_logits ? chain_depth : 0;  // (the next drafts' chain: a GPU runs it in this forward)
    if (trees && in.draft_logits) tree_.ask(in, opt_.tree.nodes);  // (and the next tree)
    const ForwardResult out = co_await ctx.forward(in);  // (tree nodes' rows first)
    // Next drafts come from the draft head when the model has one; verification always from the model's own
    // rows. A draft layer's drafts are shifted (ForwardPass::draft_shift): the last verified row's replaces the
    // real-active block's first next draft, and every other draft comes from the rows' own next tokens.
    const bool drafts = ctx.drafted();
    const bool shifted = drafts && shift > 0;
    auto draft_of = [&](int logit_row) { return drafts ? ctx.draft_greedy(logit_row) : out.greedy(logit_row); };
    auto next_of = [&](int logit_row) { return shifted ? out.greedy(logit_row) : draft_of(logit_row); };
    if (drafts) ctx.count("draft_head_forwards");

    // ---- verify the real-active block
    accept_greedy(tree, out, acc, ctx.rule_walk());
    const int k = static_cast<int>(acc.path.size());
    keep_path(s.cache(), S, acc);
    ctx.count("accepted_draft_tokens", k);
    if (layer_tree.size() > 1) {  // what the layer's tree learns: the accepted path as far as it ran in it
      layer_acc.path.clear();
      for (int node : acc.path) {
        if (layer_node[static_cast<size_t>(node)] < 0) break;
        layer_acc.path.push_back(layer_node[static_cast<size_t>(node)]);
      }
      tree_.learn(ctx, layer_tree, layer_acc);
    }
    size_t win = chains.size();  // the chain the accepted path runs along
    for (size_t c = 0; c < chains.size(); c++)
      if (static_cast<int>(chains[c].size()) >= k && std::equal(acc.path.begin(), acc.path.end(), chains[c].begin())) {
        win = c;
        break;
      }
    if (win == chains.size()) {  // along a branch of the layer's tree: the path is the chain
      chains.push_back(acc.path);
      ctx.count("tree_wins");
    } else if (win > 0) {
      ctx.count("recycle_wins");
    }
    // ---- what this forward's rows were worth
    int main_k = 0;  // what the draft alone would have committed
    while (main_k < sent && sent_draft[main_k] == acc.tokens[main_k]) main_k++;
    policy_.record(kinds, sent, main_k);
    if (recycled_rows > 0) recycled_.record(recycled_rows, k - main_k);
    if (with_pseudo) pseudo_rows_spent += pseudo_n;
    if (just_promoted) {  // the promoted block's first verification: what its pseudo-active steps saved
      pseudo_.record(pseudo_rows_spent, k - policy_.expected(kFresh, sent));
      pseudo_rows_spent = 0;
      just_promoted = false;
    }
    // The prediction for the position after the real-active block (its last draft row, or the root's), when
    // the whole draft was sent.
    const int32_t ra_tail_pred = sent == budget - 1 ? next_of(sent > 0 ? chains[0].back() : 0) : -1;
    const int new_budget = std::max(0, budget - (k + 1));
    // Jacobi update of the rest of the block: draft token i stood where token i + 1 of the block now goes
    // (the bonus token took draft token k's place), so its row predicts the token after that; the unsent
    // rest of the draft follows. A shifted draft comes from the last verified row (the root when nothing was
    // accepted).
    next.clear();
    for (size_t i = k; i < chains[win].size() && static_cast<int>(next.size()) < new_budget - 1; i++)
      next.push_back(next_of(chains[win][i]));
    int reached = static_cast<int>(chains[win].size());  // the draft positions the rows predicted for
    tree_source = shifted ? (k > 0 ? chains[win][k - 1] : 0) : -1;  // (a tree crosses into the next block)
    if (shifted && new_budget > 1) {
      const int last = k > 0 ? chains[win][k - 1] : 0;  // the last verified row
      reached += lead_with_shifted(draft_of(last), next);
      chain.row = last;
    }
    // The draft layer's shifted token, or every row's draft from a draft head, is the draft layer's kind.
    next_kinds.assign(next.size(), drafts && !shifted ? kDrafted : kPredicted);
    if (shifted && !next_kinds.empty() && new_budget > 1) next_kinds[0] = kDrafted;
    append_unsent(draft, reached, new_budget - 1, next);
    for (size_t i = static_cast<size_t>(reached) + 1; next_kinds.size() < next.size(); i++) next_kinds.push_back(kinds[i]);
    pushed = opt_.pool > 0 && k < d;  // the draft was not all confirmed (rejected, or not all sent)
    if (pushed) {  // rejection: keep what this step drafted for later recycling
      std::vector<int32_t> all = {ctx.pending()};
      all.insert(all.end(), draft.begin(), draft.end());
      for (const PseudoBlock& b : pseudo) {
        const std::vector<int32_t> t = b.tokens();
        all.insert(all.end(), t.begin(), t.end());
      }
      recycle.push_back(std::move(all));
      std::vector<int32_t> tail = {acc.tokens.back()};
      tail.insert(tail.end(), next.begin(), next.end());
      recycle.push_back(std::move(tail));
      while (static_cast<int>(recycle.size()) > opt_.pool) recycle.pop_front();
    }

    // ---- pseudo-active blocks take one Jacobi step each
    if (with_pseudo) {
      size_t r = 0;
      int32_t before = ra_tail_pred;  // what the row before each block predicts for its first token
      for (PseudoBlock& b : pseudo) {
        g.clear();
        const int first_row = tree.size() + static_cast<int>(r);  // the block's first draft row
        for (size_t j = 0; j < b.draft.size(); j++, r++)
          g.push_back(next_of(tree.size() + static_cast<int>(r)));
        const int32_t next_before = g.empty() ? b.after : g.back();
        auto shifted_of = [&](int j) { return shifted ? draft_of(first_row + j) : -1; };
        if (advance_pseudo(b, g, before, shifted_of)) ctx.count("pseudo_shifted_drafts");
        before = next_before;
      }
    }

    // ---- spawn a block after the newest one once it is far enough along (and while such blocks pay)
    const int newest_acc = pseudo.empty() ? n - new_budget : static_cast<int>(pseudo.back().acc.size());
    // (A block that will not be sent is not spawned either; now and then one is, to measure again.)
    auto spawn_pays = [&] {
      return !opt_.adaptive || price.pays(expect, 1 + sent, pseudo_.per_row() * n, n) ||
             (pseudo_.retry() && price.pays(expect, 1 + sent, pseudo_.prior_per_row() * n, n));
    };
    if (1 + static_cast<int>(pseudo.size()) < K && newest_acc >= spawn_at && new_budget > 0 && spawn_pays()) {
      PseudoBlock b;
      if (opt_.spawn_copy) {
        // As the paper: a copy of the real-active block's current draft tail (the token after the accepted
        // ones, then the updated draft), padded to n with guesses.
        b.draft.push_back(acc.tokens.back());
        b.draft.insert(b.draft.end(), next.begin(), next.end());
        if (static_cast<int>(b.draft.size()) > n) b.draft.resize(static_cast<size_t>(n));
      } else {
        const int32_t first = pseudo.empty() ? ra_tail_pred : pseudo.back().after;
        if (first >= 0) b.draft.push_back(first);
        b.first_predicted = first >= 0;
      }
      add_guesses(opt_.init, ctx.history(), V, rng, n - static_cast<int>(b.draft.size()), b.draft);
      pseudo.push_back(std::move(b));
      ctx.count("blocks_spawned");
    }

    budget = new_budget;
    draft.swap(next);
    kinds.swap(next_kinds);
    ctx.commit(acc.tokens);
  }
}

}  // namespace jf
