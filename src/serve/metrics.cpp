#include "serve/metrics.h"

#include <cstdio>

namespace jf {

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void header(std::string& out, const std::string& name, const char* type, const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void scalar(std::string& out, const std::string& name, const char* type, const std::string& help, double v) {
  header(out, name, type, help);
  out += name + " " + number(v) + "\n";
}

}  // namespace

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) i++;
  counts_[i]++;
  sum_ += v;
  count_++;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  header(out, name, "histogram", help);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); i++) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + number(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : committed_({0, 1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32}),
      latency_({0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}),
      ttft_({0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}) {}

void Metrics::request_done(int http_status) {
  std::lock_guard lock(mu_);
  requests_[http_status]++;
}

void Metrics::tokens(int64_t prompt, int64_t generated, int64_t reused) {
  std::lock_guard lock(mu_);
  prompt_tokens_ += static_cast<uint64_t>(prompt);
  generated_tokens_ += static_cast<uint64_t>(generated);
  reused_tokens_ += static_cast<uint64_t>(reused);
}

void Metrics::forward(int64_t rows) {
  std::lock_guard lock(mu_);
  forwards_++;
  forward_rows_ += static_cast<uint64_t>(rows);
}

void Metrics::committed(int tokens_in_one_forward) {
  std::lock_guard lock(mu_);
  committed_.observe(tokens_in_one_forward);
}

void Metrics::latency(double seconds) {
  std::lock_guard lock(mu_);
  latency_.observe(seconds);
}

void Metrics::time_to_first_token(double seconds) {
  std::lock_guard lock(mu_);
  ttft_.observe(seconds);
}

std::string Metrics::render(int queued, int active_sequences) const {
  std::lock_guard lock(mu_);
  std::string out;
  header(out, "jf_requests_total", "counter", "HTTP requests answered, by status code");
  for (const auto& [status, n] : requests_)
    out += "jf_requests_total{status=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
  scalar(out, "jf_prompt_tokens_total", "counter", "Prompt tokens of finished generations", double(prompt_tokens_));
  scalar(out, "jf_prompt_tokens_reused_total", "counter",
         "Prompt tokens a sequence's cache already held (a conversation's earlier turns, a shared prefix)", double(reused_tokens_));
  scalar(out, "jf_generated_tokens_total", "counter", "Tokens generated", double(generated_tokens_));
  scalar(out, "jf_forwards_total", "counter", "Model forwards (each batches every active sequence)", double(forwards_));
  scalar(out, "jf_forward_rows_total", "counter", "Token rows pushed through the model by those forwards", double(forward_rows_));
  committed_.render(out, "jf_tokens_per_forward", "Tokens one sequence committed in one decoding forward");
  scalar(out, "jf_queue_length", "gauge", "Requests waiting for a sequence slot", queued);
  scalar(out, "jf_active_sequences", "gauge", "Sequences being prefilled or decoded", active_sequences);
  latency_.render(out, "jf_request_latency_seconds", "Time from a generation request's arrival to its last token");
  ttft_.render(out, "jf_time_to_first_token_seconds", "Time from a generation request's arrival to its first token");
  return out;
}

}  // namespace jf
