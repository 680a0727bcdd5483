#include "serve/http_server.h"

#include <httplib.h>

#include <chrono>
#include <random>

#include "base/timer.h"
#include "serve/connection.h"
#include "serve/response.h"
#include "serve/web/page.h"

namespace jf {

using nlohmann::json;

namespace {

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message, const std::string& param = {},
                const std::string& type = {}) {
  send_json(res, status, error_body(status, message, param, type));
  if (status == 429 || status == 503) res.set_header("Retry-After", "1");
}

std::string sse(const json& j) { return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n"; }

// State of one streamed answer, shared by the content provider's calls.
struct StreamState {
  CompletionRequest req;
  ResponseIds ids;
  std::shared_ptr<TextStream> out;
  std::shared_ptr<Job> job;
  bool sent_role = false;
  bool finished = false;
};

}  // namespace

HttpServer::HttpServer(const HttpOptions& opts, Metrics& metrics)
    : opts_(opts), metrics_(metrics), svr_(std::make_unique<httplib::Server>()) {
  started_ = static_cast<int64_t>(std::time(nullptr));
  id_salt_ = std::random_device{}();
  routes();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() {
  const int threads = std::max(4, opts_.threads);
  svr_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  svr_->set_payload_max_length(opts_.max_body_bytes);
  // Idle keep-alive connections hold a thread until this passes, and a shutdown waits for them.
  svr_->set_keep_alive_timeout(2);
  // SO_REUSEADDR only: cpp-httplib's default adds SO_REUSEPORT, which lets a second server bind a port in use.
  svr_->set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  svr_->set_read_timeout(60);
  svr_->set_write_timeout(60);
  if (opts_.port == 0) {
    port_ = svr_->bind_to_any_port(opts_.host);
    if (port_ <= 0) throw Error("cannot listen on " + opts_.host + " (any port)");
  } else {
    if (!svr_->bind_to_port(opts_.host, opts_.port))
      throw Error("cannot listen on " + opts_.host + ":" + std::to_string(opts_.port) + " (port in use, or not an address of this machine)");
    port_ = opts_.port;
  }
  listener_ = std::thread([this] { svr_->listen_after_bind(); });
}

void HttpServer::stop() {
  if (svr_) svr_->stop();
  if (listener_.joinable()) listener_.join();
}

void HttpServer::attach(Scheduler& scheduler, ApiContext api, std::string model_id) {
  api_ = std::move(api);
  model_id_ = std::move(model_id);
  scheduler_.store(&scheduler);
}

std::string HttpServer::next_id(bool chat) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%08llx%08llx", chat ? "chatcmpl" : "cmpl", static_cast<unsigned long long>(id_salt_ & 0xffffffffu),
                static_cast<unsigned long long>(ids_.fetch_add(1)));
  return buf;
}

bool HttpServer::authorised(const httplib::Request& req, httplib::Response& res) const {
  if (opts_.api_key.empty()) return true;
  if (req.get_header_value("Authorization") == "Bearer " + opts_.api_key) return true;
  send_error(res, 401, "missing or wrong API key (send 'Authorization: Bearer <key>')", {}, "authentication_error");
  return false;
}

void HttpServer::routes() {
  httplib::Server& s = *svr_;
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    const bool open = req.path == "/health" || req.path == "/" || req.path == "/props";
    if (open || authorised(req, res)) return httplib::Server::HandlerResponse::Unhandled;
    return httplib::Server::HandlerResponse::Handled;
  });
  s.set_logger([this](const httplib::Request&, const httplib::Response& res) { metrics_.request_done(res.status); });
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.is_chunked_content_provider_) return;
    if (res.status == 404) send_error(res, 404, "no route " + req.method + " " + req.path, {}, "not_found_error");
    else if (res.status == 413) send_error(res, 413, "the request body is larger than the server's limit");
    else send_error(res, res.status, "HTTP error " + std::to_string(res.status));
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, 500, what, {}, "server_error");
  });

  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!scheduler_.load()) return send_error(res, 503, "Loading model", {}, "unavailable_error");
    if (draining_) return send_error(res, 503, "Shutting down", {}, "unavailable_error");
    send_json(res, 200, {{"status", "ok"}});
  });
  s.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(kIndexHtml.data(), kIndexHtml.size(), "text/html; charset=utf-8");
  });
  // What the page needs to know before the first request (open like /health: it holds no secrets).
  s.Get("/props", [this](const httplib::Request&, httplib::Response& res) {
    if (!scheduler_.load()) return send_error(res, 503, "Loading model", {}, "unavailable_error");
    send_json(res, 200, {{"model", model_id_}, {"chat", api_.tokenizer && api_.chat_format != ChatFormat::None},
                         {"decoder", api_.default_decoder.name}, {"context", api_.context}});
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    Scheduler* sch = scheduler_.load();
    res.set_content(metrics_.render(sch ? sch->queued() : 0, sch ? sch->active() : 0), "text/plain; version=0.0.4");
  });
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    if (!scheduler_.load()) return send_error(res, 503, "Loading model", {}, "unavailable_error");
    send_json(res, 200, {{"object", "list"},
                         {"data", json::array({{{"id", model_id_}, {"object", "model"}, {"created", started_}, {"owned_by", "jf"}}})}});
  });
  s.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, false); });
  s.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, true); });

  // A known route with the wrong method is 405, not 404.
  auto not_allowed = [](const char* allow) {
    return [allow](const httplib::Request& req, httplib::Response& res) {
      send_error(res, 405, "method " + req.method + " is not allowed on " + req.path + " (use " + allow + ")");
      res.set_header("Allow", allow);
    };
  };
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    s.Get(path, not_allowed("POST"));
    s.Put(path, not_allowed("POST"));
    s.Delete(path, not_allowed("POST"));
    s.Patch(path, not_allowed("POST"));
  }
  for (const char* path : {"/", "/props", "/health", "/metrics", "/v1/models"}) {
    s.Post(path, not_allowed("GET"));
    s.Put(path, not_allowed("GET"));
    s.Delete(path, not_allowed("GET"));
    s.Patch(path, not_allowed("GET"));
  }
}

void HttpServer::generate(const httplib::Request& http_req, httplib::Response& res, bool chat) {
  const double t_arrival = now_seconds();
  Scheduler* sch = scheduler_.load();
  if (!sch) return send_error(res, 503, "Loading model", {}, "unavailable_error");
  if (draining_) return send_error(res, 503, "the server is shutting down", {}, "unavailable_error");
  json body;
  try {
    body = json::parse(http_req.body);
  } catch (const json::exception& e) {
    return send_error(res, 400, std::string("the request body is not valid JSON: ") + e.what());
  }
  auto state = std::make_shared<StreamState>();
  try {
    state->req = parse_completion_request(body, chat, api_);
  } catch (const ApiError& e) {
    return send_error(res, e.status, e.what(), e.param, e.type);
  }
  state->ids = {next_id(chat), static_cast<int64_t>(std::time(nullptr)), model_id_};
  state->out = std::make_shared<TextStream>(api_.tokenizer, state->req.prompt, state->req.stop, t_arrival, &metrics_);
  state->job = std::make_shared<Job>();
  state->job->prompt = state->req.prompt;
  state->job->gen = state->req.gen;
  state->job->decoder = state->req.decoder;
  state->job->reuse_prefix = state->req.cache_prompt;
  state->job->observer = state->out;
  switch (sch->submit(state->job)) {
    case Scheduler::Admit::Queued: break;
    case Scheduler::Admit::QueueFull: return send_error(res, 429, "the server is busy: every slot and queue place is taken; retry later");
    case Scheduler::Admit::Draining: return send_error(res, 503, "the server is shutting down", {}, "unavailable_error");
  }

  if (!state->req.stream) {
    // A client that hangs up frees its sequence within a poll period instead of at max_tokens.
    const int socket = find_connection_socket(http_req.remote_addr, http_req.remote_port, http_req.local_port);
    std::vector<TextStream::Piece> pieces;
    while (!state->out->wait(pieces, 0.25)) {
      if (socket >= 0 && peer_has_closed(socket)) {
        state->job->cancel = true;
        res.status = 499;  // nginx's "client closed request", for the request counters; nobody reads it
        return;
      }
    }
    const FinishReason why = state->out->reason();
    if (why == FinishReason::Error) return send_error(res, 500, "generation failed: " + state->out->error(), {}, "server_error");
    if (why == FinishReason::Cancelled) return send_error(res, 503, "the request was cancelled (the server is shutting down)", {}, "unavailable_error");
    return send_json(res, 200, completion_response(state->req, state->ids, *state->out));
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [state](size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& s) { return sink.write(s.data(), s.size()); };
        if (state->req.chat && !state->sent_role) {
          state->sent_role = true;
          if (!write(sse(stream_chunk(state->req, state->ids, "", true)))) return false;
        }
        std::vector<TextStream::Piece> pieces;
        const bool done = state->out->wait(pieces, 1.0);
        for (const auto& p : pieces)
          if (!write(sse(stream_chunk(state->req, state->ids, p.text, false, p.tokens)))) return false;
        if (!done) return pieces.empty() ? write(": keep-alive\n\n") : true;  // a ping finds a vanished client
        const FinishReason why = state->out->reason();
        if (why == FinishReason::Error || why == FinishReason::Cancelled) {
          const std::string msg = why == FinishReason::Error ? "generation failed: " + state->out->error()
                                                              : std::string("the request was cancelled (the server is shutting down)");
          write(sse(error_body(why == FinishReason::Error ? 500 : 503, msg)));
        } else {
          if (!write(sse(final_chunk(state->req, state->ids, *state->out)))) return false;
          if (state->req.include_usage && !write(sse(usage_chunk(state->req, state->ids, *state->out)))) return false;
        }
        write("data: [DONE]\n\n");
        state->finished = true;
        sink.done();
        return true;
      },
      [state](bool success) {
        if (!success || !state->finished) state->job->cancel = true;  // the client went away: free its KV
      });
}

}  // namespace jf
