#include "serve/http_server.h"

#include <ctime>
#include <random>

#include "base/timer.h"
#include "serve/response.h"
#include "serve/text_stream.h"
#include "serve/web/page.h"

namespace jf {

using nlohmann::json;

namespace {

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

HttpResponse json_response(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.body = dump(body);
  return r;
}

HttpResponse error_response(int status, const std::string& message, const std::string& param = {}, const std::string& type = {},
                            const std::string& code = {}) {
  HttpResponse r = json_response(status, error_body(status, message, param, type, code));
  if (status == 429 || status == 503) r.headers.push_back({"Retry-After", "1"});
  return r;
}

// Deeply nested JSON is refused while parsing: printing or comparing it would recurse that deep.
json parse_body(const std::string& text) {
  constexpr int kMaxDepth = 64;
  try {
    return json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxDepth) throw ApiError(400, "the request body nests deeper than " + std::to_string(kMaxDepth) + " levels");
      return true;
    });
  } catch (const json::exception& e) {
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
  }
}

std::string sse(const json& j) { return "data: " + dump(j) + "\n\n"; }

// The same length for every key, so the time taken says nothing about how much of it a guess got right.
bool same_secret(const std::string& given, const std::string& key) {
  unsigned char diff = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < key.size(); i++) diff |= static_cast<unsigned char>(key[i] ^ (i < given.size() ? given[i] : 0));
  return diff == 0;
}

}  // namespace

// One generation between the scheduler (which fills `out`) and the client's exchange; pump() runs on the
// event loop whenever `out` has news.
struct HttpServer::Stream {
  CompletionRequest req;
  ResponseIds ids;
  std::shared_ptr<TextStream> out;
  std::shared_ptr<Job> job;
  std::shared_ptr<Exchange> ex;
  bool started = false;  // a stream's head is queued (pieces wait in `out` until then)
  bool done = false;
};

HttpServer::HttpServer(const HttpOptions& opts, Metrics& metrics)
    : opts_(opts),
      metrics_(metrics),
      transport_(opts.limits, [this](HttpRequest&& req, std::shared_ptr<Exchange> ex) { route(std::move(req), std::move(ex)); },
                 [this](int status) { metrics_.request_done(status); }) {
  started_ = static_cast<int64_t>(std::time(nullptr));
  id_salt_ = std::random_device{}();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::start() { transport_.start(opts_.host, opts_.port); }

void HttpServer::stop() { transport_.stop(); }

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

bool HttpServer::authorised(const HttpRequest& req) const {
  return opts_.api_key.empty() || same_secret(req.header("Authorization"), "Bearer " + opts_.api_key);
}

// On the event loop: everything but generation is answered here, at once.
void HttpServer::route(HttpRequest&& req, std::shared_ptr<Exchange> ex) {
  const std::string& p = req.path;
  const bool generation = p == "/v1/completions" || p == "/v1/chat/completions";
  const bool one_model = p.rfind("/v1/models/", 0) == 0;
  const bool known = generation || one_model || p == "/" || p == "/props" || p == "/health" || p == "/metrics" || p == "/v1/models";
  const bool open = p == "/health" || p == "/" || p == "/props";
  if (!open && !authorised(req))
    return ex->reply(error_response(401, "missing or wrong API key (send 'Authorization: Bearer <key>')", {}, "authentication_error"));
  if (!known) return ex->reply(error_response(404, "no route " + req.method + " " + p, {}, "not_found_error"));
  const char* allowed = generation ? "POST" : "GET";
  if (req.method != allowed) {
    HttpResponse r = error_response(405, "method " + req.method + " is not allowed on " + p + " (use " + allowed + ")");
    r.headers.push_back({"Allow", allowed});
    return ex->reply(std::move(r));
  }
  if (generation) {
    const bool chat = p == "/v1/chat/completions";
    // Parsing and tokenizing may take a while: off the event loop.
    return transport_.offload([this, req = std::move(req), ex, chat] { generate(req, ex, chat); });
  }
  Scheduler* sch = scheduler_.load();
  if (p == "/health") {
    if (!sch) return ex->reply(error_response(503, "Loading model", {}, "unavailable_error"));
    if (draining_) return ex->reply(error_response(503, "Shutting down", {}, "unavailable_error"));
    return ex->reply(json_response(200, {{"status", "ok"}}));
  }
  if (p == "/metrics") {
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4";
    r.body = metrics_.render(sch ? sch->queued() : 0, sch ? sch->active() : 0);
    r.body += "# HELP jf_open_connections HTTP connections open now.\n# TYPE jf_open_connections gauge\n";
    r.body += "jf_open_connections " + std::to_string(transport_.open_connections()) + "\n";
    return ex->reply(std::move(r));
  }
  if (p == "/") {
    HttpResponse r;
    r.content_type = "text/html; charset=utf-8";
    r.body = std::string(kIndexHtml);
    return ex->reply(std::move(r));
  }
  if (!sch) return ex->reply(error_response(503, "Loading model", {}, "unavailable_error"));
  if (p == "/props")  // what the page needs to know before the first request (open like /health: no secrets)
    return ex->reply(json_response(200, {{"model", model_id_}, {"chat", api_.tokenizer && api_.chat_format != ChatFormat::None},
                                         {"decoder", api_.default_decoder.name}, {"context", api_.context}}));
  const json model = {{"id", model_id_}, {"object", "model"}, {"created", started_}, {"owned_by", "jf"}};
  if (!one_model) return ex->reply(json_response(200, {{"object", "list"}, {"data", json::array({model})}}));
  const std::string id = p.substr(std::string("/v1/models/").size());
  if (id != model_id_) return ex->reply(error_response(404, "the model '" + id + "' does not exist (this server has '" + model_id_ + "')", "model", {}, "model_not_found"));
  ex->reply(json_response(200, model));
}

// On a worker thread: validate, tokenize, queue; the answer is sent by pump() on the event loop.
void HttpServer::generate(const HttpRequest& http_req, const std::shared_ptr<Exchange>& ex, bool chat) {
  const double t_arrival = now_seconds();
  Scheduler* sch = scheduler_.load();
  if (!sch) return ex->reply(error_response(503, "Loading model", {}, "unavailable_error"));
  if (draining_) return ex->reply(error_response(503, "the server is shutting down", {}, "unavailable_error"));
  json body;
  try {
    body = parse_body(http_req.body);
  } catch (const ApiError& e) {
    return ex->reply(error_response(e.status, e.what(), e.param, e.type, e.code));
  }
  auto st = std::make_shared<Stream>();
  try {
    st->req = parse_completion_request(body, chat, api_);
  } catch (const ApiError& e) {
    return ex->reply(error_response(e.status, e.what(), e.param, e.type, e.code));
  }
  body = json();  // let a large body go before the generation starts
  st->ids = {next_id(chat), static_cast<int64_t>(std::time(nullptr)), model_id_};
  st->out = std::make_shared<TextStream>(api_.tokenizer, st->req.prompt, st->req.stop, t_arrival, &metrics_);
  st->ex = ex;
  st->job = std::make_shared<Job>();
  st->job->prompt = st->req.prompt;
  st->job->gen = st->req.gen;
  st->job->decoder = st->req.decoder;
  st->job->reuse_prefix = st->req.cache_prompt;
  st->job->logprobs = st->req.logprobs;
  st->job->score_prompt = st->req.echo && st->req.logprobs >= 0;
  st->job->observer = st->out;
  // The scheduler's thread only posts: the JSON of every chunk is built on the event loop.
  st->out->set_listener([this, weak = std::weak_ptr<Stream>(st)] {
    if (auto s = weak.lock()) s->ex->post([this, s] { pump(s); });
  });
  if (st->req.stream) {
    HttpResponse head;
    head.content_type = "text/event-stream";
    head.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
    // Nothing is sent before the job is accepted (a full queue must still be able to answer 429).
    switch (sch->submit(st->job)) {
      case Scheduler::Admit::Queued: break;
      case Scheduler::Admit::QueueFull: return ex->reply(error_response(429, "the server is busy: every slot and queue place is taken; retry later"));
      case Scheduler::Admit::Draining: return ex->reply(error_response(503, "the server is shutting down", {}, "unavailable_error"));
    }
    ex->start_stream(std::move(head));
    if (st->req.chat) ex->write(sse(stream_chunk(st->req, st->ids, "", true)));
    if (st->req.echo) ex->write(sse(stream_chunk(st->req, st->ids, st->req.echo_text)));
    ex->post([this, st] {  // after the head, in the exchange's order; then pieces that came before it
      st->started = true;
      pump(st);
    });
  } else {
    switch (sch->submit(st->job)) {
      case Scheduler::Admit::Queued: break;
      case Scheduler::Admit::QueueFull: return ex->reply(error_response(429, "the server is busy: every slot and queue place is taken; retry later"));
      case Scheduler::Admit::Draining: return ex->reply(error_response(503, "the server is shutting down", {}, "unavailable_error"));
    }
  }
  // A client that hangs up frees its sequence at the next step instead of at max_tokens.
  ex->on_disconnect([this, st] {
    st->job->cancel = true;
    if (!st->req.stream) metrics_.request_done(499);  // nginx's "client closed request"
  });
}

// On the event loop: sends what the generation has produced since the last call.
void HttpServer::pump(const std::shared_ptr<Stream>& st) {
  if (st->done || (st->req.stream && !st->started)) return;  // pieces wait in `out` until the head is queued
  std::vector<TextStream::Piece> pieces;
  const bool finished = st->out->wait(pieces, 0);
  const FinishReason why = finished ? st->out->reason() : FinishReason::Length;
  const bool failed = finished && (why == FinishReason::Error || why == FinishReason::Cancelled);
  const std::string failure = why == FinishReason::Error ? "generation failed: " + st->out->error()
                                                         : std::string("the request was cancelled (the server is shutting down)");
  if (!st->req.stream) {
    if (!finished) return;
    st->done = true;
    if (failed) return st->ex->reply(error_response(why == FinishReason::Error ? 500 : 503, failure, {}, why == FinishReason::Error ? "server_error" : "unavailable_error"));
    return st->ex->reply(json_response(200, completion_response(st->req, st->ids, *st->out)));
  }
  for (const auto& p : pieces) st->ex->write(sse(stream_chunk(st->req, st->ids, p.text, false, p.tokens)));
  if (!finished) return;
  st->done = true;
  if (failed) {
    st->ex->write(sse(error_body(why == FinishReason::Error ? 500 : 503, failure)));
  } else {
    st->ex->write(sse(final_chunk(st->req, st->ids, *st->out)));
    if (st->req.include_usage) st->ex->write(sse(usage_chunk(st->req, st->ids, *st->out)));
  }
  st->ex->write("data: [DONE]\n\n");
  st->ex->end_stream();
}

}  // namespace jf
