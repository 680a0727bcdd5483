// The HTTP face of `jf serve`: routes, API key, OpenAI errors, and the bridge from a generation's text
// stream to its client; never touches the model. Routes: POST /v1/completions, POST /v1/chat/completions
// (streamed as server-sent events or whole), GET /v1/models, GET /health, GET /metrics, GET / (the chat
// page). Answers 503 until the model is attached, then hands jobs to the Scheduler. The wire (connections,
// limits, timeouts) is HttpTransport's; requests are parsed and tokenized on its worker threads, so the
// event loop answers /health and /metrics at once however busy the model is.
#pragma once
#include <atomic>
#include <memory>
#include <string>

#include "serve/http_transport.h"
#include "serve/metrics.h"
#include "serve/request.h"
#include "serve/scheduler.h"

namespace jf {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;  // empty: no authentication
  HttpLimits limits;
};

class HttpServer {
 public:
  HttpServer(const HttpOptions& opts, Metrics& metrics);
  ~HttpServer();

  // Binds the socket and starts answering (503 while no model is attached). Throws jf::Error when the
  // address cannot be bound (a port in use).
  void start();
  // From now on requests reach `scheduler`, checked against `api`.
  void attach(Scheduler& scheduler, ApiContext api, std::string model_id);
  // New generation requests get 503 from now on.
  void begin_drain() { draining_ = true; }
  // Stops listening, closes the connections and joins the threads.
  void stop();
  int port() const { return transport_.port(); }

 private:
  struct Stream;
  void route(HttpRequest&& req, std::shared_ptr<Exchange> ex);
  void generate(const HttpRequest& req, const std::shared_ptr<Exchange>& ex, bool chat);
  void add_choice(Stream& st, int i, double t_arrival);
  void submit_rest(Stream& st);
  void pump(const std::shared_ptr<Stream>& st);
  bool authorised(const HttpRequest& req) const;
  std::string next_id(bool chat);

  HttpOptions opts_;
  Metrics& metrics_;
  HttpTransport transport_;
  std::atomic<Scheduler*> scheduler_{nullptr};
  ApiContext api_;
  std::string model_id_;
  int64_t started_ = 0;
  std::atomic<bool> draining_{false};
  std::atomic<uint64_t> ids_{0};
  uint64_t id_salt_ = 0;
};

}  // namespace jf
