// The interface every decoding strategy implements, and what a generation returns.
// A strategy only decides which tokens to forward and which to commit; the shared DecodeContext does the
// bookkeeping (stop conditions, streaming, statistics) so every strategy stops exactly where AR would.
#pragma once
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "decode/decode_loop.h"
#include "decode/logit_rules.h"
#include "decode/session.h"
#include "decode/trace.h"
#include "sample/sampler.h"

namespace jf {

enum class StopReason { Eos, Length, ContextFull };
std::string stop_reason_name(StopReason r);

struct GenerationConfig {
  int max_new_tokens = 256;
  bool ignore_eos = false;
  std::vector<int32_t> eos_ids;  // tokens that end generation (the tokenizer's end-of-generation set)
  SamplingParams sampling;
  // A grammar, logit biases, penalties (decode/logit_rules.h): every decoder verifies under them.
  LogitRulesSpec rules = {};
  // When set, every generation forward is appended here (rows, their roles, committed tokens); the caller
  // owns it. A pointer in the config so that every path that runs a Decoder can trace without new arguments.
  ForwardTrace* trace = nullptr;
};

struct GenerationStats {
  int n_prompt = 0;
  int n_tokens = 0;            // generated tokens
  int64_t n_forwards = 0;      // generation forwards (the prefill of prompt[0 .. n-2] is not counted)
  int64_t n_forward_rows = 0;  // tokens pushed through the model by those forwards
  double prefill_seconds = 0;
  double gen_seconds = 0;      // wall time of generation, prefill excluded
  double forward_seconds = 0;  // part of gen_seconds spent inside the model forward
  std::vector<int64_t> accepted_histogram;  // [k] = forwards that committed k tokens
  std::map<std::string, int64_t> counters;  // strategy-specific (pool hits, candidates, ...)
  // The forward pass's submissions, waits and copies during decoding (ForwardPass::device_syncs; a GPU's: all
  // zero on the CPU). In a batch they include the other sequences' (a server's); alone, one per forward.
  DeviceSyncs syncs;

  double tpf() const { return n_forwards ? double(n_tokens) / n_forwards : 0.0; }
  // A strategy counter's value; 0 when the strategy never counted it.
  int64_t counter(const std::string& name) const {
    const auto it = counters.find(name);
    return it == counters.end() ? 0 : it->second;
  }
  double tps() const { return gen_seconds > 0 ? n_tokens / gen_seconds : 0.0; }
};

struct GenerationResult {
  std::vector<int32_t> tokens;  // generated ids, without the end-of-generation token
  StopReason stop = StopReason::Length;
  GenerationStats stats;
};

// Receives committed tokens as they are produced (for streaming).
using TokenSink = std::function<void(std::span<const int32_t>)>;

// State shared between the driver of a generation (class Generation) and a strategy's decode loop.
class DecodeContext {
 public:
  DecodeContext(Session& s, const GenerationConfig& cfg, const TokenSink& sink, GenerationResult& out);

  Session& session() { return session_; }
  const GenerationConfig& config() const { return cfg_; }
  // The last committed token (initially the last prompt token): it has no KV entry yet and is the
  // first input of the next forward.
  int32_t pending() const { return pending_; }
  // Tokens of prompt + generated so far (for drafting from context).
  const std::vector<int32_t>& history() const { return history_; }
  bool done() const { return done_; }
  // Rows the next forward may carry: the free KV slots, capped by the driver's row budget (a server with
  // many sequences gives each fewer draft rows, docs/ARCHITECTURE.md). The cap is >= 1, so room() < 1
  // means the context is full.
  int room() const { return std::min(session_.cache().capacity() - session_.cache().size(), row_cap_); }
  void set_row_cap(int cap) { row_cap_ = std::max(1, cap); }
  // The row-pricing rule (decode/row_cost.h) on the session's cost of a forward; every decoder sizes its
  // forwards by it. `shared_rows`: rows other sequences add to the same forward (a server's batch).
  RowPricer pricer() const { return RowPricer(session_.row_cost(), shared_rows_); }
  void set_shared_rows(int rows) { shared_rows_ = std::max(0, rows); }
  // Tokens still allowed by max_new_tokens.
  int remaining() const { return cfg_.max_new_tokens - static_cast<int>(out_.tokens.size()); }
  bool is_eos(int32_t t) const;

  // `co_await ctx.forward(in)`: suspends the loop until its driver has run `in` through the model. Under
  // logit rules the rows' logits come back (their greedy token is taken after the rules).
  ForwardAwaiter forward(SequenceInput& in) {
    if (rules_.active()) in.need = SequenceInput::Need::Logits;
    return ForwardAwaiter{slot_, in};
  }
  // The logit rules at the committed text, copied for a walk along a path being verified (accept_greedy and
  // friends advance it); null without rules.
  RuleState* rule_walk() {
    if (!rules_.active()) return nullptr;
    walk_ = rules_;
    return &walk_;
  }
  // Jump-forward: the tokens the grammar forces after the pending token lead the draft (overwriting its first
  // ones; a draft that disagrees with them is cut after them); at most `max`. Returns how many.
  int lead_with_forced(std::vector<int32_t>& draft, int max);
  // Drafts the rules refuse are never accepted, so they are not worth rows: how many leading tokens of
  // `chain` (after the committed text) the rules allow (counted as draft_tokens_refused past them).
  int allowed_draft(std::span<const int32_t> chain);
  // The rules at the committed text (a tree's drafts walk them: RuleState::draft_step); null without rules.
  const RuleState* rules() const { return rules_.active() ? &rules_ : nullptr; }
  ForwardSlot& slot() { return slot_; }
  // After a forward whose input set draft_logits: whether the model gave drafts, and the greedy token of the
  // draft logits of its logit row r (-1 without). A backend may compute a row only when asked
  // (ForwardResult::draft_logits): ask for the rows used. Timed, with draft_chain, as draft work.
  bool drafted() const { return slot_.result.drafted(); }
  int32_t draft_greedy(int r);
  // ForwardResult::chain from the last forward's logit row r (the session's cache ending with it), timed as
  // draft work.
  int draft_chain(int r, int32_t first, int count, int32_t* out);
  // The draft logits of the last forward's logit row r (null without), and ForwardResult::expand_tree / end_tree
  // on it: timed as draft work.
  const float* draft_logits(int r);
  int expand_tree(int r, std::span<const DraftNode> nodes, int k, DraftGuess* out);
  void end_tree() { slot_.result.end_tree(); }
  // The tree the last forward grew from logit row r when the input asked (ForwardResult::grown_tree).
  const GrownTree* grown_tree(int r) const { return slot_.result.grown_tree(r); }
  // Seconds of draft work on the host since the last call: priced with the forward it drafted for.
  double take_draft_seconds() { return std::exchange(draft_seconds_, 0.0); }
  // Commits tokens in order, stopping at an end-of-generation token or the length limit; records how
  // many were committed by this forward. Returns the number actually committed.
  int commit(std::span<const int32_t> tokens);
  // Appends text no forward produced (an approximate decoder's inserted tokens): as commit(), but not
  // recorded as a forward's tokens in the histogram.
  int commit_unforwarded(std::span<const int32_t> tokens);
  // Ends generation for lack of context (called when room() < 1 before a forward).
  void stop_context_full();
  void count(const std::string& counter, int64_t delta = 1) { out_.stats.counters[counter] += delta; }
  // Labels rows first .. first+count-1 of the next forward for a trace (docs: decode/trace.h); free when
  // not tracing. Call before `co_await ctx.forward(in)`; labels are cleared after each forward.
  void tag_rows(int first, int count, RowRole role, int block = 0) {
    if (!cfg_.trace || count <= 0) return;
    if (static_cast<int>(tags_.size()) < first + count) tags_.resize(static_cast<size_t>(first + count), {RowRole::Draft, -1});
    for (int r = first; r < first + count; r++) tags_[r] = {role, block};
  }

 private:
  Session& session_;
  const GenerationConfig& cfg_;
  const TokenSink& sink_;
  GenerationResult& out_;
  std::vector<int32_t> history_;
  RuleState rules_, walk_;
  int32_t pending_ = -1;
  bool done_ = false;
  int row_cap_ = 1 << 30;
  int shared_rows_ = 0;
  double draft_seconds_ = 0;
  ForwardSlot slot_;
  int append(std::span<const int32_t> tokens, bool record);
  template <class Work>
  auto draft_work(Work&& work);  // (decoder.cpp)
  std::vector<RowTag> tags_;  // labels of the next forward's rows (block -1: not labelled)
  friend class Generation;
};

// Throws jf::Error when a prompt cannot start a generation: empty, or longer than the context.
void check_prompt(std::span<const int32_t> prompt, int context_size);

// The prompt goes through the model in forwards of at most this many tokens: the workspace of a forward and
// its list of visible cache slots grow with its rows (the list quadratically), and batch invariance makes
// the result the same bits as one forward over the whole prompt.
inline constexpr int kPrefillChunk = 512;

class Decoder;

// One generation driven one forward at a time: the prompt's prefill in chunks, then the strategy's decode
// loop. next_input() says what the next forward must carry (nullptr when finished); the driver runs it,
// alone or batched with other generations' inputs, and hands back its results with consume(). Not movable:
// the loop refers to its members.
class Generation {
 public:
  // Throws jf::Error when the prompt is empty or does not fit the context, or for a bad config.
  // prefill_chunk: most prompt tokens per forward. reused_prefix: the session's cache already holds
  // prompt[0 .. reused_prefix-1] in its first slots (an earlier generation's reusable_cache_prefix());
  // only the rest is prefilled (batch invariance: the same bits as prefilling it all).
  Generation(Decoder& decoder, Session& s, std::span<const int32_t> prompt, const GenerationConfig& cfg,
             TokenSink sink = {}, int prefill_chunk = kPrefillChunk, int reused_prefix = 0);
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  SequenceInput* next_input();
  // `result`: this generation's rows of the forward; `seconds`: its wall time (shared by every sequence in the
  // batch). Rethrows the loop's errors.
  void consume(const ForwardResult& result, double seconds);
  bool finished() const { return phase_ == Phase::Finished; }
  // Ends the generation between forwards (an interrupted answer): the tokens committed so far are the
  // result and its statistics are final.
  void stop();
  bool prefilling() const { return phase_ == Phase::Prefill; }
  // How many of the first cache slots hold exactly the keys and values of history()[0 ..] (every decoder
  // keeps its committed tokens there and any unverified rows after them; tested for each): what a next
  // generation whose prompt starts with that text may keep. Call between forwards.
  int reusable_cache_prefix() const;
  DecodeContext& context() { return ctx_; }
  const GenerationResult& result() const { return out_; }
  GenerationResult take_result() { return std::move(out_); }

 private:
  enum class Phase { Prefill, Decode, Finished };
  void start_decoding();
  void finish();
  void trace_forward(const SequenceInput& in);

  Decoder& decoder_;
  Session& session_;
  GenerationConfig cfg_;
  TokenSink sink_;
  GenerationResult out_;
  DecodeContext ctx_;
  std::vector<int32_t> prompt_;
  size_t prefilled_ = 0;
  int prefill_chunk_;
  SequenceInput prefill_in_;
  DecodeLoop loop_;
  Phase phase_ = Phase::Prefill;
  double t_start_ = 0, t_decode_ = 0;
  DeviceSyncs syncs_at_decode_;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual std::string name() const = 0;
  // Prefills prompt[0 .. n-2], then decodes until a stop condition: a Generation driven as a batch of one.
  // Throws jf::Error when the prompt is empty or does not fit the context.
  GenerationResult generate(Session& s, std::span<const int32_t> prompt, const GenerationConfig& cfg,
                            const TokenSink& sink = {});
  // The strategy's loop over forwards; it ends when ctx.done() (or after ctx.stop_context_full()).
  virtual DecodeLoop decode(DecodeContext& ctx) = 0;
  // Whether it drafts from the model's draft head or layer: then the prompt runs through the draft layer too.
  virtual bool drafts_from_model() const { return false; }
};

// Plain autoregressive decoding: one token per forward.
class ArDecoder : public Decoder {
 public:
  std::string name() const override { return "ar"; }
  DecodeLoop decode(DecodeContext& ctx) override;
};

}  // namespace jf
