// `jf serve`: the OpenAI-compatible HTTP server (src/serve). Binds first (so /health answers 503 while the
// model loads), loads the model, measures its cost curve, then runs the scheduler until SIGINT/SIGTERM,
// which drains in-flight requests for up to --drain-timeout seconds and exits 0.
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <pthread.h>
#include <thread>

#include "base/error.h"
#include "base/timer.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "kernels/cpu.h"
#include "kernels/parallel.h"
#include "serve/http_server.h"
#include "tune/tuner.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace jf::cli {

namespace {

struct ServeArgs {
  ModelOptions model;
  HttpOptions http;
  SchedulerOptions sched;
  DecoderOptions decoder;
  std::string api_key_file;
  std::string config;  // jf tune -o
  std::string chat_format;
  std::string model_id;
  int max_tokens = 256;
  double drain_timeout = 30;
  bool no_calibrate = false;
  bool parse_special = false;
};

std::string file_name(const std::string& path) {
  std::string p = path;
  while (!p.empty() && p.back() == '/') p.pop_back();
  const size_t slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

void check_args(ServeArgs& a) {
  if (a.http.port < 0 || a.http.port > 65535) throw Error("--port must be between 0 and 65535");
  if (a.sched.parallel < 1 || a.sched.parallel > 256) throw Error("--parallel must be between 1 and 256");
  if (a.sched.queue < 0 || a.sched.queue > 100000) throw Error("--queue must be between 0 and 100000");
  if (a.sched.prefill_chunk < 1) throw Error("--prefill-chunk must be >= 1");
  if (a.sched.max_rows < 1 || a.sched.max_rows > 1024) throw Error("--max-rows must be between 1 and 1024");
  if (a.sched.draft_tolerance < 0) throw Error("--draft-tolerance must be >= 0");
  if (a.max_tokens < 0) throw Error("--max-tokens must be >= 0");
  if (a.drain_timeout < 0) throw Error("--drain-timeout must be >= 0");
  if (!a.decoder.ngram_corpus.empty()) throw Error("--ngram-corpus is not available in the server; requests can send 'prediction'");
  expand_decoder_spec(a.decoder);
  if (!a.config.empty()) a.decoder = parse_decoder_spec(tune::read_tune_config(a.config).decoder, a.decoder);
  if (a.decoder.name != "auto") a.decoder.validate(/*greedy=*/a.decoder.name != "sjd");
  if (!a.api_key_file.empty()) {
    std::string key = read_text_file(a.api_key_file);
    while (!key.empty() && (key.back() == '\n' || key.back() == '\r' || key.back() == ' ')) key.pop_back();
    if (key.empty()) throw Error("--api-key-file " + a.api_key_file + " is empty");
    a.http.api_key = key;
  }
  const HttpLimits& l = a.http.limits;
  if (l.max_body < 1 || l.max_header < 256) throw Error("--max-body must be >= 1 and --max-header >= 256");
  if (l.header_timeout <= 0 || l.body_timeout <= 0 || l.keep_alive_timeout < 0)
    throw Error("--header-timeout and --body-timeout must be > 0, --keep-alive-timeout >= 0");
  if (l.max_connections < 1) throw Error("--max-connections must be >= 1");
}

// SIGINT / SIGTERM are blocked in every thread and taken here. Waits up to `seconds` (< 0: for ever);
// returns the signal, or 0.
int wait_for_signal(double seconds = -1) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  if (seconds < 0) {
    int sig = 0;
    sigwait(&set, &sig);
    return sig;
  }
  timespec ts{static_cast<time_t>(seconds), static_cast<long>((seconds - static_cast<time_t>(seconds)) * 1e9)};
  const int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

// The longest text `context` tokens can be: a prompt longer in bytes is refused before it is tokenized.
size_t max_prompt_bytes(const Tokenizer& tok, int context) {
  size_t longest = 1;
  for (int32_t id = 0; id < tok.n_vocab(); id++) longest = std::max(longest, tok.token_text(id).size());
  return longest * static_cast<size_t>(context) + 64;
}

int run_serve(ServeArgs& a) {
  check_args(a);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before any thread starts, so they all inherit it

  // A missing model is a one-line error before anything is printed or bound (loading itself comes later,
  // behind a 503 /health).
  if (!a.model.path.empty() && !std::filesystem::exists(a.model.path)) throw Error("model '" + a.model.path + "' not found");
  Metrics metrics;
  HttpServer http(a.http, metrics);
  http.start();
  std::fprintf(stderr, "jf serve: listening on http://%s:%d (loading %s)\n", a.http.host.c_str(), http.port(), a.model.path.c_str());

  // Tests hold the loading phase open to see /health answer 503 (tests/serve/server.test.mjs).
  if (const char* ms = std::getenv("JF_SERVE_TEST_LOAD_DELAY_MS")) std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
  // Tests hold the first forward until N requests are queued, so they certainly decode together.
  if (const char* n = std::getenv("JF_SERVE_TEST_GATHER")) a.sched.gather_first = std::atoi(n);
  LoadedModel lm = open_model(a.model);
  a.sched.context = context_size(a.model, *lm.model);
  std::unique_ptr<ForwardPass> forward = open_forward(a.model, *lm.model);
  ForwardPass& fwd = *forward;
  a.sched.kv_type = kv_type(a.model, fwd);
  if (a.decoder.name == "auto") {  // the jf tune result cached for this model and machine, else a cost-curve rule
    std::string why;
    a.decoder = parse_decoder_spec(tune::auto_decoder(a.model.path, fwd, &why), a.decoder);
    a.decoder.validate(true);
    std::fprintf(stderr, "jf serve: --decoder auto: %s\n", why.c_str());
  }
  CostCurve curve;
  if (!a.no_calibrate) curve = CostCurve::measure(fwd, std::min(64, a.sched.max_rows * 2));
  Scheduler scheduler(fwd, a.sched, curve, &metrics);

  ApiContext api;
  api.tokenizer = lm.tokenizer.get();
  api.grammars = std::make_shared<GrammarCache>();
  api.context = a.sched.context;
  api.vocab_size = lm.model->config().vocab_size;
  api.default_decoder = a.decoder;
  api.default_max_tokens = a.max_tokens;
  api.parse_special = a.parse_special;
  if (lm.tokenizer) {
    api.chat_format = detect_chat_format(*lm.tokenizer);
    if (!a.chat_format.empty() && !chat_format_from_name(a.chat_format, &api.chat_format))
      throw Error("unknown chat format '" + a.chat_format + "' (known: " + chat_format_names() + ")");
    api.eos_ids = lm.tokenizer->eog_ids();
    api.max_prompt_bytes = max_prompt_bytes(*lm.tokenizer, api.context);
  }
  const std::string model_id = a.model_id.empty() ? file_name(a.model.path) : a.model_id;
  std::thread model_loop([&] { scheduler.run(); });
  http.attach(scheduler, api, model_id);
  std::fprintf(stderr, "jf serve: ready: model %s, %d threads (%s), %d sequences x %d tokens, queue %d, default decoder %s\n",
               model_id.c_str(), num_threads(), isa_name(active_isa()).c_str(), a.sched.parallel, a.sched.context,
               a.sched.queue, a.decoder.name.c_str());
  if (!curve.empty())
    std::fprintf(stderr, "jf serve: forward cost 1/4/16 rows: %.2f/%.2f/%.2f ms; draft rows per sequence with 2/4/8 decoding: %d/%d/%d\n",
                 1e3 * curve.seconds(1), 1e3 * curve.seconds(4), 1e3 * curve.seconds(16), scheduler.row_cap(2),
                 scheduler.row_cap(4), scheduler.row_cap(8));

  const int sig = wait_for_signal();
  std::fprintf(stderr, "jf serve: %s: draining %d request(s) for up to %.0f s\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
               scheduler.in_flight(), a.drain_timeout);
  http.begin_drain();
  scheduler.begin_drain();
  // A second signal ends the drain at once.
  const double deadline = now_seconds() + a.drain_timeout;
  while (scheduler.in_flight() > 0 && now_seconds() < deadline)
    if (wait_for_signal(0.02)) {
      std::fprintf(stderr, "jf serve: second signal: cancelling the rest\n");
      break;
    }
  const int left = scheduler.in_flight();
  scheduler.shutdown();
  model_loop.join();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the HTTP threads send the last bytes
  http.stop();
  std::fprintf(stderr, "jf serve: stopped%s\n", left ? (" (" + std::to_string(left) + " request(s) cancelled)").c_str() : "");
  return 0;
}

}  // namespace

Command add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve the model over an OpenAI-compatible HTTP API (docs/SERVING.md)");
  add_model_options(cmd, a->model);
  add_decoder_options(cmd, a->decoder);
  cmd->add_option("--config", a->config, "Default decoder from jf tune -o (requests may still name their own)");
  cmd->add_option("--host", a->http.host, "Address to listen on (default 127.0.0.1: this machine only)");
  cmd->add_option("--port", a->http.port, "Port to listen on; 0 picks a free one (default 8080)");
  cmd->add_option("--api-key", a->http.api_key, "Require 'Authorization: Bearer KEY' on /v1/* and /metrics");
  cmd->add_option("--api-key-file", a->api_key_file, "Read the API key from this file");
  cmd->add_option("-P,--parallel", a->sched.parallel, "Sequences decoded together, each with its own --ctx KV cache (default 4)");
  cmd->add_option("--queue", a->sched.queue, "Requests that may wait for a free sequence; more get 429 (default 64)");
  cmd->add_option("--max-tokens", a->max_tokens, "Tokens generated when a request gives no max_tokens (default 256)");
  cmd->add_option("--prefill-chunk", a->sched.prefill_chunk, "Most prompt tokens one sequence adds to a forward, so long prompts do not stall the others (default 128)");
  cmd->add_option("--draft-tolerance", a->sched.draft_tolerance,
                  "With several sequences decoding, draft rows per sequence are cut until they cost the batch at most this "
                  "factor more, relatively, than they cost one sequence alone (measured cost curve); 0 = no cut (default 1.1)");
  cmd->add_option("--pld-memory", a->sched.pld_memory,
                  "Tokens of finished requests that pld requests draft from, shared by all requests, so text seen "
                  "once speeds up requests that repeat it; 0: each request drafts from its own text only. Outputs "
                  "do not change, but a request's speed (and its jf stats) can show whether others sent similar "
                  "text: use 0 where clients must not learn about each other (default 65536)")
      ->check(CLI::Range(0, 1 << 26));
  cmd->add_option("--max-rows", a->sched.max_rows, "Most rows one sequence may put into a forward (default 64)");
  cmd->add_flag("--no-calibrate", a->no_calibrate, "Skip measuring the forward cost curve at start (no draft-row cut)");
  cmd->add_flag("--no-prefix-reuse", [a](int64_t) { a->sched.reuse_prefix = false; },
                "Prefill every prompt whole: do not start a prompt from keys and values a sequence holds (a "
                "finished request's text it continues, as a conversation's next turn does, or a prefix another "
                "sequence shares, as a system prompt). Outputs are the same either way, but time to first token "
                "can show whether another client sent the same text");
  cmd->add_flag("--parse-special", a->parse_special,
                "Read special-token text in /v1/completions prompts (e.g. <|im_start|>) as those tokens, as "
                "llama-server does, for clients that write their own chat markup (default: spelled out as text, "
                "as OpenAI's API)");
  cmd->add_option("--chat-format", a->chat_format, "Chat format instead of the model's template: " + chat_format_names());
  cmd->add_option("--model-id", a->model_id, "Model name reported by /v1/models and in responses (default: the file name)");
  HttpLimits& l = a->http.limits;
  cmd->add_option("--max-body", l.max_body, "Largest request body in bytes, chunked or not; larger ones get 413 (default 8 MiB)");
  cmd->add_option("--max-header", l.max_header, "Largest request line and header in bytes; larger get 431 (default 16 KiB)");
  cmd->add_option("--header-timeout", l.header_timeout, "Seconds a client has to send a request's header; then 408 (default 10)");
  cmd->add_option("--body-timeout", l.body_timeout, "Seconds a client has to send a request's body after its header; then 408 (default 30)");
  cmd->add_option("--keep-alive-timeout", l.keep_alive_timeout, "Seconds an idle keep-alive connection stays open (default 5)");
  cmd->add_option("--max-connections", l.max_connections, "Open connections at most; one more gets 503 and is closed (default 512)");
  cmd->add_option("--drain-timeout", a->drain_timeout, "Seconds SIGINT/SIGTERM waits for in-flight requests before cancelling them (default 30)");
  return [a] { return run_serve(*a); };
}

}  // namespace jf::cli
