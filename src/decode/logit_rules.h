// What shapes the next-token distribution before the sampler: a grammar the text must follow (a mask),
// logit biases, and repetition penalties (OpenAI's presence and frequency penalties over the generated
// tokens; llama.cpp's repeat penalty over the last tokens, prompt included).
//
// Every decoder verifies its drafts through these rules, so its output is exactly constrained `ar`'s: a row's
// greedy token is the argmax of the row's logits after the rules, a sampled one is drawn from them, with the
// rules' state advanced along the path being verified. Tokens the grammar forces are offered as drafts
// (jump-forward), which the same verification accepts.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "grammar/token_grammar.h"
#include "model/forward_pass.h"
#include "sample/sampler.h"

namespace jf {

struct LogitRulesSpec {
  std::shared_ptr<TokenGrammar> grammar;  // null: no grammar
  std::map<int32_t, float> bias;          // added to a token's logit (-100 or less: the token is banned)
  float presence_penalty = 0.0f;          // subtracted once from every token generated so far
  float frequency_penalty = 0.0f;         // subtracted per occurrence among the generated tokens
  float repeat_penalty = 1.0f;            // divides (positive) or multiplies (negative) the logits of ...
  int repeat_last_n = 64;                 // ... the tokens among the last this many of the text
  bool jump_forward = true;               // decoders send the grammar's forced tokens as drafts
  bool active() const {
    return grammar || !bias.empty() || presence_penalty != 0.0f || frequency_penalty != 0.0f || repeat_penalty != 1.0f;
  }
  void validate(int vocab) const;  // throws jf::Error naming the bad value
};

// The rules' state after a text; copied to walk along a draft path.
class RuleState {
 public:
  RuleState() = default;
  // `history`: the prompt and any text already generated; `n_prompt`: how much of it is prompt.
  RuleState(const LogitRulesSpec* spec, std::span<const int32_t> history, size_t n_prompt);
  bool active() const { return spec_ && spec_->active(); }
  // The token's logit row with the rules applied, into `out` (vocab floats); the grammar's forbidden tokens
  // get -inf. Throws jf::Error when the grammar allows no token at all.
  void apply(const float* logits, int vocab, float* out) const;
  // The largest logit after the rules (the lowest id among equals, as ForwardResult::greedy).
  int32_t greedy(const float* logits, int vocab, std::vector<float>& scratch) const;
  void advance(int32_t token);
  // Tokens the grammar forces next (at most max): jump-forward drafts.
  std::vector<int32_t> forced(int max) const;
  // Whether the grammar allows `token` next (true without a grammar).
  bool allows(int32_t token) const;
  // Drafts walked without masks: `at` (from draft_start) advanced past `token`; false where the rules refuse
  // it there (its bytes leave the grammar, or a bias of -100 bans it), so it can never be accepted.
  TokenGrammar::State draft_start() const { return grammar_; }
  bool draft_step(TokenGrammar::State& at, int32_t token) const;

 private:
  const LogitRulesSpec* spec_ = nullptr;
  TokenGrammar::State grammar_;
  std::unordered_map<int32_t, int> generated_;  // token -> times generated
  std::vector<int32_t> recent_;                 // the last repeat_last_n tokens, a ring
  size_t recent_next_ = 0;
  void remember(int32_t token, bool generated);
};

// Row r's token: its greedy token, or a draw from its distribution (`sampler`), after the rules of `walk`
// when given, which then advances past the token. What every decoder's verification picks.
int32_t pick_token(const ForwardResult& rows, int r, bool greedy, Sampler& sampler, RuleState* walk);

}  // namespace jf
