#include "sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "base/error.h"
#include "kernels/ops.h"

namespace jf {

namespace {
std::string num(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}
}  // namespace

void SamplingParams::validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f || temperature > 100.0f)
    throw Error("invalid temperature " + num(temperature) + " (expected 0..100; 0 = greedy)");
  if (top_k < 0) throw Error("invalid top-k " + std::to_string(top_k) + " (expected >= 0; 0 = off)");
  if (!(top_p > 0.0f && top_p <= 1.0f)) throw Error("invalid top-p " + num(top_p) + " (expected 0 < p <= 1)");
  if (!(min_p >= 0.0f && min_p <= 1.0f)) throw Error("invalid min-p " + num(min_p) + " (expected 0..1)");
}

int32_t Distribution::draw(float coin) const {
  // Walk the candidates comparing against coin * total (as llama2.c does), so no renormalisation
  // rounding changes which token a given coin selects.
  const float r = coin * total;
  float cdf = 0.0f;
  for (size_t i = 0; i < ids.size(); i++) {
    cdf += weights[i];
    if (r < cdf) return ids[i];
  }
  return ids.back();
}

void Distribution::to_dense(int vocab, std::vector<float>& probs) const {
  probs.assign(static_cast<size_t>(vocab), 0.0f);
  for (size_t i = 0; i < ids.size(); i++) probs[ids[i]] = weights[i] / total;
}

Sampler::Sampler(const SamplingParams& params, int vocab_size) : params_(params), vocab_(vocab_size), rng_(params.seed) {
  params_.validate();
  probs_.resize(static_cast<size_t>(vocab_size));
  order_.reserve(static_cast<size_t>(vocab_size));
}

void Sampler::distribution(const float* logits, Distribution& d) {
  const int n = vocab_;
  // temperature + softmax (scalar expf: the same numbers as the llama2.c reference sampler)
  float mx = -INFINITY;
  for (int i = 0; i < n; i++) {
    probs_[i] = params_.temperature == 1.0f ? logits[i] : logits[i] / params_.temperature;
    mx = std::max(mx, probs_[i]);
  }
  float sum = 0.0f;
  for (int i = 0; i < n; i++) {
    probs_[i] = std::exp(probs_[i] - mx);
    sum += probs_[i];
  }
  for (int i = 0; i < n; i++) probs_[i] /= sum;

  auto by_prob = [this](int32_t a, int32_t b) { return probs_[a] > probs_[b] || (probs_[a] == probs_[b] && a < b); };
  order_.clear();
  bool sorted = false, top_k_cut = false;
  if (params_.top_k > 0 && params_.top_k < n) {
    for (int i = 0; i < n; i++) order_.push_back(i);
    std::partial_sort(order_.begin(), order_.begin() + params_.top_k, order_.end(), by_prob);
    order_.resize(static_cast<size_t>(params_.top_k));
    sorted = top_k_cut = true;
  }
  if (params_.top_p < 1.0f) {
    if (!sorted) {
      // The nucleus's m-th token (m >= 2) is the largest of n - m + 1 tokens holding at least 1 - p, so it
      // is >= (1 - p) / (n - 1): skip tokens below that before sorting (with slack for rounding). The
      // nucleus of one token may lie below it (p under the top probability, a flat distribution): the
      // top token is always kept.
      const float cutoff = (1.0f - params_.top_p) / static_cast<float>(n - 1) * (1.0f - 1e-4f);
      int32_t top = 0;
      for (int i = 0; i < n; i++) {
        if (by_prob(i, top)) top = i;
        if (probs_[i] >= cutoff) order_.push_back(i);
      }
      if (probs_[top] < cutoff) order_.push_back(top);
      std::sort(order_.begin(), order_.end(), by_prob);
      sorted = true;
    }
    // After a top-k cut, p is a share of the mass top-k kept (the distribution renormalised); otherwise
    // of the whole distribution (the skipped tokens count towards it).
    float mass = 0.0f;
    for (int32_t id : order_) mass += probs_[id];
    float cum = 0.0f;
    size_t last = order_.size() - 1;
    for (size_t i = 0; i < order_.size(); i++) {
      cum += probs_[order_[i]];
      if (cum > params_.top_p * (top_k_cut ? mass : 1.0f)) {
        last = i;
        break;
      }
    }
    order_.resize(last + 1);
  }
  if (!sorted) {
    for (int i = 0; i < n; i++) order_.push_back(i);
  }
  float pmax = 0.0f;
  for (int32_t id : order_) pmax = std::max(pmax, probs_[id]);
  const float floor = params_.min_p * pmax;
  d.ids.clear();
  d.weights.clear();
  d.total = 0.0f;
  for (int32_t id : order_) {
    // (A token with no mass, a grammar's forbidden one, is no candidate: a draw's rounding fallback, the last
    // candidate, must never be one.)
    if ((params_.min_p > 0.0f && probs_[id] < floor) || probs_[id] <= 0.0f) continue;
    d.ids.push_back(id);
    d.weights.push_back(probs_[id]);
    d.total += probs_[id];
  }
}

int32_t Sampler::sample(const float* logits) {
  if (params_.greedy()) return static_cast<int32_t>(argmax(logits, vocab_));
  distribution(logits, dist_);
  return dist_.draw(rng_.uniform());
}

}  // namespace jf
