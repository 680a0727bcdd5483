#include "decode/sjd.h"

#include <algorithm>

#include "decode/jacobi.h"

namespace jf {

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

DecodeLoop SjdDecoder::decode(DecodeContext& ctx) {
  Session& s = ctx.session();
  const int V = s.vocab_size();
  Sampler sampler(ctx.config().sampling, V);
  Rng guess_rng(opt_.seed);
  Distribution dist;
  SequenceInput in;
  std::vector<int32_t> draft, guesses, committed, next_draft, rows;
  std::vector<std::vector<float>> q, next_q;  // q[i]: distribution draft[i] was drawn from (empty = one-hot)
  std::vector<std::vector<float>> p;          // p[r]: processed distribution of forward row r
  while (!ctx.done()) {
    if (ctx.room() < 1) {
      ctx.stop_context_full();
      co_return;
    }
    const int m = max_draft(ctx, opt_.block - 1);
    if (static_cast<int>(draft.size()) < m) {
      guesses.clear();
      add_guesses(opt_.init, ctx.history(), V, guess_rng, m - static_cast<int>(draft.size()), guesses);
      for (int32_t g : guesses) draft.push_back(g), q.emplace_back();
    }
    draft.resize(static_cast<size_t>(m));
    q.resize(static_cast<size_t>(m));

    const int S = s.cache().size();
    rows.assign(1, ctx.pending());
    rows.insert(rows.end(), draft.begin(), draft.end());
    in.set_causal(&s.cache(), rows, SequenceInput::Logits::All);
    const float* logits = co_await ctx.forward(in);
    if (static_cast<int>(p.size()) < m + 1) p.resize(static_cast<size_t>(m + 1));
    // Processed distribution of row r, dense in p[r]; `dist` keeps its sparse form for drawing.
    auto prob = [&](int r) -> const std::vector<float>& {
      sampler.distribution(logits + static_cast<size_t>(r) * V, dist);
      dist.to_dense(V, p[r]);
      return p[r];
    };

    // ---- verify left to right; stop at the first rejection (its replacement is a residual draw)
    committed.clear();
    int a = 0;
    for (; a < m; a++) {
      bool ok = true;
      const std::vector<float>& qa = opt_.wrong_q_row_for_testing ? q[a + 1 < m ? a + 1 : (a > 0 ? a - 1 : a)] : q[a];
      const int32_t t = opt_.accept_all_for_testing ? draft[a] :
          speculative_verify(prob(a), qa.empty() ? nullptr : qa.data(), draft[a], sampler.rng(), &ok);
      committed.push_back(t);
      if (!ok) break;
    }
    if (a == m) {  // everything accepted: one more token from the last row
      sampler.distribution(logits + static_cast<size_t>(m) * V, dist);
      committed.push_back(dist.draw(sampler.coin()));
    }
    s.cache().truncate(S + a + 1);
    ctx.count("draft_tokens", m);
    ctx.count("accepted_draft_tokens", a);

    // ---- rows past the committed ones propose the next draft, each sampled from its own distribution
    next_draft.clear();
    next_q.clear();
    for (int r = a + 1; r <= m; r++) {
      next_q.push_back(prob(r));
      if (opt_.pac_continue && r < m) {  // draft[r] stood at this row's position: keep it if it passes
        bool kept = true;
        next_draft.push_back(speculative_verify(p[r], q[r].empty() ? nullptr : q[r].data(), draft[r], sampler.rng(), &kept));
        ctx.count("pac_kept", kept);
      } else {
        next_draft.push_back(dist.draw(sampler.coin()));
      }
    }
    draft.swap(next_draft);
    q.swap(next_q);
    ctx.commit(committed);
  }
}

}  // namespace jf
