#include "decode/logit_rules.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"

namespace jf {

void LogitRulesSpec::validate(int vocab) const {
  for (const auto& [t, b] : bias) {
    if (t < 0 || t >= vocab) throw Error("logit_bias: token " + std::to_string(t) + " is outside the vocabulary (0.." + std::to_string(vocab - 1) + ")");
    if (!std::isfinite(b) || b < -100.0f || b > 100.0f) throw Error("logit_bias: the bias of token " + std::to_string(t) + " must be within -100..100");
  }
  if (!std::isfinite(presence_penalty) || presence_penalty < -2.0f || presence_penalty > 2.0f) throw Error("presence_penalty must be within -2..2");
  if (!std::isfinite(frequency_penalty) || frequency_penalty < -2.0f || frequency_penalty > 2.0f) throw Error("frequency_penalty must be within -2..2");
  if (!std::isfinite(repeat_penalty) || repeat_penalty <= 0.0f || repeat_penalty > 10.0f) throw Error("repeat penalty must be within 0..10 (1: off)");
  if (repeat_last_n < 0) throw Error("repeat-last-n must be >= 0");
}

RuleState::RuleState(const LogitRulesSpec* spec, std::span<const int32_t> history, size_t n_prompt) : spec_(spec) {
  if (!active()) return;
  if (spec_->grammar) grammar_ = spec_->grammar->start();
  const size_t from = std::min(n_prompt, history.size());
  for (size_t i = 0; i < history.size(); i++) {
    if (i >= from && spec_->grammar && (grammar_ = spec_->grammar->advance(grammar_, history[i])).dead())
      throw Error("grammar: the text already generated does not follow the grammar");
    remember(history[i], i >= from);
  }
}

// The penalties' memory of a token, kept only where a penalty reads it (a walk copies the state every forward).
void RuleState::remember(int32_t token, bool generated) {
  if (generated && (spec_->presence_penalty != 0.0f || spec_->frequency_penalty != 0.0f)) generated_[token]++;
  if (spec_->repeat_penalty == 1.0f || spec_->repeat_last_n <= 0) return;
  if (static_cast<int>(recent_.size()) < spec_->repeat_last_n) {
    recent_.push_back(token);
  } else {
    recent_[recent_next_] = token;
    recent_next_ = (recent_next_ + 1) % recent_.size();
  }
}

void RuleState::advance(int32_t token) {
  if (!active()) return;
  if (spec_->grammar) grammar_ = spec_->grammar->advance(grammar_, token);
  remember(token, true);
}

void RuleState::apply(const float* logits, int vocab, float* out) const {
  std::copy(logits, logits + vocab, out);
  if (!active()) return;
  if (spec_->repeat_penalty != 1.0f) {
    std::vector<int32_t> seen = recent_;
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t t : seen) {
      if (t < 0 || t >= vocab) continue;
      out[t] = out[t] > 0 ? out[t] / spec_->repeat_penalty : out[t] * spec_->repeat_penalty;
    }
  }
  if (spec_->presence_penalty != 0.0f || spec_->frequency_penalty != 0.0f) {
    for (const auto& [t, n] : generated_)
      if (t >= 0 && t < vocab) out[t] -= spec_->presence_penalty + spec_->frequency_penalty * static_cast<float>(n);
  }
  for (const auto& [t, b] : spec_->bias)
    if (t < vocab) out[t] = b <= -100.0f ? -INFINITY : out[t] + b;
  if (!spec_->grammar) return;
  if (grammar_.dead()) throw Error("grammar: the text has left the grammar");
  const TokenMask& m = spec_->grammar->allowed(grammar_);
  bool any = false;
  for (int w = 0; w * 64 < vocab; w++) {
    const uint64_t bits = m[static_cast<size_t>(w)];
    any = any || bits != 0;
    if (bits == ~uint64_t{0}) continue;
    const int end = std::min(vocab, w * 64 + 64);
    for (int t = w * 64; t < end; t++)
      if (!((bits >> (t - w * 64)) & 1)) out[t] = -INFINITY;
  }
  if (!any) throw Error("grammar: no token of the vocabulary can continue the text here");
}

int32_t RuleState::greedy(const float* logits, int vocab, std::vector<float>& scratch) const {
  scratch.resize(static_cast<size_t>(vocab));
  apply(logits, vocab, scratch.data());
  int32_t best = 0;
  for (int t = 1; t < vocab; t++)
    if (scratch[t] > scratch[best]) best = t;
  return best;
}

int32_t pick_token(const ForwardResult& rows, int r, bool greedy, Sampler& sampler, RuleState* walk) {
  if (!walk) return greedy ? rows.greedy(r) : sampler.sample(rows.logits(r));
  thread_local std::vector<float> ruled;
  const int vocab = rows.vocab_size();
  int32_t t;
  if (greedy) {
    t = walk->greedy(rows.logits(r), vocab, ruled);
  } else {
    ruled.resize(static_cast<size_t>(vocab));
    walk->apply(rows.logits(r), vocab, ruled.data());
    t = sampler.sample(ruled.data());
  }
  walk->advance(t);
  return t;
}

std::vector<int32_t> RuleState::forced(int max) const {
  if (!active() || !spec_->grammar || !spec_->jump_forward) return {};
  return spec_->grammar->forced_tokens(grammar_, max);
}

bool RuleState::draft_step(TokenGrammar::State& at, int32_t token) const {
  if (!active()) return true;
  const auto ban = spec_->bias.find(token);
  if (ban != spec_->bias.end() && ban->second <= -100.0f) return false;
  if (!spec_->grammar) return true;
  return !(at = spec_->grammar->advance(at, token)).dead();
}

bool RuleState::allows(int32_t token) const {
  if (!active() || !spec_->grammar) return true;
  if (grammar_.dead()) return false;
  return mask_has(spec_->grammar->allowed(grammar_), token);
}

}  // namespace jf
