// The server's model loop: one thread owns the model; each step it gathers the rows of every active
// sequence (a prefill chunk, or the pending token plus whatever its decoder drafts) into one multi-sequence
// forward, and hands each sequence its logits. Sequences join and leave between steps (continuous
// batching). Knows nothing of HTTP or text: jobs are token ids in, token ids out, reported to an observer.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "decode/decoder.h"
#include "decode/options.h"
#include "serve/cost_curve.h"
#include "serve/metrics.h"
#include "serve/scoring.h"

namespace jf {

enum class FinishReason { Eos, Length, ContextFull, Stop, Cancelled, Error };
std::string finish_reason_name(FinishReason r);

// Told what happens to one job, always on the scheduler's thread.
class JobObserver {
 public:
  virtual ~JobObserver() = default;
  // Tokens committed by the last forward. Returning false ends the job after them (a stop string matched).
  virtual bool on_tokens(std::span<const int32_t> tokens) = 0;
  // For a job that asked for logprobs, just before on_finished: one entry per scored token.
  virtual void on_logprobs(std::vector<TokenLogprob> scored) { (void)scored; }
  // Called once, last. `error` is set for FinishReason::Error.
  virtual void on_finished(const GenerationResult& result, FinishReason why, const std::string& error) = 0;
};

struct Job {
  std::vector<int32_t> prompt;
  GenerationConfig gen;
  DecoderOptions decoder;  // validated by whoever builds the job
  std::shared_ptr<JobObserver> observer;
  bool reuse_prefix = true;  // may start from keys and values a sequence already holds (llama-server's cache_prompt)
  // >= 0: once generated, the text is scored (Scorer) and each generated token's logprob and its `logprobs`
  // best alternatives reported; with score_prompt, the prompt's tokens after the first too (OpenAI's echo).
  int logprobs = -1;
  bool score_prompt = false;
  std::atomic<bool> cancel{false};  // any thread may set it (the client went away); honoured at the next step
};

struct SchedulerOptions {
  int parallel = 4;        // sequences decoded at once, each with its own KV cache
  int context = 2048;      // KV slots per sequence
  DType kv_type = DType::F32;
  int queue = 64;          // jobs waiting for a sequence slot; more are refused
  int prefill_chunk = 128; // most prompt tokens one sequence puts into a step
  // Draft rows per sequence when several decode together: see CostCurve::rows_per_sequence. 0: no cap.
  double draft_tolerance = 1.1;
  int max_rows = 64;
  // Tokens of finished requests (prompt and output) that pld requests draft from, shared by all of them, so
  // a text seen once speeds up the requests that repeat it. 0: each pld request drafts from its own text.
  // A request with ngram-memory=0 neither reads nor adds to it.
  int pld_memory = 1 << 16;
  // A sequence keeps its cache after a request, and a prompt that starts with that text (a conversation's
  // next turn) skips prefilling it; a prompt that starts like another sequence's text (a shared system
  // prompt) gets those keys and values copied: the same bits (batch invariance), less time to first token.
  bool reuse_prefix = true;
  // Tests only: the first step waits (10 s at most) until this many jobs are queued, so that they decode
  // together even on a machine too busy to overlap their arrival by timing.
  int gather_first = 0;
};

class Scheduler {
 public:
  // `curve` may be empty (no draft cap). `metrics` may be null.
  Scheduler(ForwardPass& fwd, const SchedulerOptions& opts, CostCurve curve, Metrics* metrics);
  ~Scheduler();

  enum class Admit { Queued, QueueFull, Draining };
  // Thread-safe. The job's observer hears of it from now on, unless it is refused.
  Admit submit(std::shared_ptr<Job> job);

  // The model loop: returns after shutdown(). Runs on the caller's thread.
  void run();
  // Testing without threads: admits waiting jobs and runs one forward; returns false when idle.
  bool step();
  // Refuse new jobs; the ones in flight continue.
  void begin_drain();
  // Cancel everything still queued or running and make run() return.
  void shutdown();
  // Jobs queued or running.
  int in_flight() const;
  int active() const { return active_count_.load(); }
  int queued() const;
  const CostCurve& cost_curve() const { return curve_; }
  // Rows each sequence may put into a forward when `decoding` sequences decode together.
  int row_cap(int decoding) const;

 private:
  struct Slot;
  // Takes queued jobs for the free slots under the lock, then starts them outside it (slot choice and KV
  // prefix copies take time that submit() must not wait for).
  void admit();
  void start(std::shared_ptr<Job> job);
  void consume(Slot& s, const ForwardResult& result, double seconds, int cap);
  // The generation is over: finish, or first score the text when the job asked for logprobs.
  void complete(Slot& s, FinishReason why);
  void forward_each_alone(double t0, int cap);
  static int held_prefix(const Slot& slot, const std::vector<int32_t>& prompt);
  void finish(Slot& slot, FinishReason why, const std::string& error = {});

  ForwardPass& fwd_;
  SchedulerOptions opts_;
  CostCurve curve_;
  Metrics* metrics_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<SequenceInput*> inputs_;
  std::vector<Slot*> stepping_;
  std::vector<int> cache_before_;  // each stepping sequence's cache size before the forward
  std::shared_ptr<PldMemory> pld_memory_;  // used on the model thread only (admission, decode loops)

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool draining_ = false, stopping_ = false;
  std::atomic<int> active_count_{0};
};

}  // namespace jf
