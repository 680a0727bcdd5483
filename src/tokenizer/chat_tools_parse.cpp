// Tool calls read back out of a reply (whole, or how much of a streamed one is surely text), in the syntax
// of the chat format as the vocabulary's text shows it (chat_tools.h).
#include <algorithm>

#include "tokenizer/chat_internal.h"
#include "tokenizer/chat_tools.h"
#include "tokenizer/chat_tools_internal.h"

namespace jf {

using namespace chat_detail;
using namespace chat_tools_detail;

namespace {

// One call's JSON of a known tool: {"name": ..., "arguments" or "parameters": {...}}, and with `ids` an
// optional string "id" (Mistral's); nothing else.
bool read_call(const OJson& j, const std::vector<std::string>& names, bool ids, ChatToolCall& call) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return false;
  const bool has_id = ids && j.contains("id") && j["id"].is_string();
  if (j.size() != (has_id ? 3u : 2u)) return false;
  const OJson* args = j.contains("arguments") ? &j["arguments"] : j.contains("parameters") ? &j["parameters"] : nullptr;
  if (!args || !args->is_object()) return false;
  call.name = j["name"].get<std::string>();
  call.arguments = dump(*args);
  return std::find(names.begin(), names.end(), call.name) != names.end();
}

bool read_call(const std::string& text, const std::vector<std::string>& names, bool ids, ChatToolCall& call) {
  return read_call(OJson::parse(text, nullptr, false), names, ids, call);
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t skip_space(const std::string& s, size_t at) {
  while (at < s.size() && is_space(s[at])) at++;
  return at;
}

size_t trim_end(const std::string& s, size_t end) {
  while (end > 0 && is_space(s[end - 1])) end--;
  return end;
}

// Llama 3.1: the reply is one call (after <|python_tag|>, which the model may write first).
ParsedReply parse_whole_reply(const std::string& reply, const std::vector<std::string>& names) {
  std::string text = trim(reply);
  if (text.rfind("<|python_tag|>", 0) == 0) text = text.substr(14);
  ChatToolCall call;
  if (!read_call(text, names, false, call)) return {reply, {}};
  return {"", {call}};
}

// What starts the calls in the text: the opening (its own whitespace optional), and an array's "[" when the
// opening is a hidden control token.
std::string calls_trigger(const ToolCallSyntax& syn) {
  const std::string open = trim(syn.open);
  return open.empty() && syn.array ? "[" : open;
}

// chatml: `open` call `close`, again and again, to the end of the reply (whitespace between blocks).
bool read_blocks(const ToolCallSyntax& syn, const std::string& reply, size_t at, const std::vector<std::string>& names,
                 std::vector<ChatToolCall>& calls) {
  const std::string open = trim(syn.open), close = trim(syn.close);
  for (; at < reply.size(); at = skip_space(reply, at)) {
    if (reply.compare(at, open.size(), open) != 0) return false;
    const size_t end = reply.find(close, at + open.size());
    if (end == std::string::npos) return false;
    ChatToolCall call;
    if (!read_call(reply.substr(at + open.size(), end - at - open.size()), names, syn.ids, call)) return false;
    calls.push_back(std::move(call));
    at = end + close.size();
  }
  return !calls.empty();
}

// Mistral, Phi-4-mini: `open` [call, ...] `close`, then only whitespace.
bool read_array(const ToolCallSyntax& syn, const std::string& reply, size_t at, const std::vector<std::string>& names,
                std::vector<ChatToolCall>& calls) {
  at = skip_space(reply, at + trim(syn.open).size());
  size_t end = trim_end(reply, reply.size());
  const std::string close = trim(syn.close);
  if (end < at + close.size() || reply.compare(end - close.size(), close.size(), close) != 0) return false;
  const OJson list = OJson::parse(reply.substr(at, end - close.size() - at), nullptr, false);
  if (!list.is_array() || list.empty()) return false;
  for (const OJson& j : list) {
    ChatToolCall call;
    if (!read_call(j, names, syn.ids, call)) return false;
    calls.push_back(std::move(call));
  }
  return true;
}

}  // namespace

ParsedReply parse_tool_calls(const ToolCallSyntax& syn, const std::string& reply, const std::vector<std::string>& names) {
  if (syn.whole_reply) return parse_whole_reply(reply, names);
  const std::string trigger = calls_trigger(syn);
  // The first opening after which everything is calls (a hidden marker leaves a bare "[" that text may hold).
  for (size_t at = reply.find(trigger); at != std::string::npos; at = reply.find(trigger, at + 1)) {
    ParsedReply out{reply.substr(0, trim_end(reply, at)), {}};
    if (syn.array ? read_array(syn, reply, at, names, out.calls) : read_blocks(syn, reply, at, names, out.calls)) return out;
  }
  return {reply, {}};
}

ParsedReply parse_tool_calls(ChatFormat f, const std::string& reply, const std::vector<std::string>& names) {
  return parse_tool_calls(tool_call_syntax(f), reply, names);
}

size_t tool_call_free_length(const ToolCallSyntax& syn, const std::string& reply) {
  if (syn.whole_reply) {  // text, unless it starts (after whitespace) like a call
    const std::string rest = reply.substr(skip_space(reply, 0));
    const std::string tag = "<|python_tag|>";
    const bool maybe_call = rest.empty() || rest[0] == '{' || rest.rfind(tag, 0) == 0 || tag.rfind(rest, 0) == 0;
    return maybe_call ? 0 : reply.size();
  }
  const std::string open = calls_trigger(syn);
  size_t end = reply.find(open);
  if (end == std::string::npos) {  // hold back an end that may be the beginning of the opening
    end = reply.size();
    for (size_t k = std::min(open.size() - 1, reply.size()); k > 0; k--)
      if (reply.compare(reply.size() - k, k, open, 0, k) == 0) {
        end = reply.size() - k;
        break;
      }
  }
  return trim_end(reply, end);
}

size_t tool_call_free_length(ChatFormat f, const std::string& reply) { return tool_call_free_length(tool_call_syntax(f), reply); }

}  // namespace jf
