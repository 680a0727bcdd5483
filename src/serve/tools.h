// OpenAI tools in /v1/chat/completions: tools, tool_choice and parallel_tool_calls checked and turned into
// what the prompt shows (tokenizer/chat_tools.h) and what the reply may be ("required" or a named tool: a
// grammar of calls, so every reply is a valid call); the reply's calls read back, whole or streamed.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "grammar/json_schema.h"
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
  bool parse() const { return choice != Choice::None; }  // the reply is read for calls
};

// Reads tools, tool_choice and parallel_tool_calls (ApiError 400 naming the field). `prompt_tools`: the tools'
// JSON for the prompt (ChatOptions::tools), empty with "none"; `gbnf`: with "required" or a named tool, the
// grammar of the reply, else empty. `raw`: the body's text (the schemas' key order); `ws`: the arguments' JSON
// whitespace.
ToolsRequest parse_tools(const nlohmann::json& body, const std::string* raw, const ApiContext& ctx, JsonWhitespace ws,
                         std::string& prompt_tools, std::string& gbnf);

// An assistant message's tool_calls, a tool message's tool_call_id, into `out` (whose role is set).
void parse_message_tools(const nlohmann::json& message, const std::string& param, ChatMessage& out);

// The GBNF of a reply of calls in `syntax`: each call's JSON is {"name": "<name>", "<args_key>": <arguments>},
// with one tool's arguments following its grammar (`tools`: name and json_schema_to_gbnf's grammar).
// `several`: one or more calls, else exactly one.
std::string tool_calls_gbnf(const ToolCallSyntax& syntax, const std::vector<std::pair<std::string, std::string>>& tools,
                            bool several);

// A reply read for calls (parse_tool_calls), each call given a fresh id ("call_" and 24 letters and digits).
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
