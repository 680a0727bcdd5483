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

// Whether `key` followed by `cont` occurs in `text`.
bool follows_in(std::span<const int32_t> text, int32_t key, std::span<const int32_t> cont) {
  const size_t n = cont.size();
  for (size_t i = 0; i + n < text.size(); i++)
    if (text[i] == key && std::equal(cont.begin(), cont.end(), text.begin() + static_cast<std::ptrdiff_t>(i + 1))) return true;
  return false;
}

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
  in.need = greedy ? SequenceInput::Need::Greedy : SequenceInput::Need::Logits;
  Acceptance acc;
  std::vector<std::span<const int32_t>> cands;
  std::vector<int32_t> preds, cont;
  std::vector<int> last_rows;
  std::vector<int> sent, added;  // per candidate: tokens sent, rows it added to the tree
  std::vector<int32_t> forced;
  int32_t one[1];
  while (!ctx.done()) {
    if (ctx.room() < 1) {
      ctx.stop_context_full();
      co_return;
    }
    const int S = s.cache().size();
    // ---- verification branch: pool n-grams that follow the pending token, as a prefix tree; each priced
    tree.reset(ctx.pending());
    const int maxd = max_draft(ctx, N - 1);
    pool.lookup(ctx.pending(), G, cands);
    const RowPricer price = ctx.pricer();
    double expect = 1.0;  // tokens this forward is expected to commit
    sent.assign(cands.size(), 0);
    added.assign(cands.size(), 0);
    for (size_t j = 0; j < cands.size(); j++) {
      if (maxd <= 0 || tree.size() + maxd > ctx.room()) break;
      // (Under a grammar, a candidate is cut where it refuses a token: the rest is never accepted.)
      const int fit = ctx.allowed_draft(cands[j].first(static_cast<size_t>(maxd)));
      if (fit <= 0) continue;
      int len = fit;
      const std::span<const int32_t> c = cands[j].first(static_cast<size_t>(fit));
      int shared = 0;  // tokens already in the tree (an earlier candidate's prefix)
      for (int node = 0; shared < len && (node = tree.child(node, c[shared])) >= 0;) shared++;
      if (opt_.adaptive && j == 0) {
        len = first_.choose(1, fit, price);
        expect += first_.expected(1, len);
      } else if (opt_.adaptive) {
        const double gain = later_[j].per_row() * (len - shared);
        if (!price.pays(expect, tree.size(), gain, len - shared)) continue;
        expect += gain;
      }
      sent[j] = len;
      added[j] = std::max(0, len - shared);
      tree.add_chain(0, c.first(static_cast<size_t>(len)));
    }
    ctx.count("candidates", static_cast<int64_t>(cands.size()));
    // Jump-forward: the text a grammar forces, as one more branch (rows, not forwards; shared prefixes reused).
    forced.clear();
    if (ctx.lead_with_forced(forced, std::min(kMaxForcedDraft, ctx.room() - tree.size())) > 0) tree.add_chain(0, forced);

    // ---- lookahead branch, if it fits in the context and its n-grams have paid for its rows
    bool with_window = tree.size() + win.rows() <= ctx.room();
    if (with_window && opt_.adaptive && !price.pays(expect, tree.size(), window_.per_row() * win.rows(), win.rows())) {
      // Now and then sent anyway where it could pay: its worth may have changed.
      with_window = window_.retry() && price.pays(expect, tree.size(), window_.prior_per_row() * win.rows(), win.rows());
      ctx.count("window_skipped", !with_window);
    }
    win.first_row = tree.size();
    const int M = tree.size() + (with_window ? win.rows() : 0);
    last_rows.clear();
    if (with_window) last_rows = win.last_level_rows();
    if (M == 1) {  // the pending token alone: a plain AR step, no mask or tree to lay out
      one[0] = ctx.pending();
      in.set_causal(&s.cache(), one, SequenceInput::Logits::Last);
    } else {
      in.reset_rows(&s.cache(), M);
      tree.emit(in, S);
      if (with_window) {
        win.emit(in, S);
        for (int r : last_rows)
          if (r != 0) in.logit_rows.push_back(r);
      }
      ctx.tag_rows(1, tree.size() - 1, RowRole::Candidate);
      if (with_window) ctx.tag_rows(tree.size(), M - tree.size(), RowRole::Window);
    }
    const ForwardResult out = co_await ctx.forward(in);
    // logit rows are the tree's nodes, then the window's last level (row 0 is the tree's root)
    auto window_logit_row = [&](int r) { return r == 0 ? 0 : tree.size() + (r - win.row(static_cast<int>(win.levels.size()) - 1, 0)); };

    // ---- verify
    accept_and_keep(tree, out, greedy, sampler, s.cache(), S, acc, ctx.rule_walk());
    const int a = static_cast<int>(acc.path.size());
    ctx.count("accepted_draft_tokens", a);
    if (a > 0) ctx.count("pool_hits");

    // ---- what each candidate was worth: the first per position, later ones by what they added
    int best = 0, winner = -1;
    for (size_t j = 0; j < cands.size(); j++) {
      int m = 0;
      while (m < sent[j] && m < a && cands[j][m] == acc.tokens[m]) m++;
      if (j == 0) first_.record(1, sent[0], m);
      else if (added[j] > 0) later_[j].record(added[j], std::max(0, m - best));
      if (m == a && a > 0 && winner < 0) winner = static_cast<int>(j);
      best = std::max(best, m);
    }
    // The window is credited with accepted candidates the text itself did not contain.
    double window_gain = 0;
    if (winner >= 0 && (!opt_.pool_from_prompt || !follows_in(ctx.history(), ctx.pending(), cands[winner]))) window_gain = a;
    window_.record(with_window ? win.rows() : 0, window_gain);

    // ---- advance the window and harvest its n-grams
    if (with_window) {
      preds.clear();
      for (int r : last_rows) preds.push_back(out.greedy(window_logit_row(r)));
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
