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

// A streamed choice's pieces; with tools, through its filter (text that may be a call waits).
void send_pieces(const CompletionRequest& req, const ResponseIds& ids, Exchange& ex, ToolCallFilter* filter,
                 const std::vector<TextStream::Piece>& pieces, int index) {
  for (const auto& p : pieces) {
    const ToolCallFilter::Out o = filter ? filter->feed(p.text, p.tokens) : ToolCallFilter::Out{p.text, p.tokens};
    if (!filter || !o.text.empty()) ex.write(sse(stream_chunk(req, ids, o.text, false, o.tokens, index)));
  }
}

// The end of a streamed choice: with tools, the text held back and the calls; then the last chunk.
void end_choice(const CompletionRequest& req, const ResponseIds& ids, Exchange& ex, ToolCallFilter* filter,
                const TextStream& out, int index) {
  std::string finish;
  if (filter) {
    std::vector<ChatToolCall> calls;
    const ToolCallFilter::Out o = filter->finish(calls);
    if (!o.text.empty()) ex.write(sse(stream_chunk(req, ids, o.text, false, o.tokens, index)));
    if (!calls.empty()) ex.write(sse(tool_calls_chunk(req, ids, calls, o.text.empty() ? o.tokens : 0, index)));
    if (!calls.empty()) finish = "tool_calls";
  }
  ex.write(sse(final_chunk(req, ids, out, index, finish)));
}

}  // namespace

// One request between the scheduler (which fills each choice's TextStream) and the client's exchange;
// pump() runs on the event loop whenever a stream has news. With n > 1 the first choice runs alone until
// its prompt is in a cache; the others then start from a copy of those keys and values.
struct HttpServer::Stream {
  CompletionRequest req;
  ResponseIds ids;
  Choices outs;
  std::vector<std::shared_ptr<Job>> jobs;
  std::vector<char> ended;  // a choice whose last chunk is written (streaming)
  std::vector<ToolCallFilter> filters;  // streamed with tools: one per choice
  std::shared_ptr<Exchange> ex;
  Scheduler* scheduler = nullptr;
  size_t submitted = 0;
  bool started = false;  // a stream's head is queued (pieces wait in the TextStreams until then)
  bool done = false;
  // A pump is posted and has not begun: the scheduler posts no other (one per forward per choice would
  // queue faster than the event loop drains them, and /health would wait behind the queue).
  std::atomic<bool> pump_posted{false};
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

// Choice i's job and text stream (a sampled choice i draws with seed + i: n samples, not n copies).
void HttpServer::add_choice(Stream& st, int i, double t_arrival) {
  auto out = std::make_shared<TextStream>(api_.tokenizer, st.req.prompt, st.req.stop, t_arrival, &metrics_);
  auto job = std::make_shared<Job>();
  job->prompt = st.req.prompt;
  job->gen = st.req.gen;
  job->gen.sampling.seed += static_cast<uint64_t>(i);
  job->decoder = st.req.decoder;
  job->reuse_prefix = st.req.cache_prompt;
  job->logprobs = st.req.logprobs;
  job->score_prompt = st.req.echo && st.req.logprobs >= 0;
  job->observer = out;
  st.outs.push_back(std::move(out));
  st.jobs.push_back(std::move(job));
  st.ended.push_back(0);
  if (st.req.stream && st.req.tools.parse()) st.filters.emplace_back(st.req.tools);
}

// On a worker thread: validate, tokenize, queue; the answer is sent by pump() on the event loop.
void HttpServer::generate(const HttpRequest& http_req, const std::shared_ptr<Exchange>& ex, bool chat) {
  const double t_arrival = now_seconds();
  Scheduler* sch = scheduler_.load();
  if (!sch) return ex->reply(error_response(503, "Loading model", {}, "unavailable_error"));
  if (draining_) return ex->reply(error_response(503, "the server is shutting down", {}, "unavailable_error"));
  auto st = std::make_shared<Stream>();
  try {
    st->req = parse_completion_request(parse_body(http_req.body), chat, api_, &http_req.body);
  } catch (const ApiError& e) {
    return ex->reply(error_response(e.status, e.what(), e.param, e.type, e.code));
  }
  st->ids = {next_id(chat), static_cast<int64_t>(std::time(nullptr)), model_id_};
  st->ex = ex;
  st->scheduler = sch;
  for (int i = 0; i < st->req.n; i++) {
    add_choice(*st, i, t_arrival);
    // The scheduler's thread only posts: the JSON of every chunk is built on the event loop.
    st->outs.back()->set_listener([this, weak = std::weak_ptr<Stream>(st)] {
      auto s = weak.lock();
      if (!s || s->pump_posted.exchange(true)) return;
      s->ex->post([this, s] {
        s->pump_posted = false;  // before pump reads: what arrives from now on posts again
        pump(s);
      });
    });
  }
  // Nothing is sent before the first job is accepted (a full queue must still be able to answer 429).
  switch (sch->submit(st->jobs[0])) {
    case Scheduler::Admit::Queued: break;
    case Scheduler::Admit::QueueFull: return ex->reply(error_response(429, "the server is busy: every slot and queue place is taken; retry later"));
    case Scheduler::Admit::Draining: return ex->reply(error_response(503, "the server is shutting down", {}, "unavailable_error"));
  }
  st->submitted = 1;
  if (st->req.stream) {
    HttpResponse head;
    head.content_type = "text/event-stream";
    head.headers = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
    ex->start_stream(std::move(head));
    for (int i = 0; i < st->req.n; i++) {
      if (st->req.chat) ex->write(sse(stream_chunk(st->req, st->ids, "", true, 0, i)));
      if (st->req.echo) ex->write(sse(stream_chunk(st->req, st->ids, st->req.echo_text, false, 0, i)));
    }
  }
  ex->post([this, st] {  // after the head, in the exchange's order; then pieces that came before it
    st->started = true;
    pump(st);
  });
  // A client that hangs up frees its sequences at the next step instead of at max_tokens.
  ex->on_disconnect([this, st] {
    st->done = true;
    for (auto& job : st->jobs) job->cancel = true;
    if (!st->req.stream) metrics_.request_done(499);  // nginx's "client closed request"
  });
}

// On the event loop, once the first choice has its prompt in a cache: the other choices.
void HttpServer::submit_rest(Stream& st) {
  for (; st.submitted < st.jobs.size(); st.submitted++)
    if (st.scheduler->submit(st.jobs[st.submitted]) != Scheduler::Admit::Queued)
      st.outs[st.submitted]->on_finished(GenerationResult{}, FinishReason::Error, "no slot or queue place was left for this choice");
}

// On the event loop: sends what the generation has produced since the last call.
void HttpServer::pump(const std::shared_ptr<Stream>& st) {
  if (st->done || !st->started) return;
  if (st->submitted < st->jobs.size() && (st->outs[0]->has_tokens() || st->outs[0]->finished())) submit_rest(*st);
  bool all = true;
  int failed = 0;
  std::string failure;
  for (size_t i = 0; i < st->outs.size(); i++) {
    const TextStream& out = *st->outs[i];
    std::vector<TextStream::Piece> pieces;
    const bool finished = out.finished() && !st->ended[i];
    st->outs[i]->take(pieces);
    ToolCallFilter* filter = st->filters.empty() ? nullptr : &st->filters[i];
    if (st->req.stream) send_pieces(st->req, st->ids, *st->ex, filter, pieces, static_cast<int>(i));
    if (!finished) {
      all = all && st->ended[i];
      continue;
    }
    st->ended[i] = 1;
    const FinishReason why = out.reason();
    if (why == FinishReason::Error || why == FinishReason::Cancelled) {
      failed = why == FinishReason::Error ? 500 : 503;
      failure = why == FinishReason::Error ? "generation failed: " + out.error() : "the request was cancelled (the server is shutting down)";
    } else if (st->req.stream) {
      end_choice(st->req, st->ids, *st->ex, filter, out, static_cast<int>(i));
    }
  }
  if (!all && !failed) return;
  st->done = true;
  if (failed)
    for (auto& job : st->jobs) job->cancel = true;  // one choice failed: the request has
  if (!st->req.stream) {
    if (failed) return st->ex->reply(error_response(failed, failure, {}, failed == 500 ? "server_error" : "unavailable_error"));
    return st->ex->reply(json_response(200, completion_response(st->req, st->ids, st->outs)));
  }
  if (failed) st->ex->write(sse(error_body(failed, failure)));
  else if (st->req.include_usage) st->ex->write(sse(usage_chunk(st->req, st->ids, st->outs)));
  st->ex->write("data: [DONE]\n\n");
  st->ex->end_stream();
}

}  // namespace jf
