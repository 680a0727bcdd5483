#include "serve/scheduler.h"

#include <algorithm>
#include <chrono>

#include "base/error.h"
#include "base/timer.h"
#include "decode/pld.h"

namespace jf {

std::string finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Eos: return "eos";
    case FinishReason::Length: return "length";
    case FinishReason::ContextFull: return "context";
    case FinishReason::Stop: return "stop";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "?";
}

// A sequence slot: its KV cache lives as long as the scheduler; a job borrows it from admission to finish.
struct Scheduler::Slot {
  explicit Slot(ForwardPass& fwd, const SchedulerOptions& o) : session(fwd, o.context, o.kv_type) {}
  Session session;
  std::shared_ptr<Job> job;
  std::unique_ptr<Decoder> decoder;
  std::unique_ptr<Generation> generation;
  bool stop_requested = false;  // the observer matched a stop string
  size_t committed_before = 0;  // tokens before the current step
  std::vector<int32_t> cached;  // while idle: the text whose keys and values fill the cache's first slots
  std::unique_ptr<Scorer> scorer;  // after the generation, while its text is scored for logprobs
  FinishReason scored_why = FinishReason::Length;
};

namespace {

// The common prefix of a cache's text (its first `held` tokens) and a prompt, less the prompt's last token
// (always the first input of decoding).
int common_prefix(std::span<const int32_t> text, size_t held, const std::vector<int32_t>& prompt) {
  const size_t limit = std::min({text.size(), held, prompt.empty() ? size_t{0} : prompt.size() - 1});
  size_t n = 0;
  while (n < limit && text[n] == prompt[n]) n++;
  return static_cast<int>(n);
}

}  // namespace

// How much of `prompt` the slot's cache holds: an idle slot its last text's kept part, a busy one (between
// forwards) the part of its text the generation vouches for.
int Scheduler::held_prefix(const Slot& s, const std::vector<int32_t>& prompt) {
  if (!s.job) return common_prefix(s.cached, s.cached.size(), prompt);
  if (!s.generation) return 0;
  return common_prefix(s.generation->context().history(), static_cast<size_t>(s.generation->reusable_cache_prefix()), prompt);
}

Scheduler::Scheduler(ForwardPass& fwd, const SchedulerOptions& opts, CostCurve curve, Metrics* metrics)
    : fwd_(fwd), opts_(opts), curve_(std::move(curve)), metrics_(metrics) {
  if (opts_.parallel < 1) throw Error("--parallel must be >= 1");
  if (opts_.queue < 0) throw Error("--queue must be >= 0");
  if (opts_.prefill_chunk < 1) throw Error("the prefill chunk must be >= 1");
  if (opts_.pld_memory < 0) throw Error("--pld-memory must be >= 0");
  if (opts_.pld_memory > 0) pld_memory_ = std::make_shared<PldMemory>(opts_.pld_memory, DecoderOptions{}.ngram_max);
  for (int i = 0; i < opts_.parallel; i++) {
    slots_.push_back(std::make_unique<Slot>(fwd_, opts_));
    // Every decoder prices its rows on the start-up curve (a sequence's timings would mix in the batch's).
    if (!curve_.empty()) slots_.back()->session.row_cost().set_curve(curve_.points());
  }
}

Scheduler::~Scheduler() = default;

Scheduler::Admit Scheduler::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard lock(mu_);
    if (draining_ || stopping_) return Admit::Draining;
    if (static_cast<int>(queue_.size()) >= opts_.queue + opts_.parallel - active_count_.load()) return Admit::QueueFull;
    queue_.push_back(std::move(job));
  }
  wake_.notify_all();
  return Admit::Queued;
}

int Scheduler::queued() const {
  std::lock_guard lock(mu_);
  return static_cast<int>(queue_.size());
}

int Scheduler::in_flight() const { return queued() + active_count_.load(); }

int Scheduler::row_cap(int decoding) const {
  if (curve_.empty() || opts_.draft_tolerance <= 0) return opts_.max_rows;
  return curve_.rows_per_sequence(decoding, opts_.draft_tolerance, opts_.max_rows);
}

void Scheduler::begin_drain() {
  std::lock_guard lock(mu_);
  draining_ = true;
}

void Scheduler::shutdown() {
  {
    std::lock_guard lock(mu_);
    draining_ = stopping_ = true;
  }
  wake_.notify_all();
}

void Scheduler::admit() {
  for (;;) {
    std::vector<std::shared_ptr<Job>> taken;
    {
      std::lock_guard lock(mu_);
      while (!queue_.empty() && active_count_.load() < opts_.parallel) {
        taken.push_back(std::move(queue_.front()));
        queue_.pop_front();
        active_count_++;  // counted as active from here, so in_flight() never misses it
      }
    }
    bool cancelled = false;
    for (auto& job : taken) {
      if (!job->cancel.load()) {
        start(std::move(job));
        continue;
      }
      // Gone before it started: no sequence (nor its kept cache) involved; its slot goes to the next one.
      cancelled = true;
      active_count_--;
      if (metrics_) metrics_->tokens(static_cast<int64_t>(job->prompt.size()), 0);
      job->observer->on_finished(GenerationResult{}, FinishReason::Cancelled, {});
    }
    if (!cancelled) return;
  }
}

// On the model thread, with a slot free (admit() counted the job as active).
void Scheduler::start(std::shared_ptr<Job> job) {
  // The free slot whose cache holds the longest part of the prompt (a conversation's next turn goes
  // back to the slot of its last one); ties: the first. When another slot, busy or not, holds more of it
  // (a system prompt several clients send), its keys and values are copied over.
  const std::vector<int32_t>& prompt = job->prompt;
  const bool reuse = opts_.reuse_prefix && job->reuse_prefix;
  Slot* best = nullptr;
  int best_reuse = -1;
  for (auto& slot : slots_) {
    if (slot->job) continue;
    const int r = reuse ? held_prefix(*slot, prompt) : 0;
    if (r > best_reuse) best = slot.get(), best_reuse = r;
  }
  JF_CHECK(best, "no free slot for an admitted job");
  Slot* donor = nullptr;
  for (auto& slot : slots_) {
    if (slot.get() == best || !reuse) continue;
    const int r = held_prefix(*slot, prompt);
    if (r > best_reuse) donor = slot.get(), best_reuse = r;
  }
  if (donor) {
    best->session.cache().copy_prefix(donor->session.cache(), best_reuse);
    best->cached.clear();
  }
  Slot& s = *best;
  s.job = std::move(job);
  s.stop_requested = false;
  s.committed_before = 0;
  try {
    DecoderOptions d = s.job->decoder;
    if (d.name == "pld" && d.ngram_memory > 0) d.pld_memory = pld_memory_;
    s.decoder = make_decoder(d);
    TokenSink sink = [&s](std::span<const int32_t> toks) {
      if (!s.job->observer->on_tokens(toks)) s.stop_requested = true;
    };
    s.generation = std::make_unique<Generation>(*s.decoder, s.session, s.job->prompt, s.job->gen, std::move(sink),
                                                opts_.prefill_chunk, best_reuse);
    s.cached.clear();
    if (s.generation->finished()) complete(s, FinishReason::Length);
  } catch (const std::exception& e) {
    finish(s, FinishReason::Error, e.what());
  }
}

void Scheduler::finish(Slot& s, FinishReason why, const std::string& error) {
  static const GenerationResult kEmpty;
  const GenerationResult& r = s.generation ? s.generation->result() : kEmpty;
  if (metrics_) {
    const auto reused = r.stats.counters.find("prompt_tokens_reused");
    metrics_->tokens(static_cast<int64_t>(s.job->prompt.size()), static_cast<int64_t>(r.tokens.size()),
                     reused == r.stats.counters.end() ? 0 : reused->second);
  }
  std::shared_ptr<Job> job = std::move(s.job);
  job->observer->on_finished(r, why, error);
  // Keep what the cache holds of the finished text for a prompt that continues it (nothing after an error).
  int keep = s.generation && why != FinishReason::Error && opts_.reuse_prefix ? s.generation->reusable_cache_prefix() : 0;
  keep = std::min(keep, s.session.cache().size());  // a scoring pass may have stopped short of the last token
  const std::vector<int32_t>& text = s.generation ? s.generation->context().history() : job->prompt;
  s.cached.assign(text.begin(), text.begin() + keep);
  s.session.cache().truncate(keep);
  s.scorer.reset();
  s.generation.reset();  // destroys a suspended decode loop (its locals) before its decoder
  s.decoder.reset();
  s.job.reset();
  active_count_--;
}

bool Scheduler::step() {
  admit();
  inputs_.clear();
  stepping_.clear();
  cache_before_.clear();
  for (auto& slot : slots_) {
    if (!slot->job) continue;
    if (slot->job->cancel.load()) {
      finish(*slot, FinishReason::Cancelled);
      continue;
    }
    inputs_.push_back(slot->scorer ? slot->scorer->next_input(slot->session.cache()) : slot->generation->next_input());
    stepping_.push_back(slot.get());
    cache_before_.push_back(slot->session.cache().size());
  }
  if (inputs_.empty()) return false;

  int64_t rows = 0;
  for (const SequenceInput* in : inputs_) rows += static_cast<int64_t>(in->tokens.size());
  // Each sequence's next forward shares the batch with the sequences decoding now and those finishing
  // their prefill in this step.
  const int cap = row_cap(std::max(1, static_cast<int>(stepping_.size())));
  const double t0 = now_seconds();
  ForwardResult result;
  try {
    result = fwd_.forward(inputs_);
  } catch (const std::exception&) {
    forward_each_alone(t0, cap);
    return true;
  }
  const double seconds = now_seconds() - t0;
  if (metrics_) metrics_->forward(rows);
  int offset = 0;
  for (size_t i = 0; i < stepping_.size(); i++) {
    const int n = static_cast<int>(inputs_[i]->logit_rows.size());
    const ForwardResult own = result.slice(offset, n);
    offset += n;  // before consume(): a finished generation takes its input along
    // The other sequences' rows of this step, prefill chunks included, as the next step's estimate: this
    // sequence's rows are priced at the margin of theirs (decode/row_cost.h).
    if (stepping_[i]->generation)
      stepping_[i]->generation->context().set_shared_rows(static_cast<int>(rows - static_cast<int64_t>(inputs_[i]->tokens.size())));
    consume(*stepping_[i], own, seconds, cap);
  }
  return true;
}

// A forward that throws (one sequence's bad input, or its full cache) must fail only the sequences it
// is about: the caches go back to where they were, and each sequence runs alone.
void Scheduler::forward_each_alone(double t0, int cap) {
  for (size_t i = 0; i < stepping_.size(); i++) stepping_[i]->session.cache().truncate(cache_before_[i]);
  for (size_t i = 0; i < stepping_.size(); i++) {
    ForwardResult result;
    try {
      result = fwd_.forward(*inputs_[i]);
    } catch (const std::exception& e) {
      stepping_[i]->session.cache().truncate(cache_before_[i]);
      finish(*stepping_[i], FinishReason::Error, e.what());
      continue;
    }
    if (metrics_) metrics_->forward(static_cast<int64_t>(inputs_[i]->tokens.size()));
    consume(*stepping_[i], result, now_seconds() - t0, cap);
  }
}

// Hands a sequence its rows of logits and finishes it when its generation is over.
void Scheduler::consume(Slot& s, const ForwardResult& result, double seconds, int cap) {
  if (s.scorer) {
    s.scorer->consume(result);
    if (!s.scorer->done()) return;
    s.job->observer->on_logprobs(s.scorer->take());
    return finish(s, s.scored_why);
  }
  const bool was_decoding = !s.generation->prefilling();
  s.generation->context().set_row_cap(cap);
  try {
    s.generation->consume(result, seconds);
  } catch (const std::exception& e) {
    return finish(s, FinishReason::Error, e.what());
  }
  const GenerationResult& r = s.generation->result();
  if (was_decoding && metrics_) metrics_->committed(static_cast<int>(r.tokens.size() - s.committed_before));
  s.committed_before = r.tokens.size();
  if (s.generation->finished()) {
    const FinishReason why = r.stop == StopReason::Eos      ? FinishReason::Eos
                             : r.stop == StopReason::Length ? FinishReason::Length
                                                            : FinishReason::ContextFull;
    complete(s, s.stop_requested ? FinishReason::Stop : why);
  } else if (s.stop_requested) {
    complete(s, FinishReason::Stop);
  }
}

void Scheduler::complete(Slot& s, FinishReason why) {
  if (s.job->logprobs < 0) return finish(s, why);
  const std::vector<int32_t>& text = s.generation->context().history();
  const int from = s.job->score_prompt ? 1 : static_cast<int>(s.job->prompt.size());
  s.scorer = std::make_unique<Scorer>(text, from, s.generation->reusable_cache_prefix(), s.job->logprobs, opts_.prefill_chunk);
  s.scored_why = why;
  if (!s.scorer->done()) return;  // scored in the next steps, beside the other sequences
  s.job->observer->on_logprobs(s.scorer->take());
  finish(s, why);
}

void Scheduler::run() {
  if (opts_.gather_first > 0) {
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, std::chrono::seconds(10),
                   [&] { return stopping_ || static_cast<int>(queue_.size()) >= opts_.gather_first; });
  }
  for (;;) {
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || active_count_.load() > 0; });
      if (stopping_) break;
    }
    step();
  }
  std::lock_guard lock(mu_);
  for (auto& slot : slots_)
    if (slot->job) finish(*slot, FinishReason::Cancelled);
  while (!queue_.empty()) {
    std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    job->observer->on_finished(GenerationResult{}, FinishReason::Cancelled, {});
  }
}

}  // namespace jf
