// The HTTP face of `jf serve` (cpp-httplib): parses, validates and queues; never touches the model. Routes:
// POST /v1/completions, POST /v1/chat/completions (streamed as server-sent events or whole), GET /v1/models,
// GET /health, GET /metrics. Answers 503 until the model is attached, then hands jobs to the Scheduler.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "serve/metrics.h"
#include "serve/request.h"
#include "serve/scheduler.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace jf {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;                 // empty: no authentication
  size_t max_body_bytes = 8u << 20;    // larger bodies: 413
  int threads = 32;                    // connections served at once (a streaming request holds one)
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
  // Stops listening and joins the listener thread.
  void stop();
  int port() const { return port_; }

 private:
  void routes();
  void generate(const httplib::Request& req, httplib::Response& res, bool chat);
  bool authorised(const httplib::Request& req, httplib::Response& res) const;
  std::string next_id(bool chat);

  HttpOptions opts_;
  Metrics& metrics_;
  std::unique_ptr<httplib::Server> svr_;
  std::thread listener_;
  int port_ = 0;
  std::atomic<Scheduler*> scheduler_{nullptr};
  ApiContext api_;
  std::string model_id_;
  int64_t started_ = 0;
  std::atomic<bool> draining_{false};
  std::atomic<uint64_t> ids_{0};
  uint64_t id_salt_ = 0;
};

}  // namespace jf
