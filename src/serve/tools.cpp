#include "serve/tools.h"

#include <algorithm>
#include <cctype>
#include <random>
#include <set>

#include "base/error.h"
#include "grammar/matcher.h"
#include "serve/request.h"

namespace jf {

using nlohmann::json;
using OJson = nlohmann::ordered_json;  // the tools as the client wrote them (key order), for the prompt

namespace {

using api::bad;
using api::present;

// OpenAI's function names: 1 to 64 of a-z, A-Z, 0-9, '_' and '-' (so a name needs no escaping anywhere).
template <class J>
bool valid_name(const J& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.template get_ref<const std::string&>();
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

// tools[i], checked: {"type": "function", "function": {"name", "description"?, "parameters"?, "strict"?}}.
const OJson& checked_function(const OJson& tool, const std::string& param) {
  if (!tool.is_object()) bad(param, "'" + param + "' must be an object {\"type\": \"function\", \"function\": {...}}");
  if (!tool.contains("type") || tool["type"] != "function") bad(param + ".type", "'" + param + ".type' must be \"function\"");
  if (!present(tool, "function") || !tool["function"].is_object())
    bad(param + ".function", "'" + param + ".function' must be an object with a 'name'");
  const OJson& f = tool["function"];
  const std::string p = param + ".function.";
  if (!f.contains("name") || !valid_name(f["name"]))
    bad(p + "name", "'" + p + "name' must be 1 to 64 letters, digits, '_' or '-'");
  if (present(f, "description") && !f["description"].is_string()) bad(p + "description", "'" + p + "description' must be a string");
  if (present(f, "strict") && !f["strict"].is_boolean()) bad(p + "strict", "'" + p + "strict' must be true or false");
  if (present(f, "parameters")) {
    const OJson& s = f["parameters"];
    if (!s.is_object()) bad(p + "parameters", "'" + p + "parameters' must be a JSON schema (an object)");
    if (s.contains("type") && s["type"] != "object")
      bad(p + "parameters", "'" + p + "parameters' must be a schema of type \"object\" (arguments are a JSON object)");
  }
  return f;
}

// A function without parameters takes none: its arguments are {}.
OJson parameters_schema(const OJson& function) {
  if (present(function, "parameters")) return function["parameters"];
  return OJson{{"type", "object"}, {"properties", OJson::object()}, {"additionalProperties", false}};
}

// tool_choice: "none", "auto", "required", or {"type": "function", "function": {"name": ...}} (-> `named`).
ToolsRequest::Choice read_choice(const json& body, bool tools, const std::vector<std::string>& names, std::string& named) {
  using Choice = ToolsRequest::Choice;
  if (!present(body, "tool_choice")) return tools ? Choice::Auto : Choice::None;
  const json& c = body["tool_choice"];
  if (c == "none") return Choice::None;
  if (c == "auto") return tools ? Choice::Auto : Choice::None;
  if (c != "required" && !c.is_object())
    bad("tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
  if (!tools) bad("tool_choice", "'tool_choice' " + c.dump() + " needs 'tools'");
  if (c == "required") return Choice::Required;
  if (c.value("type", json()) != "function" || !present(c, "function") || !present(c["function"], "name") || !c["function"]["name"].is_string())
    bad("tool_choice", "'tool_choice' must name a function as {\"type\": \"function\", \"function\": {\"name\": ...}}");
  named = c["function"]["name"].get<std::string>();
  if (std::find(names.begin(), names.end(), named) == names.end())
    bad("tool_choice", "'tool_choice' names the function '" + named + "', which is not among the tools");
  return Choice::Named;
}

// Each chosen tool's name and the grammar of its arguments (all tools, or the named one).
ToolGrammars argument_grammars(const OJson& tools, const std::string& named, JsonWhitespace ws) {
  ToolGrammars chosen;
  for (size_t i = 0; i < tools.size(); i++) {
    const OJson& f = tools[i]["function"];
    const std::string name = f["name"].get<std::string>();
    if (!named.empty() && name != named) continue;
    try {
      chosen.emplace_back(name, json_schema_to_gbnf(parameters_schema(f), ws));
    } catch (const Error& e) {
      bad("tools[" + std::to_string(i) + "].function.parameters", e.what(), "unsupported_schema");
    }
  }
  return chosen;
}

// "auto" where the marker is a control token: no grammar (it would never let the model call), so each call
// read is checked against its tool's grammar instead.
void check_calls_after(ToolsRequest& t, const ToolGrammars& tools) {
  for (const auto& [name, gbnf] : tools) t.checks.emplace_back(name, std::make_shared<const Grammar>(Grammar::parse(gbnf)));
}

// The reply's grammars for the choice; the prompt's end where a required call's marker is a control token.
ToolReplyGrammar reply_grammar(ToolsRequest& t, const OJson& tools, const std::string& named, JsonWhitespace ws) {
  const ToolCallSyntax& syntax = *t.syntax;
  const bool several = t.parallel && syntax.several;
  const ToolGrammars chosen = argument_grammars(tools, named, ws);
  ToolReplyGrammar g;
  if (t.choice == ToolsRequest::Choice::Auto) {
    if (!syntax.hidden_marker.empty()) {
      check_calls_after(t, chosen);
      return g;
    }
    g.reply = auto_tool_calls_gbnf(syntax, chosen, several);
    g.calls = tool_calls_gbnf(syntax, chosen, several);
    return g;
  }
  t.prompt_suffix = syntax.hidden_marker;
  g.reply = tool_calls_gbnf(syntax, chosen, several);
  return g;
}

ToolCallSyntax syntax_of(const ToolsRequest& t) { return t.syntax ? *t.syntax : tool_call_syntax(t.format); }

// Whether a call's arguments match its tool's grammar, where the request checks them after the reply.
bool arguments_match(const ToolsRequest& t, const ChatToolCall& call) {
  for (const auto& [name, grammar] : t.checks)
    if (name == call.name) return GrammarMatcher(*grammar).accepts(call.arguments);
  return true;
}

std::string new_tool_call_id() {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  static thread_local std::mt19937_64 rng{(uint64_t{std::random_device{}()} << 32) ^ std::random_device{}()};
  std::string id = "call_";
  for (int i = 0; i < 24; i++) id += kChars[rng() % (sizeof kChars - 1)];
  return id;
}

}  // namespace

ToolsRequest parse_tools(const json& body, const std::string* raw, const ApiContext& ctx, JsonWhitespace ws,
                         std::string& prompt_tools, ToolReplyGrammar& grammar) {
  ToolsRequest t;
  t.format = ctx.chat_format;
  if (present(body, "tools") && !body["tools"].is_array())
    bad("tools", "'tools' must be an array of {\"type\": \"function\", \"function\": {...}}");
  if (present(body, "parallel_tool_calls") && !body["parallel_tool_calls"].is_boolean())
    bad("parallel_tool_calls", "'parallel_tool_calls' must be true or false");
  t.parallel = !present(body, "parallel_tool_calls") || body["parallel_tool_calls"].get<bool>();
  OJson tools = OJson::array();
  if (present(body, "tools")) tools = raw ? OJson::parse(*raw)["tools"] : OJson(body["tools"]);
  std::set<std::string> seen;
  for (size_t i = 0; i < tools.size(); i++) {
    const std::string name = checked_function(tools[i], "tools[" + std::to_string(i) + "]")["name"].get<std::string>();
    if (!seen.insert(name).second) bad("tools", "two tools are named '" + name + "'");
    t.names.push_back(name);
  }
  std::string named;
  t.choice = read_choice(body, !tools.empty(), t.names, named);
  if (t.choice == ToolsRequest::Choice::None) return t;
  if (!chat_format_has_tools(t.format))
    bad("tools", no_tool_syntax_message(t.format) + " (start the server with --chat-format)");
  prompt_tools = tools.dump(-1, ' ', false, OJson::error_handler_t::replace);
  t.syntax = ctx.tokenizer ? tool_call_syntax(t.format, *ctx.tokenizer) : tool_call_syntax(t.format);
  grammar = reply_grammar(t, tools, named, ws);
  return t;
}

void parse_message_tools(const json& m, const std::string& param, ChatMessage& out) {
  if (out.role == "tool") {
    if (!present(m, "tool_call_id") || !m["tool_call_id"].is_string())
      bad(param + ".tool_call_id", "a tool message needs a string 'tool_call_id' (the id of the call it answers)");
    out.tool_call_id = m["tool_call_id"].get<std::string>();
  }
  if (!present(m, "tool_calls")) return;
  const json& calls = m["tool_calls"];
  if (out.role != "assistant") bad(param + ".tool_calls", "only assistant messages have 'tool_calls'");
  if (!calls.is_array()) bad(param + ".tool_calls", "'" + param + ".tool_calls' must be an array");
  for (size_t j = 0; j < calls.size(); j++) {
    const std::string p = param + ".tool_calls[" + std::to_string(j) + "]";
    const json& c = calls[j];
    if (!present(c, "id") || !c["id"].is_string()) bad(p + ".id", "'" + p + ".id' must be a string");
    if (present(c, "type") && c["type"] != "function") bad(p + ".type", "'" + p + ".type' must be \"function\"");
    if (!present(c, "function") || !present(c["function"], "name") || !c["function"]["name"].is_string())
      bad(p + ".function", "'" + p + ".function' must be {\"name\": ..., \"arguments\": \"<JSON object>\"}");
    const json& f = c["function"];
    std::string args = "{}";  // (a client may send the arguments as an object, or none for a call without any)
    if (present(f, "arguments")) args = f["arguments"].is_string() ? f["arguments"].get<std::string>() : f["arguments"].dump();
    if (!OJson::parse(args, nullptr, false).is_object())
      bad(p + ".function.arguments", "'" + p + ".function.arguments' must be the text of a JSON object");
    out.tool_calls.push_back({c["id"].get<std::string>(), f["name"].get<std::string>(), std::move(args)});
  }
}

ParsedReply read_tool_calls(const ToolsRequest& tools, const std::string& reply) {
  ParsedReply p = parse_tool_calls(syntax_of(tools), reply, tools.names);
  for (ChatToolCall& c : p.calls) {
    if (!arguments_match(tools, c)) return {reply, {}};
    c.id = new_tool_call_id();
  }
  return p;
}

json tool_calls_json(const std::vector<ChatToolCall>& calls, bool streamed) {
  json out = json::array();
  for (size_t i = 0; i < calls.size(); i++) {
    json c = {{"id", calls[i].id}, {"type", "function"}, {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
    if (streamed) c["index"] = i;
    out.push_back(std::move(c));
  }
  return out;
}

ToolCallFilter::Out ToolCallFilter::feed(const std::string& piece, int tokens) {
  reply_ += piece;
  held_tokens_ += tokens;
  const size_t free = tool_call_free_length(syntax_of(tools_), reply_);
  if (free <= sent_) return {};
  Out out{reply_.substr(sent_, free - sent_), held_tokens_};
  sent_ = free;
  held_tokens_ = 0;
  return out;
}

ToolCallFilter::Out ToolCallFilter::finish(std::vector<ChatToolCall>& calls) {
  ParsedReply p = read_tool_calls(tools_, reply_);
  calls = std::move(p.calls);
  const std::string& text = calls.empty() ? reply_ : p.content;
  Out out{text.size() > sent_ ? text.substr(sent_) : std::string(), held_tokens_};
  sent_ = reply_.size();
  held_tokens_ = 0;
  return out;
}

}  // namespace jf
