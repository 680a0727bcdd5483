// OpenAI tools in /v1/chat/completions: tools, tool_choice and parallel_tool_calls checked and turned into
// what the prompt shows (tokenizer/chat_tools.h) and what the reply may be (serve/tool_grammar.h: "required"
// or a named tool, a grammar of calls; "auto", text that may end in calls; either way every call's arguments
// follow its tool's schema); the reply's calls read back, whole or streamed.
#pragma once
#include <nlohmann/json.hpp>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "serve/tool_grammar.h"
#include "tokenizer/chat_tools.h"

namespace jf {

struct ApiContext;

struct ToolsRequest {
  // none: no tools in the prompt, the reply is text; auto: the model may call; required / named: it must.
  enum class Choice { None, Auto, Required, Named };
  Choice choice = Choice::None;
  ChatFormat format = ChatFormat::None;
  std::vector<std::string> names;  // every tool's name
  bool parallel = true;            // several calls in one reply (where the format has them)
  // The calls as the vocabulary's text shows them (tool_call_syntax(format, tokenizer)); unset: the format's.
  std::optional<ToolCallSyntax> syntax;
  // Text the prompt ends with (encoded with its special tokens): with "required" or a named tool, a marker
  // that is a control token (Mistral's [TOOL_CALLS]), which the model must see but a grammar cannot allow.
  std::string prompt_suffix;
  // "auto" without a grammar (the marker is a control token): each tool's arguments grammar, which a call's
  // arguments must match to be read as a call.
  std::vector<std::pair<std::string, std::shared_ptr<const Grammar>>> checks;
  bool parse() const { return choice != Choice::None; }  // the reply is read for calls
};

// The grammars a request's tools give the reply (GBNF, "" for none).
struct ToolReplyGrammar {
  std::string reply;  // "required" / named: calls; "auto": text, then optionally calls
  std::string calls;  // "auto": a reply of calls only (the alternative to a response_format's or grammar's text)
};

// Reads tools, tool_choice and parallel_tool_calls (ApiError 400 naming the field; a tool's unsupported
// parameters schema too, unless tool_choice is "none"). `prompt_tools`: the tools' JSON for the prompt
// (ChatOptions::tools), empty with "none". `raw`: the body's text (the schemas' key order); `ws`: the
// arguments' JSON whitespace.
ToolsRequest parse_tools(const nlohmann::json& body, const std::string* raw, const ApiContext& ctx, JsonWhitespace ws,
                         std::string& prompt_tools, ToolReplyGrammar& grammar);

// An assistant message's tool_calls, a tool message's tool_call_id, into `out` (whose role is set).
void parse_message_tools(const nlohmann::json& message, const std::string& param, ChatMessage& out);

// A reply read for calls (parse_tool_calls in the request's syntax; with `checks`, only calls whose arguments
// match their tool's grammar), each call given a fresh id ("call_" and 24 letters and digits).
ParsedReply read_tool_calls(const ToolsRequest& tools, const std::string& reply);

// OpenAI's message.tool_calls; streamed (a delta): each with its index.
nlohmann::json tool_calls_json(const std::vector<ChatToolCall>& calls, bool streamed);

// A streamed reply with tools: text goes out as it comes until a call may have begun; the rest is held until
// the reply is complete, then sent as calls (or as text, when it is not calls after all). So the streamed text
// and calls are exactly the whole answer's.
class ToolCallFilter {
 public:
  struct Out {
    std::string text;
    int tokens = 0;  // the tokens behind it, those of held pieces included
  };
  explicit ToolCallFilter(ToolsRequest tools) : tools_(std::move(tools)) {}
  Out feed(const std::string& piece, int tokens);  // text "" while holding
  // Once the reply is complete: the text still to send, and `calls`.
  Out finish(std::vector<ChatToolCall>& calls);

 private:
  ToolsRequest tools_;
  std::string reply_;
  size_t sent_ = 0;
  int held_tokens_ = 0;
};

}  // namespace jf
