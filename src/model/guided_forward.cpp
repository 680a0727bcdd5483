#include "model/guided_forward.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "base/error.h"

namespace jf {

GuidedForward::GuidedForward(ForwardPass& inner, int32_t anchor, std::vector<int32_t> uncond_prefix, float scale)
    : inner_(inner), anchor_(anchor), uncond_prefix_(std::move(uncond_prefix)), scale_(scale) {
  if (!std::isfinite(scale) || scale < 0.0f) throw Error("the guidance scale must be a finite number >= 0");
  for (int32_t t : uncond_prefix_)
    if (t < 0 || t >= inner.vocab_size() || t == anchor) throw Error("guidance: bad token in the unconditional prefix");
  if (anchor < 0 || anchor >= inner.vocab_size()) throw Error("guidance: the anchor token is outside the vocabulary");
}

KvCache GuidedForward::make_cache(int capacity, DType type) {
  KvCache c = inner_.make_cache(capacity, type);
  c.set_follower(std::make_unique<KvCache>(inner_.make_cache(capacity, type)));
  return c;
}

void GuidedForward::make_twin(const SequenceInput& s, int first, SequenceInput& t) {
  KvFollower& f = *s.cache->follower();
  const int S = s.cache->size();
  const int M = static_cast<int>(s.tokens.size());
  auto pos = [&](int i) { return s.positions.empty() ? S + i : s.positions[static_cast<size_t>(i)]; };
  int P = 0;  // unconditional prefix rows, when this forward primes the twin
  if (f.from >= 0) {
    JF_CHECK(f.cache->size() == S - f.shift, "a guided sequence's twin is out of step with its cache");
  } else {
    JF_CHECK(f.cache->size() == 0, "an unprimed twin holds slots");
    P = static_cast<int>(uncond_prefix_.size());
    f.from = S + first;
    f.shift = S + first - P;
    f.pos_shift = pos(first) - P;
  }
  t.reset_rows(f.cache.get(), P + M - first);
  t.need = SequenceInput::Need::Logits;
  for (int i = 0; i < P; i++) {
    t.tokens[static_cast<size_t>(i)] = uncond_prefix_[static_cast<size_t>(i)];
    t.positions[static_cast<size_t>(i)] = i;
  }
  for (int i = first; i < M; i++) {
    t.tokens[static_cast<size_t>(P + i - first)] = s.tokens[static_cast<size_t>(i)];
    t.positions[static_cast<size_t>(P + i - first)] = pos(i) - f.pos_shift;
  }
  if (s.mask.size() == 0) {
    t.mask.clear();  // causal: the twin's rows are in the same order, after its prefix
  } else {
    for (int i = 0; i < P; i++)
      for (int j = 0; j <= i; j++) t.mask.set(i, j);
    for (int i = first; i < M; i++) {
      for (int j = 0; j < P; j++) t.mask.set(P + i - first, j);
      for (int j = first; j < M; j++)
        if (s.mask.get(i, j)) t.mask.set(P + i - first, P + j - first);
    }
  }
  for (int32_t r : s.logit_rows)
    if (r >= first) t.logit_rows.push_back(P + r - first);
}

void GuidedForward::run(std::span<SequenceInput* const> seqs) {
  twins_.resize(seqs.size());
  batch_.assign(seqs.begin(), seqs.end());
  twin_row_.clear();
  int rows = 0;
  for (const SequenceInput* s : seqs) rows += static_cast<int>(s->logit_rows.size());
  int twin_rows = rows;  // the twins' rows follow every sequence's in the inner result
  std::vector<KvFollower*> primed;
  for (size_t k = 0; k < seqs.size(); k++) {
    const SequenceInput& s = *seqs[k];
    if (!s.cache || !s.cache->follower())
      throw Error("guidance: a sequence's KV cache was not made by the guided forward pass (make_cache)");
    int first = 0;  // the first row the twin shares: all once it is primed, else from the anchor on
    if (s.cache->follower()->from < 0) {
      const auto it = std::find(s.tokens.begin(), s.tokens.end(), anchor_);
      first = it == s.tokens.end() ? -1 : static_cast<int>(it - s.tokens.begin());
    }
    if (first < 0) {  // no anchor yet: the rows are the conditional ones
      twin_row_.insert(twin_row_.end(), s.logit_rows.size(), -1);
      continue;
    }
    SequenceInput& t = twins_[k];
    if (s.cache->follower()->from < 0) primed.push_back(s.cache->follower());
    make_twin(s, first, t);
    int next = 0;
    for (int32_t r : s.logit_rows) twin_row_.push_back(r >= first ? twin_rows + next++ : -1);
    twin_rows += next;
    batch_.push_back(&t);
  }
  try {
    result_ = inner_.forward(batch_);
  } catch (...) {  // (a twin primed by a forward that did not run holds nothing)
    for (KvFollower* f : primed) f->reset();
    throw;
  }
  guided_.resize(static_cast<size_t>(rows) * static_cast<size_t>(vocab_size()));
  done_.assign(static_cast<size_t>(rows), 0);
}

const float* GuidedForward::row_logits(int r) {
  const float* c = result_.logits(r);
  const int g = twin_row_[static_cast<size_t>(r)];
  if (g < 0) return c;
  const size_t V = static_cast<size_t>(vocab_size());
  float* out = guided_.data() + static_cast<size_t>(r) * V;
  if (!done_[static_cast<size_t>(r)]) {
    const float* u = result_.logits(g);
    for (size_t v = 0; v < V; v++) out[v] = u[v] + scale_ * (c[v] - u[v]);
    done_[static_cast<size_t>(r)] = 1;
  }
  return out;
}

}  // namespace jf
