// A job's output as text, between the scheduler thread (which reports tokens) and the HTTP thread that
// answers the request: incremental detokenization, stop strings (cut, never sent: a stop string's possible
// beginning is held back until it is decided), and one text piece per forward for streaming.
#pragma once
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "serve/metrics.h"
#include "serve/scheduler.h"
#include "tokenizer/tokenizer.h"

namespace jf {

class TextStream : public JobObserver {
 public:
  struct Piece {
    std::string text;
    int tokens = 0;  // tokens committed since the previous piece (one forward's, unless text was held back)
  };
  // tokenizer null: no text, tokens only. The text is the continuation of `prompt` as it reads after it (a
  // leading space included). t_submit: arrival time, for latency metrics (metrics may be null).
  TextStream(const Tokenizer* tokenizer, std::span<const int32_t> prompt, std::vector<std::string> stop, double t_submit,
             Metrics* metrics);

  // Called on the scheduler's thread, with no lock held, after new pieces or the finish (the HTTP side then
  // collects them with take()). Set it before the job is submitted.
  void set_listener(std::function<void()> fn) { listener_ = std::move(fn); }

  bool on_tokens(std::span<const int32_t> tokens) override;
  void on_logprobs(std::vector<TokenLogprob> scored) override;
  void on_finished(const GenerationResult& result, FinishReason why, const std::string& error) override;

  // HTTP side, never blocking: the pieces that arrived since the last call (one per forward that produced
  // text) and whether the job has finished (then every piece has been returned).
  bool take(std::vector<Piece>& pieces);
  // After finished: the outcome.
  bool finished() const;
  FinishReason reason() const;
  const std::string& error() const { return error_; }
  const GenerationResult& result() const { return result_; }
  std::string text() const;  // everything sent, after the stop cut
  // After finished: the scored tokens of a job that asked for logprobs.
  const std::vector<TokenLogprob>& logprobs() const { return logprobs_; }
  const Tokenizer* tokenizer() const { return tokenizer_; }
  // Whether the job has committed a token (its prompt is in a cache by then).
  bool has_tokens() const { return first_token_seen_.load(); }

 private:
  void append_locked(const std::string& piece);  // and cuts at the first stop string
  void emit_locked(bool final);

  const Tokenizer* tokenizer_;
  std::optional<StreamingDecoder> detok_;
  std::vector<std::string> stop_;
  size_t max_stop_ = 0;
  double t_submit_;
  Metrics* metrics_;
  std::atomic<bool> first_token_seen_{false};
  std::function<void()> listener_;

  mutable std::mutex mu_;
  std::string text_;       // detokenized so far (cut at a stop string)
  size_t sent_ = 0;        // bytes of text_ handed to pieces_
  bool stopped_ = false;   // a stop string matched
  std::deque<Piece> pieces_;
  int unsent_tokens_ = 0;
  bool finished_ = false;
  FinishReason reason_ = FinishReason::Length;
  std::string error_;
  GenerationResult result_;
  std::vector<TokenLogprob> logprobs_;  // written before finished_, read after
};

}  // namespace jf
