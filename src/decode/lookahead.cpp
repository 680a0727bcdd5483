#include "decode/lookahead.h"

#include <algorithm>

#include "decode/jacobi.h"
#include "kernels/ops.h"

namespace jf {

namespace {

// The 2-D Jacobi window. levels[0] is the first row after the pending token (W-1 tokens once warmed up);
// levels[l >= 1] hold W tokens; level l column c sits at position P + l + c and sees the first row up to
// column c and column c of levels 1..l, so each column is one Jacobi trajectory.
struct Window {
  std::vector<std::vector<int32_t>> levels;
  int first_row = 0;  // forward row of levels[0][0]

  int rows() const {
    int n = 0;
    for (const auto& l : levels) n += static_cast<int>(l.size());
    return n;
  }
  int row(int level, int col) const {
    int r = first_row;
    for (int l = 0; l < level; l++) r += static_cast<int>(levels[l].size());
    return r + col;
  }
  // Rows whose predictions extend the window: the last level, or the first row (pending + level 0) when
  // only level 0 exists. Row 0 is the pending token.
  std::vector<int> last_level_rows() const {
    std::vector<int> r;
    if (levels.size() == 1) r.push_back(0);
    const int l = static_cast<int>(levels.size()) - 1;
    for (int c = 0; c < static_cast<int>(levels[l].size()); c++) r.push_back(row(l, c));
    return r;
  }

  void emit(SequenceInput& in, int pending_pos) const {
    const int P = pending_pos;
    for (int c = 0; c < static_cast<int>(levels[0].size()); c++) {  // first row: causal after the pending token
      const int r = row(0, c);
      in.tokens[r] = levels[0][c];
      in.positions[r] = P + 1 + c;
      in.mask.set(r, 0);
      for (int c2 = 0; c2 <= c; c2++) in.mask.set(r, row(0, c2));
    }
    for (int l = 1; l < static_cast<int>(levels.size()); l++) {
      for (int c = 0; c < static_cast<int>(levels[l].size()); c++) {
        const int r = row(l, c);
        in.tokens[r] = levels[l][c];
        in.positions[r] = P + l + c;
        in.mask.set(r, 0);
        for (int c2 = 0; c2 < c && c2 < static_cast<int>(levels[0].size()); c2++) in.mask.set(r, row(0, c2));
        for (int l2 = 1; l2 <= l; l2++)
          if (c < static_cast<int>(levels[l2].size())) in.mask.set(r, row(l2, c));
      }
    }
  }
};

}  // namespace

DecodeLoop LookaheadDecoder::decode(DecodeContext& ctx) {
  Session& s = ctx.session();
  const int V = s.vocab_size(), W = opt_.window, N = opt_.ngram, G = opt_.guesses;
  Rng rng(opt_.seed);
  Sampler sampler(ctx.config().sampling, V);
  const bool greedy = ctx.config().sampling.greedy();
  NgramPool pool(N - 1, G);
  size_t pooled = 0;  // history tokens already turned into pool n-grams
  if (opt_.pool_from_prompt) {
    pool.insert_all(ctx.history());
    pooled = ctx.history().size();
  }
  Window win;
  win.levels.emplace_back();
  add_guesses(opt_.init, ctx.history(), V, rng, W + N - 3, win.levels[0]);

  DraftTree tree;
  SequenceInput in;
  Acceptance acc;
  std::vector<std::span<const int32_t>> cands;
  std::vector<int32_t> preds, cont;
  while (!ctx.done()) {
    if (ctx.room() < 1) {
      ctx.stop_context_full();
      co_return;
    }
    const int S = s.cache().size();

    // ---- verification branch: pool n-grams that follow the pending token, as a prefix tree
    tree.reset(ctx.pending());
    const int maxd = max_draft(ctx, N - 1);
    pool.lookup(ctx.pending(), G, cands);
    for (const auto& c : cands)
      if (maxd > 0 && tree.size() + maxd <= ctx.room()) tree.add_chain(0, c.first(static_cast<size_t>(maxd)));
    ctx.count("candidates", static_cast<int64_t>(cands.size()));

    // ---- lookahead branch, if it fits in the context
    const bool with_window = tree.size() + win.rows() <= ctx.room();
    win.first_row = tree.size();
    const int M = tree.size() + (with_window ? win.rows() : 0);
    in.reset_rows(&s.cache(), M);
    tree.emit(in, S);
    std::vector<int> last_rows;
    if (with_window) {
      win.emit(in, S);
      last_rows = win.last_level_rows();
      for (int r : last_rows)
        if (r != 0) in.logit_rows.push_back(r);
    }
    ctx.tag_rows(1, tree.size() - 1, RowRole::Candidate);
    if (with_window) ctx.tag_rows(tree.size(), M - tree.size(), RowRole::Window);
    const float* logits = co_await ctx.forward(in);
    // logit rows are the tree's nodes, then the window's last level (row 0 is the tree's root)
    auto tree_row = [&](int node) { return logits + static_cast<size_t>(node) * V; };
    auto window_row = [&](int r) {
      return r == 0 ? logits : logits + static_cast<size_t>(tree.size() + (r - win.row(static_cast<int>(win.levels.size()) - 1, 0))) * V;
    };

    // ---- verify
    if (greedy)
      accept_greedy(tree, tree_row, V, acc);
    else
      accept_sampled(tree, tree_row, sampler, acc);
    keep_path(s.cache(), S, acc);
    ctx.count("accepted_draft_tokens", static_cast<int64_t>(acc.path.size()));
    if (!acc.path.empty()) ctx.count("pool_hits");

    // ---- advance the window and harvest its n-grams
    if (with_window) {
      preds.clear();
      for (int r : last_rows) preds.push_back(static_cast<int32_t>(argmax(window_row(r), V)));
      if (static_cast<int>(win.levels.size()) < N - 1) {  // warm-up: grow a level, no n-grams yet
        for (auto& l : win.levels)
          if (!l.empty()) l.erase(l.begin());
        win.levels.emplace_back(preds.begin() + 1, preds.end());
      } else {
        for (int c = 0; c < W && c < static_cast<int>(preds.size()); c++) {
          const int32_t key = c == 0 ? ctx.pending() : win.levels[0][c - 1];
          cont.clear();
          for (int l = 1; l < N - 1; l++) cont.push_back(win.levels[l][c]);
          cont.push_back(preds[c]);
          pool.insert(key, cont);
        }
        if (N == 2) {
          win.levels[0].assign(preds.begin() + 1, preds.end());
        } else {
          win.levels[0].assign(win.levels[1].begin() + 1, win.levels[1].end());
          for (int l = 1; l < N - 2; l++) win.levels[l] = win.levels[l + 1];
          win.levels[N - 2] = preds;
        }
      }
    }
    ctx.commit(acc.tokens);
    if (opt_.pool_from_prompt) {  // n-grams of the text itself are good candidates too
      pool.insert_all(ctx.history(), pooled);
      pooled = ctx.history().size();
    }
  }
}

}  // namespace jf
