#include "serve/request.h"

#include <cmath>
#include <cstdlib>
#include <random>
#include <set>

#include "grammar/json_schema.h"

namespace jf {

using nlohmann::json;

namespace {

// OpenAI's string code for an error of this status, where the error gives none of its own.
std::string default_code(int status) {
  switch (status) {
    case 400: return "invalid_value";
    case 401: return "invalid_api_key";
    case 404: return "unknown_url";
    case 405: return "method_not_allowed";
    case 408: return "request_timeout";
    case 413: return "request_too_large";
    case 429: return "rate_limit_exceeded";
    case 431: return "request_header_too_large";
    case 503: return "service_unavailable";
    default: return status >= 500 ? "server_error" : "invalid_request";
  }
}

}  // namespace

json error_body(int status, const std::string& message, const std::string& param, std::string type, std::string code) {
  if (type.empty()) {
    type = status == 401   ? "authentication_error"
           : status == 404 ? "not_found_error"
           : status == 429 ? "rate_limit_error"
           : status == 503 ? "unavailable_error"
           : status >= 500 ? "server_error"
                           : "invalid_request_error";
  }
  json e = {{"message", message}, {"type", type}, {"code", code.empty() ? default_code(status) : code}};
  e["param"] = param.empty() ? json(nullptr) : json(param);
  return json{{"error", e}};
}

namespace {

using api::bad;
using api::present;

void check_prompt_bytes(size_t bytes, const ApiContext& ctx, const char* param) {
  if (bytes > ctx.max_prompt_bytes)
    bad(param, "the prompt has " + std::to_string(bytes) + " bytes, more than " + std::to_string(ctx.context) +
                   " tokens (the context size) can hold", "context_length_exceeded");
}

// OpenAI: a request without a seed samples differently every time.
uint64_t fresh_seed() {
  static thread_local std::mt19937_64 rng{(uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()};
  return rng() >> 11;  // 53 bits: exact as a JavaScript number, so any client can send it back
}


double number_in(const json& body, const char* key, double lo, double hi, double fallback) {
  if (!present(body, key)) return fallback;
  const json& v = body[key];
  if (!v.is_number()) bad(key, std::string("'") + key + "' must be a number");
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi)) bad(key, std::string("'") + key + "' must be between " + json(lo).dump() + " and " + json(hi).dump() + ", got " + v.dump());
  return x;
}

int64_t integer_in(const json& body, const char* key, int64_t lo, int64_t hi, int64_t fallback) {
  if (!present(body, key)) return fallback;
  const json& v = body[key];
  if (!v.is_number_integer()) bad(key, std::string("'") + key + "' must be an integer");
  const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX : v.get<int64_t>();
  if (x < lo || x > hi) bad(key, std::string("'") + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " + v.dump());
  return x;
}

bool boolean(const json& body, const char* key, bool fallback) {
  if (!present(body, key)) return fallback;
  if (!body[key].is_boolean()) bad(key, std::string("'") + key + "' must be true or false");
  return body[key].get<bool>();
}

// Text of a message or prediction: a string, or an array of {"type": "text", "text": ...} parts.
std::string content_text(const json& v, const std::string& param) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) bad(param, "'" + param + "' must be a string or an array of text parts");
  std::string text;
  for (const json& part : v) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
      bad(param, "'" + param + "': only parts of type \"text\" with a string \"text\" are supported");
    text += part["text"].get<std::string>();
  }
  return text;
}

// Fields that change the output and are not supported: refused unless absent, null, or the value that
// means "off".
void refuse_unsupported(const json& body, bool chat) {
  auto off = [&](const char* key, auto&&... allowed) {
    if (!present(body, key)) return;
    const json& v = body[key];
    if ((... || (v == json(allowed)))) return;
    bad(key, std::string("'") + key + "' is not supported by this server (got " + v.dump() + ")", "unsupported_parameter");
  };
  off("best_of", 1);
  off("suffix", "");
  for (const char* key : {"functions", "function_call"})  // OpenAI's deprecated forms of tools
    if (present(body, key) && body[key] != json::array() && body[key] != "none")
      bad(key, std::string("'") + key + "' is not supported by this server: send 'tools' and 'tool_choice'", "unsupported_parameter");
  off("audio", json::object());
  off("modalities", json::array({"text"}));
  static const std::set<std::string> known = {
      "model", "prompt", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
      "min_p", "seed", "stop", "stream", "stream_options", "decoder", "prediction", "n", "best_of", "echo",
      "suffix", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "tools",
      "functions", "tool_choice", "function_call", "response_format", "user", "metadata", "store",
      "service_tier", "parallel_tool_calls", "ignore_eos", "audio", "modalities", "chat_template_kwargs",
      "cache_prompt", "repeat_penalty", "repeat_last_n", "grammar", "json_whitespace"};
  for (const auto& [key, value] : body.items())
    if (!known.count(key)) bad(key, "unknown field '" + key + "' (it may change the output, so it is refused)", "unknown_parameter");
  if (!chat && present(body, "messages")) bad("messages", "'messages' belongs to /v1/chat/completions");
  if (chat && present(body, "prompt")) bad("prompt", "'prompt' belongs to /v1/completions; send 'messages'");
  if (!chat && present(body, "chat_template_kwargs"))
    bad("chat_template_kwargs", "'chat_template_kwargs' belongs to /v1/chat/completions");
  for (const char* key : {"tools", "tool_choice"})
    if (!chat && present(body, key) && body[key] != json::array() && body[key] != "none")
      bad(key, std::string("'") + key + "' belongs to /v1/chat/completions");
}

std::vector<int32_t> encode_prompt(const json& body, const ApiContext& ctx) {
  if (!present(body, "prompt")) bad("prompt", "'prompt' is required");
  json p = body["prompt"];
  if (p.is_array() && p.size() == 1 && (p[0].is_string() || p[0].is_array())) p = p[0];  // a batch of one
  std::vector<int32_t> ids;
  if (p.is_string()) {
    if (!ctx.tokenizer) bad("prompt", "the model has no tokenizer: send the prompt as an array of token ids");
    check_prompt_bytes(p.get_ref<const std::string&>().size(), ctx, "prompt");
    ids = ctx.tokenizer->encode(p.get<std::string>(), /*add_special=*/true, ctx.parse_special);
    if (ids.empty() && ctx.tokenizer->bos() >= 0) ids.push_back(ctx.tokenizer->bos());
  } else if (p.is_array()) {
    for (const json& t : p) {
      if (t.is_string() || t.is_array()) bad("prompt", "several prompts in one request are not supported (n = 1)");
      if (!t.is_number_integer()) bad("prompt", "'prompt' token ids must be integers");
      const int64_t id = t.get<int64_t>();
      if (id < 0 || id >= ctx.vocab_size)
        bad("prompt", "token id " + std::to_string(id) + " is outside the vocabulary (0.." + std::to_string(ctx.vocab_size - 1) + ")");
      ids.push_back(static_cast<int32_t>(id));
    }
  } else {
    bad("prompt", "'prompt' must be a string or an array of token ids");
  }
  if (ids.empty()) bad("prompt", "the prompt is empty");
  return ids;
}

// llama-server's "chat_template_kwargs": enable_thinking (Qwen3) is the template variable jf renders.
ChatOptions chat_options(const json& body) {
  ChatOptions o;
  if (!present(body, "chat_template_kwargs")) return o;
  const json& k = body["chat_template_kwargs"];
  if (!k.is_object()) bad("chat_template_kwargs", "'chat_template_kwargs' must be an object");
  for (const auto& [key, value] : k.items()) {
    if (key != "enable_thinking")
      bad("chat_template_kwargs", "chat_template_kwargs '" + key + "' is not supported (only enable_thinking)");
    if (!value.is_boolean()) bad("chat_template_kwargs", "'chat_template_kwargs.enable_thinking' must be true or false");
    o.enable_thinking = value.get<bool>();
  }
  return o;
}

// messages[i]: its role, its text, and its tool calls or the call it answers.
ChatMessage read_message(const json& m, const std::string& param, const ApiContext& ctx) {
  if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
    bad(param, "'" + param + "' must be an object with a string 'role'");
  std::string role = m["role"].get<std::string>();
  if (role == "developer") role = "system";
  if (role != "system" && role != "user" && role != "assistant" && role != "tool")
    bad(param + ".role", "role '" + role + "' is not supported (system, developer, user, assistant, tool)");
  ChatMessage msg{role, ""};
  parse_message_tools(m, param, msg);
  if ((role == "tool" || !msg.tool_calls.empty()) && !chat_format_has_tools(ctx.chat_format))
    bad(param, no_tool_syntax_message(ctx.chat_format));
  if (present(m, "content")) msg.content = content_text(m["content"], param + ".content");
  else if (msg.tool_calls.empty()) bad(param + ".content", "'" + param + ".content' is required");
  return msg;
}

// A tool message answers a call of the assistant message before it (and the tool messages in between).
void check_tool_answer(const std::vector<ChatMessage>& msgs, const std::string& param) {
  size_t k = msgs.size() - 1;
  while (k > 0 && msgs[k - 1].role == "tool") k--;
  if (k == 0 || msgs[k - 1].tool_calls.empty()) bad(param, "a tool message must follow an assistant message with 'tool_calls'");
  for (const ChatToolCall& c : msgs[k - 1].tool_calls)
    if (c.id == msgs.back().tool_call_id) return;
  bad(param + ".tool_call_id", "'" + param + ".tool_call_id' answers no call of the assistant message before it");
}

std::vector<int32_t> encode_messages(const json& body, const ApiContext& ctx, const ChatOptions& opts) {
  if (!present(body, "messages")) bad("messages", "'messages' is required");
  const json& m = body["messages"];
  if (!m.is_array() || m.empty()) bad("messages", "'messages' must be a non-empty array");
  if (!ctx.tokenizer) bad("messages", "the model has no tokenizer, so it cannot chat");
  if (ctx.chat_format == ChatFormat::None)
    bad("messages", "the model has no chat template; use /v1/completions (or start the server with --chat-format)");
  std::vector<ChatMessage> msgs;
  size_t bytes = opts.tools.size();
  for (size_t i = 0; i < m.size(); i++) {
    const std::string param = "messages[" + std::to_string(i) + "]";
    msgs.push_back(read_message(m[i], param, ctx));
    if (msgs.back().role == "tool") check_tool_answer(msgs, param);
    for (const ChatToolCall& c : msgs.back().tool_calls) bytes += c.arguments.size();
    check_prompt_bytes(bytes += msgs.back().content.size(), ctx, "messages");
  }
  std::string text;
  try {
    text = render_chat(ctx.chat_format, msgs, /*add_generation_prompt=*/true, *ctx.tokenizer, opts);
  } catch (const Error& e) {
    bad("messages", e.what());
  }
  return ctx.tokenizer->encode(text, /*add_special=*/false, /*parse_special=*/true);
}

std::vector<std::string> parse_stop(const json& body) {
  std::vector<std::string> stop;
  if (!present(body, "stop")) return stop;
  const json& s = body["stop"];
  if (s.is_string()) {
    stop.push_back(s.get<std::string>());
  } else if (s.is_array()) {
    if (s.size() > 4) bad("stop", "'stop' takes at most 4 strings");
    for (const json& x : s) {
      if (!x.is_string()) bad("stop", "'stop' must be a string or an array of strings");
      stop.push_back(x.get<std::string>());
    }
  } else {
    bad("stop", "'stop' must be a string or an array of strings");
  }
  for (const auto& x : stop)
    if (x.empty()) bad("stop", "'stop' strings must not be empty");
  return stop;
}

// The request's decoder: its spec on top of the server's default, or the default adapted to greedy vs
// sampling (jacobi/multiblock are greedy only, sjd sampling only: their counterparts with the same block; jacobi
// with draft trees samples as it is).
DecoderOptions choose_decoder(const json& body, bool greedy, const ApiContext& ctx) {
  DecoderOptions d = ctx.default_decoder;
  if (present(body, "decoder")) {
    if (!body["decoder"].is_string()) bad("decoder", "'decoder' must be a string such as \"lookahead:W=4:N=3:G=4\"");
    const std::string spec = body["decoder"].get<std::string>();
    if (spec.find("ngram-corpus") != std::string::npos)
      bad("decoder", "'ngram-corpus' reads a server file and cannot be set per request; use 'prediction'");
    try {
      d = parse_decoder_spec(spec, ctx.default_decoder);
    } catch (const Error& e) {
      bad("decoder", e.what());
    }
  } else if (!greedy && ((d.name == "jacobi" && d.tree_nodes == 0) || d.name == "multiblock")) {
    d.name = "sjd";
    d.tree_nodes = 0;  // (sjd grows no draft layer's tree)
  } else if (greedy && d.name == "sjd") {
    d.name = "jacobi";
  }
  try {
    d.validate(greedy);
  } catch (const Error& e) {
    bad("decoder", e.what());
  }
  return d;
}

// Chat: "logprobs": true with "top_logprobs": k. Completions: "logprobs": k, and "echo".
void parse_logprobs(const json& body, CompletionRequest& r, const ApiContext& ctx) {
  if (r.chat) {
    if (boolean(body, "echo", false)) bad("echo", "'echo' belongs to /v1/completions", "unsupported_parameter");
    const bool on = boolean(body, "logprobs", false);
    if (present(body, "top_logprobs") && !on) bad("top_logprobs", "'top_logprobs' needs \"logprobs\": true");
    r.logprobs = on ? static_cast<int>(integer_in(body, "top_logprobs", 0, 20, 0)) : -1;
    return;
  }
  if (present(body, "top_logprobs")) bad("top_logprobs", "'top_logprobs' belongs to chat; /v1/completions takes \"logprobs\": k");
  const bool off = present(body, "logprobs") && body["logprobs"].is_boolean() && !body["logprobs"].get<bool>();
  r.logprobs = present(body, "logprobs") && !off ? static_cast<int>(integer_in(body, "logprobs", 0, 20, 0)) : -1;
  r.echo = boolean(body, "echo", false);
  if (!r.echo) return;
  const json& p = body["prompt"];
  const json& one = p.is_array() && p.size() == 1 && (p[0].is_string() || p[0].is_array()) ? p[0] : p;
  r.echo_text = one.is_string() ? one.get<std::string>() : ctx.tokenizer ? ctx.tokenizer->decode(r.prompt) : std::string();
}

void apply_prediction(const json& body, CompletionRequest& r, const ApiContext& ctx) {
  if (!present(body, "prediction")) return;
  const json& p = body["prediction"];
  if (!p.is_object() || p.value("type", "") != "content" || !p.contains("content"))
    bad("prediction", "'prediction' must be {\"type\": \"content\", \"content\": \"...\"}");
  if (!ctx.tokenizer) bad("prediction", "the model has no tokenizer to read a predicted text with");
  if (present(body, "decoder") && r.decoder.name != "pld")
    bad("prediction", "'prediction' drafts by prompt lookup: leave 'decoder' out or use \"pld\"");
  if (!present(body, "decoder")) {
    r.decoder = ctx.default_decoder;
    r.decoder.name = "pld";
  }
  r.decoder.ngram_corpus.clear();
  r.decoder.corpus_tokens = ctx.tokenizer->encode(content_text(p["content"], "prediction.content"), false, false);
  r.prediction = true;
}

JsonWhitespace json_whitespace(const json& body) {
  if (!present(body, "json_whitespace")) return JsonWhitespace::Flexible;
  const json& w = body["json_whitespace"];
  if (w != "flexible" && w != "compact") bad("json_whitespace", "'json_whitespace' must be \"flexible\" or \"compact\"");
  return w == "compact" ? JsonWhitespace::Compact : JsonWhitespace::Flexible;
}

// The reply's grammar from the tools' and the client's (response_format or grammar): "required" / a named
// tool takes none of the client's; "auto" with one is either the client's text or calls.
std::string with_tools_gbnf(const json& body, const ToolReplyGrammar& tools, const std::string& gbnf) {
  if (tools.reply.empty() || gbnf.empty()) return tools.reply.empty() ? gbnf : tools.reply;
  if (tools.calls.empty())
    bad("tool_choice", "'tool_choice' " + body["tool_choice"].dump() + " makes the reply tool calls: leave out 'response_format' and 'grammar'");
  return either_gbnf(gbnf, tools.calls);
}

// response_format (json_object, json_schema), llama-server's grammar, the grammar of tool calls (`tools`),
// logit_bias and the penalties into the generation's logit rules. `raw`: the body's text, read again for a
// schema's property order (json sorts keys).
void parse_output_rules(const json& body, const std::string* raw, CompletionRequest& r, const ApiContext& ctx,
                        const ToolReplyGrammar& tools) {
  LogitRulesSpec& rules = r.gen.rules;
  rules.presence_penalty = static_cast<float>(number_in(body, "presence_penalty", -2, 2, 0));
  rules.frequency_penalty = static_cast<float>(number_in(body, "frequency_penalty", -2, 2, 0));
  rules.repeat_penalty = static_cast<float>(number_in(body, "repeat_penalty", 0.01, 10, 1));
  rules.repeat_last_n = static_cast<int>(integer_in(body, "repeat_last_n", 0, 1 << 20, 64));
  if (present(body, "logit_bias")) {
    const json& b = body["logit_bias"];
    if (!b.is_object()) bad("logit_bias", "'logit_bias' must be an object of token ids to biases");
    for (const auto& [key, v] : b.items()) {
      char* end = nullptr;
      const long id = std::strtol(key.c_str(), &end, 10);
      if (key.empty() || *end || id < 0 || id >= ctx.vocab_size)
        bad("logit_bias", "'logit_bias': '" + key + "' is not a token id of this model (0.." + std::to_string(ctx.vocab_size - 1) + ")");
      if (!v.is_number() || !(v.get<double>() >= -100 && v.get<double>() <= 100))
        bad("logit_bias", "'logit_bias': the bias of token " + key + " must be a number from -100 to 100");
      rules.bias[static_cast<int32_t>(id)] = v.get<float>();
    }
  }
  std::string gbnf;
  if (present(body, "grammar")) {
    if (!body["grammar"].is_string()) bad("grammar", "'grammar' must be a string of GBNF");
    gbnf = body["grammar"].get<std::string>();
  }
  const JsonWhitespace ws = json_whitespace(body);
  if (present(body, "response_format")) {
    const json& f = body["response_format"];
    const std::string type = f.is_object() && f.contains("type") && f["type"].is_string() ? f["type"].get<std::string>() : "";
    if (type == "json_object") {
      gbnf = json_any_gbnf(ws);
    } else if (type == "json_schema") {
      if (!f.contains("json_schema") || !f["json_schema"].is_object() || !f["json_schema"].contains("schema"))
        bad("response_format", "'response_format' of type json_schema needs {\"json_schema\": {\"name\": ..., \"schema\": {...}}}");
      if (f["json_schema"].contains("strict") && !f["json_schema"]["strict"].is_boolean())
        bad("response_format", "'response_format.json_schema.strict' must be a boolean");
      nlohmann::ordered_json schema = f["json_schema"]["schema"];
      if (raw) schema = nlohmann::ordered_json::parse(*raw)["response_format"]["json_schema"]["schema"];  // (the order)
      try {
        gbnf = json_schema_to_gbnf(schema, ws);
      } catch (const Error& e) {
        bad("response_format", e.what(), "unsupported_schema");
      }
    } else if (type != "text") {
      bad("response_format", "'response_format' must be {\"type\": \"text\"}, \"json_object\" or \"json_schema\"");
    }
    if (type != "text" && present(body, "grammar")) bad("grammar", "give 'grammar' or 'response_format', not both");
  }
  const bool client_grammar = !gbnf.empty();
  gbnf = with_tools_gbnf(body, tools, gbnf);
  if (!gbnf.empty()) {
    if (!ctx.tokenizer) bad("response_format", "the model has no tokenizer to constrain its output with");
    try {
      rules.grammar = ctx.grammars ? ctx.grammars->get(gbnf, *ctx.tokenizer) : compile_grammar(gbnf, *ctx.tokenizer);
    } catch (const Error& e) {
      bad(present(body, "grammar") ? "grammar" : client_grammar ? "response_format" : "tools", e.what(), "invalid_grammar");
    }
  }
  if (rules.active() && r.decoder.name == "fastcot")
    bad("decoder", "fastcot inserts text of its own: it takes no grammar, logit_bias or penalty");
}

}  // namespace

CompletionRequest parse_completion_request(const json& body, bool chat, const ApiContext& ctx, const std::string* raw) {
  if (!body.is_object()) bad("", "the request body must be a JSON object");
  refuse_unsupported(body, chat);
  if (present(body, "model") && !body["model"].is_string()) bad("model", "'model' must be a string");
  if (present(body, "user") && !body["user"].is_string()) bad("user", "'user' must be a string");

  CompletionRequest r;
  r.chat = chat;
  ChatOptions chat_opts;
  ToolReplyGrammar tools_grammar;  // the reply's grammar from the tools
  if (chat) {
    chat_opts = chat_options(body);
    r.tools = parse_tools(body, raw, ctx, json_whitespace(body), chat_opts.tools, tools_grammar);
  }
  r.prompt = chat ? encode_messages(body, ctx, chat_opts) : encode_prompt(body, ctx);
  if (!r.tools.prompt_suffix.empty()) {  // a required call's opening control token (tools.h)
    const std::vector<int32_t> suffix = ctx.tokenizer->encode(r.tools.prompt_suffix, false, true);
    r.prompt.insert(r.prompt.end(), suffix.begin(), suffix.end());
  }
  if (static_cast<int>(r.prompt.size()) > ctx.context)
    throw ApiError(400, "the prompt has " + std::to_string(r.prompt.size()) + " tokens, more than the context size " +
                            std::to_string(ctx.context), chat ? "messages" : "prompt", {}, "context_length_exceeded");

  const char* max_key = chat && present(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  r.gen.max_new_tokens = static_cast<int>(integer_in(body, max_key, 0, 1 << 24, ctx.default_max_tokens));
  r.gen.ignore_eos = boolean(body, "ignore_eos", false);
  r.cache_prompt = boolean(body, "cache_prompt", true);
  r.gen.eos_ids = ctx.eos_ids;
  SamplingParams& s = r.gen.sampling;
  s.temperature = static_cast<float>(number_in(body, "temperature", 0, 2, 0));
  s.top_p = static_cast<float>(number_in(body, "top_p", 0, 1, 1));
  if (present(body, "top_p") && s.top_p <= 0) bad("top_p", "'top_p' must be greater than 0");
  s.top_k = static_cast<int>(integer_in(body, "top_k", 0, 1 << 30, 0));
  s.min_p = static_cast<float>(number_in(body, "min_p", 0, 1, 0));
  r.seed_given = present(body, "seed");
  s.seed = r.seed_given ? static_cast<uint64_t>(integer_in(body, "seed", INT64_MIN, INT64_MAX, 0)) : fresh_seed();
  try {
    s.validate();
  } catch (const Error& e) {
    bad("", e.what());
  }
  r.stop = parse_stop(body);
  r.stream = boolean(body, "stream", false);
  if (present(body, "stream_options")) {
    const json& o = body["stream_options"];
    if (!o.is_object()) bad("stream_options", "'stream_options' must be an object");
    if (!r.stream) bad("stream_options", "'stream_options' is only allowed with \"stream\": true");
    r.include_usage = boolean(o, "include_usage", false);
  }
  r.decoder = choose_decoder(body, s.greedy(), ctx);
  apply_prediction(body, r, ctx);
  parse_logprobs(body, r, ctx);
  parse_output_rules(body, raw, r, ctx, tools_grammar);
  r.n = static_cast<int>(integer_in(body, "n", 1, 16, 1));
  return r;
}

}  // namespace jf
