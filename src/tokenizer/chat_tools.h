// OpenAI tool calls in chat prompts and replies, per chat format: the tools, an assistant's calls and the
// tools' results written as the model's template writes them, and calls read back out of a reply.
//
//   chatml  Qwen2.5 / Hermes: the tools as JSON lines between <tools></tools> in the system turn; calls as
//           <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, one or more; results as a user turn of
//           <tool_response>\n...\n</tool_response> blocks.
//   llama3  Llama 3.1 / 3.2 / 3.3: "Environment: ipython" in the dated system turn, the tools (JSON indented by 4)
//           in the first user message; a call is the whole reply, {"name": ..., "parameters": {...}}, one per
//           reply; results as ipython turns (the template writes their text as a JSON string).
//
// Other formats have no tool syntax in jf: render_chat_tools throws for them.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/chat.h"

namespace jf {

bool chat_format_has_tools(ChatFormat f);
// The formats that have, for messages: "chatml, llama3".
std::string tool_chat_format_names();
// Whether a conversation holds tool calls or tool results.
bool has_tool_turns(const std::vector<ChatMessage>& messages);

// render_chat of a conversation with tools (ChatOptions::tools), tool calls or tool results. Throws jf::Error
// for a format without tool syntax, tools or call arguments that are not JSON, and what the template refuses
// (llama3: more than one call in a message; tools but no user message to write them into).
std::string render_chat_tools(ChatFormat f, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                              const Tokenizer& tok, const ChatOptions& opts);

// How a format's replies call tools: each call is `open` {"name": "<name>", "<args_key>": <arguments object>}
// `close` (exactly these separators, as the template writes past calls), calls joined by `separator`.
struct ToolCallSyntax {
  std::string open, close, separator;
  std::string args_key;
  bool several = true;       // a reply may hold more than one call
  bool whole_reply = false;  // the calls are the whole reply, no text before them
};
ToolCallSyntax tool_call_syntax(ChatFormat f);  // throws jf::Error for a format without tool syntax

// A reply split into its text (trailing whitespace before the calls dropped) and its calls (ids empty,
// arguments as compact JSON). Calls are read only when everything after the text is well-formed calls of
// tools named in `names`; otherwise `calls` is empty and `content` is the whole reply.
struct ParsedReply {
  std::string content;
  std::vector<ChatToolCall> calls;
};
ParsedReply parse_tool_calls(ChatFormat f, const std::string& reply, const std::vector<std::string>& names);

// How many bytes at the start of an unfinished reply are text whatever follows (the rest may still turn out
// to be calls): what a stream can send before the reply is complete. Never more than parse_tool_calls's
// content of any completion of the reply.
size_t tool_call_free_length(ChatFormat f, const std::string& reply);

}  // namespace jf
