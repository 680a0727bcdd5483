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

int DecodeContext::commit(std::span<const int32_t> tokens) {
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
  hist[n]++;
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

void prefill(Session& s, std::span<const int32_t> prompt) {
  s.cache().truncate(0);
  const size_t n = prompt.size() - 1;  // the last prompt token is the first one decoded
  for (size_t i = 0; i < n; i += kPrefillChunk) {
    SequenceInput in;
    in.set_causal(&s.cache(), prompt.subspan(i, std::min<size_t>(kPrefillChunk, n - i)), SequenceInput::Logits::None);
    s.forward(in);
  }
}

GenerationResult Decoder::generate(Session& s, std::span<const int32_t> prompt, const GenerationConfig& cfg,
                                   const TokenSink& sink) {
  check_prompt(prompt, s.context_size());
  if (cfg.max_new_tokens < 0) throw Error("the number of tokens to generate must be >= 0");
  cfg.sampling.validate();

  GenerationResult out;
  out.stats.n_prompt = static_cast<int>(prompt.size());
  DecodeContext ctx(s, cfg, sink, out);
  ctx.history_.assign(prompt.begin(), prompt.end());
  ctx.pending_ = prompt.back();

  const double t0 = now_seconds();
  prefill(s, prompt);
  const double t1 = now_seconds();
  s.reset_counters();
  if (cfg.max_new_tokens == 0) ctx.done_ = true;
  if (!ctx.done_) decode(ctx);
  const double t2 = now_seconds();

  out.stats.prefill_seconds = t1 - t0;
  out.stats.gen_seconds = t2 - t1;
  out.stats.n_tokens = static_cast<int>(out.tokens.size());
  out.stats.n_forwards = s.n_forwards();
  out.stats.n_forward_rows = s.n_rows();
  out.stats.forward_seconds = s.forward_seconds();
  return out;
}

void ArDecoder::decode(DecodeContext& ctx) {
  Session& s = ctx.session();
  Sampler sampler(ctx.config().sampling, s.vocab_size());
  SequenceInput in;
  int32_t tok[1];
  while (!ctx.done()) {
    if (ctx.room() < 1) return ctx.stop_context_full();
    tok[0] = ctx.pending();
    in.set_causal(&s.cache(), tok, SequenceInput::Logits::Last);
    const float* logits = ctx.forward(in);
    tok[0] = sampler.sample(logits);
    ctx.commit(tok);
  }
}

}  // namespace jf
