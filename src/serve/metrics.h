// The server's counters and histograms, rendered in the Prometheus text format for GET /metrics.
// Thread-safe: the HTTP threads and the scheduler update it.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace jf {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  // `name`_bucket{le=...} (cumulative), `name`_sum, `name`_count.
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // last: above every bound
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void request_done(int http_status);
  // reused: prompt tokens whose keys and values a sequence already held (not prefilled).
  void tokens(int64_t prompt, int64_t generated, int64_t reused = 0);
  void forward(int64_t rows);
  void committed(int tokens_in_one_forward);  // per sequence and forward, decoding only
  void latency(double seconds);
  void time_to_first_token(double seconds);
  // The gauges are read from the scheduler when rendering.
  std::string render(int queued, int active_sequences) const;

 private:
  mutable std::mutex mu_;
  std::map<int, uint64_t> requests_;  // by HTTP status
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0, reused_tokens_ = 0, forwards_ = 0, forward_rows_ = 0;
  Histogram committed_, latency_, ttft_;
};

}  // namespace jf
