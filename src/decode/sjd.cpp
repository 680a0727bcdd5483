#include "decode/sjd.h"

#include <algorithm>
#include <optional>

#include "decode/draft_tree.h"
#include "decode/jacobi.h"

namespace jf {

namespace {

// A draw from a dense (not necessarily normalised) non-negative vector, walked in vocabulary order.
int32_t draw_dense(const std::vector<float>& w, float coin) {
  double total = 0;
  for (float x : w) total += x;
  const double r = coin * total;
  double cdf = 0;
  int32_t last = 0;
  for (size_t i = 0; i < w.size(); i++) {
    if (w[i] <= 0) continue;
    last = static_cast<int32_t>(i);
    cdf += w[i];
    if (r < cdf) return last;
  }
  return last;
}

// jf's repeat guess (SjdOptions::pac_repeat_guess): the draft's first token becomes g, the replacement token
// repeated, ahead of the rest of the draft (later tokens depend little on it where tokens are local); the
// sampled first token moves to a branch of the tree's depth. That token is redrawn without g when it is g, so
// that it and the other sampled branches all come from q without g, as verify_candidates assumes; `left`
// (q's copy for those branches) loses g and it.
void add_repeat_guess(int32_t g, const std::vector<std::vector<float>>& next_q, int depth, std::vector<float>& left,
                      std::vector<int32_t>& next_draft, std::vector<std::vector<int32_t>>& branches, bool* led, Sampler& sampler) {
  left[g] = 0.0f;
  double mass = 0;
  for (float w : left) mass += w;
  if (mass <= 0) {  // q is the point mass at g: the draft already guesses it
    left[g] = next_q[0][g];
    return;
  }
  std::vector<int32_t> b = {next_draft[0] == g ? draw_dense(left, sampler.coin()) : next_draft[0]};
  left[b[0]] = 0.0f;
  for (size_t dd = 1; dd < next_q.size() && static_cast<int>(dd) < depth; dd++) b.push_back(draw_dense(next_q[dd], sampler.coin()));
  branches.insert(branches.begin(), std::move(b));
  next_draft[0] = g;
  *led = true;
}

// q without g, normalised (empty when q has no mass outside g).
std::vector<float> without(const std::vector<float>& q, int32_t g) {
  std::vector<float> r = q;
  r[g] = 0.0f;
  double mass = 0;
  for (float w : r) mass += w;
  if (mass <= 0) return {};
  for (float& w : r) w = static_cast<float>(w / mass);
  return r;
}

// The run's length: the repeat guess g = draft[0] repeated, up to `limit` tokens and while the draft's tokens
// have distributions (a sampled candidate from each stands beside the run's g); 0 when under 2. The draft's
// second token becomes its sibling at position 1: redrawn without g when it is g (it is then only verified
// beside g, never alone).
int run_length(int limit, std::vector<int32_t>& draft, const std::vector<std::vector<float>>& q, int sent, Sampler& sampler) {
  const int32_t g = draft[0];
  int run = 1;
  while (run < std::min(limit, sent) && !q[static_cast<size_t>(run)].empty()) run++;
  if (run < 2) return 0;
  std::vector<float> rest = without(q[1], g);
  if (rest.empty()) return 0;
  if (draft[1] == g) draft[1] = draw_dense(rest, sampler.coin());
  return run;
}

// The run as a path (g `run` times, every one a guess) and, beside its token at each position j >= 2, a
// candidate drawn from q[j] without g (a leaf: the run ending there).
void add_run(int run, int sent, const std::vector<int32_t>& draft, const std::vector<std::vector<float>>& q, int room, DraftTree& tree,
             std::vector<std::vector<int>>& paths, std::vector<int>& guesses, std::vector<int>& excluded, Sampler& sampler) {
  const int32_t g = draft[0];
  std::vector<int32_t> tokens(static_cast<size_t>(run), g);
  tokens.insert(tokens.end(), draft.begin() + run, draft.begin() + sent);  // then the draft's own tokens
  if (tree.size() + sent - 1 > room) return;
  paths.push_back(tree.add_chain(0, tokens));
  guesses.push_back(run), excluded.push_back(0);
  for (int j = 2; j < run && tree.size() < room; j++) {
    const std::vector<float> rest = without(q[static_cast<size_t>(j)], g);
    if (rest.empty()) continue;
    tokens.resize(static_cast<size_t>(j));
    tokens.push_back(draw_dense(rest, sampler.coin()));
    paths.push_back(tree.add_chain(0, tokens));
    guesses.push_back(j), excluded.push_back(1);
  }
}

// The children of `node` (at position d) over the paths, into `out`: a guess first (returns whether there is
// one), then the sampled tokens in the order drawn (the paths' order).
bool children(const std::vector<std::vector<int>>& paths, const std::vector<int>& guesses, int node, int d, std::vector<int>& out) {
  out.clear();
  bool guess = false;
  for (size_t k = 0; k < paths.size(); k++) {
    const std::vector<int>& path = paths[k];
    if (static_cast<int>(path.size()) <= d || (d > 0 && path[static_cast<size_t>(d) - 1] != node)) continue;
    const int c = path[static_cast<size_t>(d)];
    if (std::find(out.begin(), out.end(), c) != out.end()) continue;
    if (d < guesses[k]) {
      out.insert(out.begin(), c);
      guess = true;
    } else {
      out.push_back(c);
    }
  }
  return guess;
}

// The longest path through `node` at position d (the first of equals): its rows propose the next draft.
int path_of(const std::vector<std::vector<int>>& paths, int node, int d) {
  int best = -1;
  for (size_t k = 0; k < paths.size(); k++)
    if (static_cast<int>(paths[k].size()) > d && paths[k][static_cast<size_t>(d)] == node &&
        (best < 0 || paths[k].size() > paths[static_cast<size_t>(best)].size()))
      best = static_cast<int>(k);
  return best;
}

}  // namespace

// (The run's path is as long as the draft and shares its first token; a leaf beside each run token from the 3rd.)
void pac_rows_beside(const std::vector<std::vector<int32_t>>& branches, int run_limit, bool guess_led, int m, std::vector<int>& out) {
  out.clear();
  for (int k = 1; k <= m; k++) {
    int rows = 0;
    for (const auto& b : branches) rows += std::min(static_cast<int>(b.size()), k);
    const int run = guess_led && run_limit >= 2 ? std::min(run_limit, k) : 0;
    if (run >= 2) rows += (k - 1) + (run - 2);
    out.push_back(rows);
  }
}

int32_t speculative_verify(const std::vector<float>& p, const float* q, int32_t x, Rng& rng, bool* accepted) {
  const float qx = q ? q[x] : 1.0f;
  const float u = rng.uniform();
  if (qx > 0.0f && u < std::min(1.0f, p[x] / qx)) {
    *accepted = true;
    return x;
  }
  *accepted = false;
  // Residual max(0, p - q), drawn by walking it in vocabulary order.
  double total = 0;
  for (size_t i = 0; i < p.size(); i++) total += std::max(0.0f, p[i] - (q ? q[i] : (static_cast<int32_t>(i) == x ? 1.0f : 0.0f)));
  if (total <= 0) {  // p == q exactly: cannot happen after a rejection, but stay safe
    return x;
  }
  const double r = rng.uniform() * total;
  double cdf = 0;
  int32_t last = 0;
  for (size_t i = 0; i < p.size(); i++) {
    const float w = std::max(0.0f, p[i] - (q ? q[i] : (static_cast<int32_t>(i) == x ? 1.0f : 0.0f)));
    if (w <= 0) continue;
    last = static_cast<int32_t>(i);
    cdf += w;
    if (r < cdf) return last;
  }
  return last;
}

int32_t verify_candidates(const std::vector<float>& p, const std::vector<float>& q, std::span<const int32_t> xs, Rng& rng,
                          int* which, bool first_is_guess) {
  std::vector<float> pr = p, qr = q;
  for (size_t i = 0; i < xs.size(); i++) {
    const int32_t x = xs[i];
    const float u = rng.uniform();
    if (i == 0 && first_is_guess) {  // proposal: the point mass at x
      if (u < pr[x]) {
        *which = 0;
        return x;
      }
      const double rest = 1.0 - pr[x];
      pr[x] = 0.0f;
      if (rest <= 0) break;
      for (float& w : pr) w = static_cast<float>(w / rest);
      double qs = 0;
      qr[x] = 0.0f;
      for (float w : qr) qs += w;
      if (qs <= 0) break;
      for (float& w : qr) w = static_cast<float>(w / qs);
      continue;
    }
    if (qr[x] > 0.0f && u < std::min(1.0f, pr[x] / qr[x])) {
      *which = static_cast<int>(i);
      return x;
    }
    // rejected: the target becomes the residual, the proposal loses x (the next candidate was drawn without it)
    double ps = 0, qs = 0;
    for (size_t v = 0; v < pr.size(); v++) ps += pr[v] = std::max(0.0f, pr[v] - qr[v]);
    qr[x] = 0.0f;
    for (float w : qr) qs += w;
    if (ps <= 0) {  // p == q: cannot happen after a rejection, but stay safe
      *which = static_cast<int>(i);
      return x;
    }
    for (float& w : pr) w = static_cast<float>(w / ps);
    if (qs <= 0) break;
    for (float& w : qr) w = static_cast<float>(w / qs);
  }
  *which = -1;
  return draw_dense(pr, rng.uniform());
}

DecodeLoop SjdDecoder::decode(DecodeContext& ctx) {
  Session& s = ctx.session();
  const int V = s.vocab_size();
  Sampler sampler(ctx.config().sampling, V);
  Rng guess_rng(opt_.seed);
  Distribution dist;
  SequenceInput in;
  DraftTree tree;
  Acceptance acc;
  std::vector<int32_t> draft, guesses, next_draft, cand_tokens;
  std::vector<std::vector<float>> q, next_q;  // q[d]: distribution the depth-d draft tokens were drawn from (empty = one-hot)
  std::vector<std::vector<float>> p;          // p[node]: processed distribution of a tree node's row
  // PAC tree: extra paths from the pending token (their depth-1 tokens drawn without replacement after the
  // draft's first one, deeper tokens from q[d] independently); paths[0] is the draft's chain.
  std::vector<std::vector<int32_t>> branches, next_branches;
  bool draft_guess_led = false, next_guess_led = false;  // the draft's first token is the repeat guess
  std::vector<std::vector<int>> paths;
  // Per path: its first `guesses` tokens are point-mass guesses; `excluded[k]`: the token after them was drawn
  // from q without the guess (it is verified beside the guess, never alone).
  std::vector<int> path_guesses, excluded;
  std::vector<int> cand_nodes;
  std::vector<float> left, ruled, scratch;
  std::vector<int> kinds, beside;
  while (!ctx.done()) {
    if (ctx.room() < 1) {
      ctx.stop_context_full();
      co_return;
    }
    const int m = max_draft(ctx, opt_.block - 1);
    // Jump-forward: the text a grammar forces leads the draft as sure guesses (no proposal distribution).
    const int forced = ctx.lead_with_forced(draft, m);
    q.resize(draft.size());
    for (int i = 0; i < forced; i++) q[static_cast<size_t>(i)].clear();
    if (static_cast<int>(draft.size()) < m) {
      guesses.clear();
      add_guesses(opt_.init, ctx.history(), V, guess_rng, m - static_cast<int>(draft.size()), guesses);
      for (int32_t g : guesses) draft.push_back(g), q.emplace_back();
    }
    draft.resize(static_cast<size_t>(m));
    q.resize(static_cast<size_t>(m));
    kinds.clear();  // 1: a guess, 2: sampled by an earlier forward
    for (int i = 0; i < m; i++) kinds.push_back(q[i].empty() ? 1 : 2);
    if (opt_.adaptive) pac_rows_beside(branches, opt_.pac_repeat_guess, draft_guess_led && forced == 0, m, beside);
    const int sent = std::max(forced, opt_.adaptive ? policy_.choose(kinds, ctx.pricer(), 1.0, 1, 1, 2, beside) : m);
    ctx.count("draft_tokens_cut", m - sent);

    const int S = s.cache().size();
    tree.reset(ctx.pending());
    // the draft's first token is the repeat guess (verified first, as a point mass)
    const bool guess_led = draft_guess_led && forced == 0 && sent > 0;
    const int run = guess_led ? run_length(opt_.pac_repeat_guess, draft, q, sent, sampler) : 0;
    paths.assign(1, tree.add_chain(0, std::span<const int32_t>(draft).first(static_cast<size_t>(sent))));
    path_guesses.assign(1, guess_led ? 1 : 0);
    excluded.assign(1, run > 0);
    if (run > 0) add_run(run, sent, draft, q, ctx.room(), tree, paths, path_guesses, excluded, sampler);
    for (auto& b : branches) {
      if (static_cast<int>(b.size()) > sent) b.resize(static_cast<size_t>(sent));
      if (!b.empty() && tree.size() + static_cast<int>(b.size()) <= ctx.room()) {
        paths.push_back(tree.add_chain(0, b));
        path_guesses.push_back(0);
        excluded.push_back(0);
      }
    }
    in.reset_rows(&s.cache(), tree.size());
    tree.emit(in, S);
    const ForwardResult out = co_await ctx.forward(in);
    if (static_cast<int>(p.size()) < tree.size()) p.resize(static_cast<size_t>(tree.size()));
    // Processed distribution of a node's row, dense in p[node], after the logit rules `rules` (null: none);
    // `dist` keeps its sparse form for drawing.
    // The distribution path k's token at position j was drawn from (null: a guess, one-hot), q[qi] for a
    // sampled one (qi: j, or the broken verifier's neighbour).
    auto proposal = [&](int k, int j, int qi) -> const float* {
      if (j < path_guesses[k] || q[qi].empty()) return nullptr;
      if (!excluded[k] || j != path_guesses[k]) return q[qi].data();
      scratch = without(q[qi], draft[0]);  // drawn without the run's guess
      return scratch.empty() ? nullptr : scratch.data();
    };
    RuleState* walk = ctx.rule_walk();  // the rules along the path being verified
    const std::optional<RuleState> at_commit = walk ? std::optional<RuleState>(*walk) : std::nullopt;
    auto prob = [&](int node, const RuleState* rules = nullptr) -> const std::vector<float>& {
      const float* logits = out.logits(node);
      if (rules) {
        ruled.resize(static_cast<size_t>(V));
        rules->apply(logits, V, ruled.data());
        logits = ruled.data();
      }
      sampler.distribution(logits, dist);
      dist.to_dense(V, p[node]);
      return p[node];
    };

    // ---- verify from the root; stop at the first rejection (its replacement is a residual draw). At the root
    // the PAC tree's candidates are tried in turn (recursive rejection sampling without replacement).
    acc.path.clear();
    acc.tokens.clear();
    int node = 0, d = 0, rejected = -1, rejected_path = -1;  // the longest path through the rejected node
    for (;;) {
      const bool guess_first = children(paths, path_guesses, node, d, cand_nodes);
      if (cand_nodes.empty()) {  // the whole path accepted: one more token from its last row
        prob(node, walk);
        acc.tokens.push_back(dist.draw(sampler.coin()));
        break;
      }
      int which = 0;
      int32_t t = tree.token(cand_nodes[0]);
      if (!opt_.accept_all_for_testing) {
        const std::vector<float>& pn = prob(node, walk);
        const int qi = opt_.wrong_q_row_for_testing ? (d + 1 < m ? d + 1 : (d > 0 ? d - 1 : d)) : d;
        if (!guess_first && (cand_nodes.size() == 1 || q[qi].empty())) {
          bool ok = true;
          t = speculative_verify(pn, proposal(path_of(paths, cand_nodes[0], d), d, qi), t, sampler.rng(), &ok);
          which = ok ? 0 : -1;
        } else {
          cand_tokens.clear();
          for (int c : cand_nodes) cand_tokens.push_back(tree.token(c));
          t = verify_candidates(pn, q[qi], cand_tokens, sampler.rng(), &which,
                                guess_first && !(opt_.run_guess_as_draw_for_testing && d > 0));
        }
      }
      acc.tokens.push_back(t);
      if (walk) walk->advance(t);
      if (which < 0) {
        rejected = cand_nodes[0];
        rejected_path = path_of(paths, rejected, d);
        break;
      }
      if (d == 0 && cand_nodes[which] != paths[0][0]) ctx.count("pac_branch_wins");
      if (d > 0 && guess_first && which == 0) ctx.count("pac_run_kept");
      node = cand_nodes[which];
      acc.path.push_back(node);
      d++;
    }
    keep_path(s.cache(), S, acc);
    ctx.count("draft_tokens", sent);
    ctx.count("accepted_draft_tokens", static_cast<int64_t>(acc.path.size()));
    policy_.record(kinds, sent, static_cast<int>(acc.path.size()));

    // ---- rows from the rejected token on propose the next draft, each sampled from its own distribution
    next_draft.clear();
    next_q.clear();
    next_branches.clear();
    if (rejected >= 0) {
      const int k = rejected_path;
      const std::vector<int>& path = paths[static_cast<size_t>(k)];
      // Proposals follow the rules along the draft's own tokens while the grammar allows them (any proposal
      // distribution is exact: verification compares against the one drawn from).
      std::optional<RuleState> along = at_commit;
      for (size_t j = 0; j < static_cast<size_t>(d) && along; j++) along->advance(tree.token(path[j]));
      for (size_t j = static_cast<size_t>(d); j < path.size(); j++) {
        if (along && along->allows(tree.token(path[j]))) {
          along->advance(tree.token(path[j]));
        } else {
          along.reset();
        }
        next_q.push_back(prob(path[j], along ? &*along : nullptr));
        if (opt_.pac_continue && j + 1 < path.size()) {  // the token after stood at this row's position: keep it if it passes
          bool kept = true;
          const int at = static_cast<int>(j) + 1;
          next_draft.push_back(speculative_verify(p[path[j]], proposal(k, at, at), tree.token(path[j + 1]), sampler.rng(), &kept));
          ctx.count("pac_kept", kept);
        } else {
          next_draft.push_back(dist.draw(sampler.coin()));
        }
      }
      // PAC tree: width - 1 more first tokens, without replacement after the draft's, each continued to the depth
      if ((opt_.pac_tree_width > 1 || opt_.pac_repeat_guess) && opt_.pac_tree_depth > 0 && !next_q.empty()) {
        left = next_q[0];
        if (opt_.pac_repeat_guess) add_repeat_guess(acc.tokens.back(), next_q, opt_.pac_tree_depth, left, next_draft, next_branches, &next_guess_led, sampler);
        left[next_draft[0]] = 0.0f;
        for (int k = 1; k < opt_.pac_tree_width; k++) {
          double mass = 0;
          for (float w : left) mass += w;
          if (mass <= 0) break;
          std::vector<int32_t> b = {draw_dense(left, sampler.coin())};
          left[b[0]] = 0.0f;
          for (size_t dd = 1; dd < next_q.size() && static_cast<int>(dd) < opt_.pac_tree_depth; dd++)
            b.push_back(draw_dense(next_q[dd], sampler.coin()));
          next_branches.push_back(std::move(b));
        }
      }
    }
    // The unsent draft tokens after the positions just redrawn keep their places and their distributions.
    const size_t redrawn_to = rejected >= 0 ? paths[static_cast<size_t>(rejected_path)].size() : static_cast<size_t>(d);
    for (size_t i = redrawn_to + 1; i < draft.size(); i++) {
      next_draft.push_back(draft[i]);
      next_q.push_back(std::move(q[i]));
    }
    draft.swap(next_draft);
    q.swap(next_q);
    branches.swap(next_branches);
    draft_guess_led = next_guess_led;
    next_guess_led = false;
    ctx.commit(acc.tokens);
  }
}

}  // namespace jf
