#include "serve/text_stream.h"

#include "base/timer.h"

namespace jf {

namespace {

// Largest n <= want such that text[0..n) does not end inside a UTF-8 character.
size_t utf8_cut(const std::string& text, size_t want) {
  size_t n = want;
  while (n > 0 && n < text.size() && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) n--;
  return n;
}

}  // namespace

TextStream::TextStream(const Tokenizer* tokenizer, std::span<const int32_t> prompt, std::vector<std::string> stop,
                       double t_submit, Metrics* metrics)
    : tokenizer_(tokenizer), stop_(std::move(stop)), t_submit_(t_submit), metrics_(metrics) {
  if (tokenizer) detok_.emplace(*tokenizer, prompt);
  for (const auto& s : stop_) max_stop_ = std::max(max_stop_, s.size());
}

bool TextStream::on_tokens(std::span<const int32_t> tokens) {
  if (!first_token_seen_ && !tokens.empty()) {
    first_token_seen_ = true;
    if (metrics_) metrics_->time_to_first_token(now_seconds() - t_submit_);
  }
  std::string piece;
  if (detok_)
    for (int32_t t : tokens) piece += detok_->push(t);
  bool news = false, go_on = false;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return false;
    unsent_tokens_ += static_cast<int>(tokens.size());
    append_locked(piece);
    const size_t before = pieces_.size();
    emit_locked(stopped_);
    news = pieces_.size() > before;
    go_on = !stopped_;
  }
  if (news && listener_) listener_();
  return go_on;
}

void TextStream::append_locked(const std::string& piece) {
  const size_t before = text_.size();
  text_ += piece;
  // A stop string may have begun in the text already held back.
  const size_t from = before >= max_stop_ ? before - max_stop_ + 1 : 0;
  size_t cut = std::string::npos;
  for (const auto& s : stop_) cut = std::min(cut, text_.find(s, from));
  if (cut != std::string::npos) {
    text_.resize(cut);
    stopped_ = true;
  }
}

void TextStream::emit_locked(bool final) {
  // Hold back what could still become the start of a stop string.
  size_t end = text_.size();
  if (!final && max_stop_ > 1) end = utf8_cut(text_, end >= max_stop_ - 1 ? end - (max_stop_ - 1) : 0);
  if (end > sent_) {
    pieces_.push_back({text_.substr(sent_, end - sent_), unsent_tokens_});
    unsent_tokens_ = 0;
    sent_ = end;
  }
}

void TextStream::on_logprobs(std::vector<TokenLogprob> scored) {
  std::lock_guard lock(mu_);
  logprobs_ = std::move(scored);
}

void TextStream::on_finished(const GenerationResult& result, FinishReason why, const std::string& error) {
  std::string tail = detok_ && !stopped_ ? detok_->finish() : std::string();
  {
    std::lock_guard lock(mu_);
    if (!stopped_) append_locked(tail);
    emit_locked(true);
    result_ = result;
    reason_ = stopped_ && why != FinishReason::Error && why != FinishReason::Cancelled ? FinishReason::Stop : why;
    error_ = error;
    finished_ = true;
    if (metrics_) metrics_->latency(now_seconds() - t_submit_);
  }
  if (listener_) listener_();
}

bool TextStream::take(std::vector<Piece>& pieces) {
  std::lock_guard lock(mu_);
  pieces.assign(pieces_.begin(), pieces_.end());
  pieces_.clear();
  return finished_;
}

bool TextStream::finished() const {
  std::lock_guard lock(mu_);
  return finished_;
}

FinishReason TextStream::reason() const {
  std::lock_guard lock(mu_);
  return reason_;
}

std::string TextStream::text() const {
  std::lock_guard lock(mu_);
  return text_;
}

}  // namespace jf
