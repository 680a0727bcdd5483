#include "decode/decoder.h"

#include <algorithm>

#include "base/error.h"
#include "base/timer.h"

namespace jf {

std::string stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::Eos: return "eos";
    case StopReason::Length: return "length";
    case StopReason::ContextFull: return "context";
  }
  return "?";
}

DecodeContext::DecodeContext(Session& s, const GenerationConfig& cfg, const TokenSink& sink, GenerationResult& out)
    : session_(s), cfg_(cfg), sink_(sink), out_(out) {}

bool DecodeContext::is_eos(int32_t t) const {
  return !cfg_.ignore_eos && std::find(cfg_.eos_ids.begin(), cfg_.eos_ids.end(), t) != cfg_.eos_ids.end();
}

// Draft work on the host, timed into draft_seconds_.
template <class Work>
auto DecodeContext::draft_work(Work&& work) {
  const double t0 = now_seconds();
  auto result = work();
  draft_seconds_ += now_seconds() - t0;
  return result;
}

int32_t DecodeContext::draft_greedy(int r) {
  return draft_work([&] { return slot_.result.draft_greedy(r); });
}

int DecodeContext::draft_chain(int r, int32_t first, int count, int32_t* out) {
  return draft_work([&] { return slot_.result.chain(r, first, count, out); });
}

const float* DecodeContext::draft_logits(int r) {
  return draft_work([&] { return slot_.result.draft_logits(r); });
}

int DecodeContext::expand_tree(int r, std::span<const DraftNode> nodes, int k, DraftGuess* out) {
  return draft_work([&] { return slot_.result.expand_tree(r, nodes, k, out); });
}

int DecodeContext::commit(std::span<const int32_t> tokens) { return append(tokens, true); }

int DecodeContext::lead_with_forced(std::vector<int32_t>& draft, int max) {
  if (!rules_.active() || max <= 0) return 0;
  const std::vector<int32_t> forced = draft_work([&] { return rules_.forced(max); });
  if (forced.empty()) return 0;
  const bool agrees = draft.size() >= forced.size() && std::equal(forced.begin(), forced.end(), draft.begin());
  if (!agrees) draft.assign(forced.begin(), forced.end());
  count("jump_forward_tokens", static_cast<int64_t>(forced.size()));
  return static_cast<int>(forced.size());
}

int DecodeContext::allowed_draft(std::span<const int32_t> chain) {
  if (!rules_.active()) return static_cast<int>(chain.size());
  TokenGrammar::State at = rules_.draft_start();
  int n = 0;
  draft_work([&] {
    while (n < static_cast<int>(chain.size()) && rules_.draft_step(at, chain[static_cast<size_t>(n)])) n++;
    return 0;
  });
  count("draft_tokens_refused", static_cast<int64_t>(chain.size()) - n);
  return n;
}

int DecodeContext::commit_unforwarded(std::span<const int32_t> tokens) { return append(tokens, false); }

int DecodeContext::append(std::span<const int32_t> tokens, bool record) {
  JF_CHECK(!done_, "commit after the generation ended");
  int n = 0;
  for (int32_t t : tokens) {
    if (is_eos(t)) {
      out_.stop = StopReason::Eos;
      done_ = true;
      break;
    }
    out_.tokens.push_back(t);
    history_.push_back(t);
    rules_.advance(t);
    pending_ = t;
    n++;
    if (remaining() <= 0) {
      out_.stop = StopReason::Length;
      done_ = true;
      break;
    }
  }
  auto& hist = out_.stats.accepted_histogram;
  if (static_cast<int>(hist.size()) <= n) hist.resize(n + 1, 0);
  if (record) hist[n]++;
  if (n > 0 && sink_) sink_(std::span<const int32_t>(out_.tokens).last(n));
  return n;
}

void DecodeContext::stop_context_full() {
  out_.stop = StopReason::ContextFull;
  done_ = true;
}

void check_prompt(std::span<const int32_t> prompt, int context_size) {
  if (prompt.empty()) throw Error("the prompt is empty (it needs at least a BOS token)");
  if (static_cast<int>(prompt.size()) > context_size)
    throw Error("the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context size " +
                std::to_string(context_size));
}

Generation::Generation(Decoder& decoder, Session& s, std::span<const int32_t> prompt, const GenerationConfig& cfg,
                       TokenSink sink, int prefill_chunk, int reused_prefix)
    : decoder_(decoder), session_(s), cfg_(cfg), sink_(std::move(sink)), ctx_(s, cfg_, sink_, out_),
      prompt_(prompt.begin(), prompt.end()), prefill_chunk_(std::max(1, prefill_chunk)) {
  check_prompt(prompt, s.context_size());
  if (cfg.max_new_tokens < 0) throw Error("the number of tokens to generate must be >= 0");
  cfg.sampling.validate();
  cfg.rules.validate(s.vocab_size());
  out_.stats.n_prompt = static_cast<int>(prompt.size());
  ctx_.history_ = prompt_;
  ctx_.rules_ = RuleState(&cfg_.rules, prompt_, prompt_.size());
  ctx_.pending_ = prompt_.back();
  JF_CHECK(reused_prefix >= 0 && reused_prefix < static_cast<int>(prompt.size()) && reused_prefix <= s.cache().size(),
           "reused prefix outside the prompt or the cache");
  s.cache().truncate(reused_prefix);
  prefilled_ = static_cast<size_t>(reused_prefix);
  if (reused_prefix > 0) ctx_.count("prompt_tokens_reused", reused_prefix);
  t_start_ = now_seconds();
  if (prefilled_ + 1 >= prompt_.size()) start_decoding();  // nothing (left) to prefill: the last token is pending
}

int Generation::reusable_cache_prefix() const {
  return std::min(session_.cache().size(), static_cast<int>(ctx_.history().size()) - 1);
}

SequenceInput* Generation::next_input() {
  if (phase_ == Phase::Prefill) {
    // prompt[0 .. n-2]; the last prompt token is the first one decoded
    const size_t n = prompt_.size() - 1;
    const size_t len = std::min<size_t>(static_cast<size_t>(prefill_chunk_), n - prefilled_);
    prefill_in_.set_causal(&session_.cache(), std::span<const int32_t>(prompt_).subspan(prefilled_, len),
                           SequenceInput::Logits::None);
    prefill_in_.draft_context = decoder_.drafts_from_model();
    return &prefill_in_;
  }
  if (phase_ == Phase::Decode) return ctx_.slot().input;
  return nullptr;
}

void Generation::consume(const ForwardResult& result, double seconds) {
  if (phase_ == Phase::Prefill) {
    prefilled_ += prefill_in_.tokens.size();
    if (prefilled_ + 1 >= prompt_.size()) start_decoding();
    return;
  }
  JF_CHECK(phase_ == Phase::Decode && ctx_.slot().input, "consume() without a pending forward");
  session_.record_forward(*ctx_.slot().input, seconds, ctx_.take_draft_seconds());
  ctx_.slot().result = result;
  const size_t n_before = out_.tokens.size();
  if (cfg_.trace) trace_forward(*ctx_.slot().input);
  try {
    loop_.resume();
  } catch (...) {
    finish();
    throw;
  }
  if (cfg_.trace) {  // the loop commits this forward's tokens before it asks for the next one
    auto& c = cfg_.trace->forwards.back().committed;
    c.assign(out_.tokens.begin() + static_cast<ptrdiff_t>(n_before), out_.tokens.end());
  }
  if (loop_.finished()) finish();
}

void Generation::trace_forward(const SequenceInput& in) {
  ForwardRecord rec;
  const int M = static_cast<int>(in.tokens.size());
  rec.tokens = in.tokens;
  // Row 0 of every strategy's forward is the pending token, history's last; causal rows follow it.
  const int base = static_cast<int>(ctx_.history().size()) - 1;
  rec.positions.resize(static_cast<size_t>(M));
  for (int r = 0; r < M; r++) rec.positions[r] = in.positions.empty() ? base + r : in.positions[r];
  rec.tags.resize(static_cast<size_t>(M));
  for (int r = 0; r < M; r++) {
    const bool labelled = r < static_cast<int>(ctx_.tags_.size()) && ctx_.tags_[r].block >= 0;
    rec.tags[r] = labelled ? ctx_.tags_[r] : RowTag{r == 0 ? RowRole::Pending : RowRole::Draft, 0};
  }
  ctx_.tags_.clear();
  // A tree's rows (every row a logit row naming its parent, some parent not the row before): their parents.
  bool branches = false;
  if (static_cast<int>(in.verify_parent.size()) == M)
    for (int r = 1; r < M; r++) branches |= in.verify_parent[static_cast<size_t>(r)] != r - 1;
  if (branches) rec.parents = in.verify_parent;
  cfg_.trace->forwards.push_back(std::move(rec));
}

const char* row_role_name(RowRole r) {
  switch (r) {
    case RowRole::Pending: return "pending";
    case RowRole::Draft: return "draft";
    case RowRole::Window: return "window";
    case RowRole::Candidate: return "candidate";
    case RowRole::Block: return "block";
  }
  return "?";
}

RowRole parse_row_role(const std::string& name) {
  for (RowRole r : {RowRole::Pending, RowRole::Draft, RowRole::Window, RowRole::Candidate, RowRole::Block})
    if (name == row_role_name(r)) return r;
  throw Error("unknown row role '" + name + "' (pending, draft, window, candidate, block)");
}

void Generation::start_decoding() {
  if (cfg_.trace) cfg_.trace->forwards.clear();
  t_decode_ = now_seconds();
  out_.stats.prefill_seconds = t_decode_ - t_start_;
  syncs_at_decode_ = session_.forward_pass().device_syncs();
  session_.reset_counters();
  phase_ = Phase::Decode;
  if (cfg_.max_new_tokens == 0) ctx_.done_ = true;
  if (ctx_.done_) return finish();
  loop_ = decoder_.decode(ctx_);
  loop_.resume();  // runs up to the first forward
  if (loop_.finished()) finish();
}

void Generation::stop() {
  if (phase_ == Phase::Finished) return;
  if (phase_ == Phase::Prefill) t_decode_ = now_seconds();  // no decoding time
  finish();
}

void Generation::finish() {
  if (phase_ == Phase::Decode) {
    const DeviceSyncs now = session_.forward_pass().device_syncs(), &then = syncs_at_decode_;
    out_.stats.syncs = {now.submissions - then.submissions, now.waits - then.waits, now.extra_fetches - then.extra_fetches,
                        now.bytes_to_host - then.bytes_to_host};
  }
  phase_ = Phase::Finished;
  out_.stats.gen_seconds = now_seconds() - t_decode_;
  out_.stats.n_tokens = static_cast<int>(out_.tokens.size());
  out_.stats.n_forwards = session_.n_forwards();
  out_.stats.n_forward_rows = session_.n_rows();
  out_.stats.forward_seconds = session_.forward_seconds();
}

GenerationResult Decoder::generate(Session& s, std::span<const int32_t> prompt, const GenerationConfig& cfg,
                                   const TokenSink& sink) {
  Generation g(*this, s, prompt, cfg, sink);
  while (SequenceInput* in = g.next_input()) {
    const double t0 = now_seconds();
    const ForwardResult result = s.forward_pass().forward(*in);
    g.consume(result, now_seconds() - t0);
  }
  return g.take_result();
}

DecodeLoop ArDecoder::decode(DecodeContext& ctx) {
  Session& s = ctx.session();
  Sampler sampler(ctx.config().sampling, s.vocab_size());
  const bool greedy = ctx.config().sampling.greedy();
  SequenceInput in;
  in.need = greedy ? SequenceInput::Need::Greedy : SequenceInput::Need::Logits;
  int32_t tok[1];
  while (!ctx.done()) {
    if (ctx.room() < 1) {
      ctx.stop_context_full();
      co_return;
    }
    tok[0] = ctx.pending();
    in.set_causal(&s.cache(), tok, SequenceInput::Logits::Last);
    const ForwardResult out = co_await ctx.forward(in);
    tok[0] = pick_token(out, 0, greedy, sampler, ctx.rule_walk());  // (the parallel decoders' pick)
    ctx.commit(tok);
  }
}

}  // namespace jf
