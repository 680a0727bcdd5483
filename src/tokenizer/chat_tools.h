// OpenAI tool calls in chat prompts and replies, per chat format: the tools, an assistant's calls and the
// tools' results written as the model's official template writes them, and calls read back out of a reply.
//
//   chatml     Qwen2.5 / Hermes: the tools as JSON lines between <tools></tools> in the system turn; calls as
//              <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>, one or more; results as a user
//              turn of <tool_response>\n...\n</tool_response> blocks.
//   llama3     Llama 3.1 / 3.2 / 3.3: "Environment: ipython" in the dated system turn, the tools (JSON indented
//              by 4) in the first user message; a call is the whole reply, {"name": ..., "parameters": {...}},
//              one per reply; results as ipython turns (the template writes their text as a JSON string).
//   mistral-v3, mistral-v3-tekken, mistral-v7, mistral-v7-tekken  (Mistral-7B-Instruct-v0.3, Mistral-Nemo,
//              Mistral-Small-3.1): [AVAILABLE_TOOLS] [{"type": "function", "function": {...}}][/AVAILABLE_TOOLS]
//              before the last user message; the calls as one array, [TOOL_CALLS] [{"name": ..., "arguments":
//              {...}, "id": "<9 letters and digits>"}, ...]</s>; each result as [TOOL_RESULTS] {"content": ...,
//              "call_id": "..."}[/TOOL_RESULTS] (the tekken v3 without the spaces after the tags; v7 with the
//              system prompt's tag and Mistral Small 3.1's parallel-call instructions).
//   phi4-mini  Phi-4-mini-instruct: the functions as json.dumps writes them between <|tool|> and <|/tool|> in
//              the system turn; the calls as one array, <|tool_call|>[{"name": ..., "arguments": {...}}]<|/tool_call|>
//              after the assistant's text; results as <|tool|>...<|end|> turns (the template's <|role|>).
//
// Gemma, Llama 2, Phi-3, DeepSeek-R1 and Mistral v1: their templates define no tool syntax, so
// render_chat_tools throws for them.
//
// Markers that are control tokens of the vocabulary (Mistral's [TOOL_CALLS], Phi-4-mini's <|tool_call|> and
// <|/tool_call|> in the real vocabularies) are never in jf's output text (decoding drops control tokens) and
// never allowed by a grammar: tool_call_syntax(f, tok) gives the calls as they read in that vocabulary's text.
#pragma once
#include <string>
#include <vector>

#include "tokenizer/chat.h"

namespace jf {

bool chat_format_has_tools(ChatFormat f);
// The formats that have, for messages: "chatml, llama3, phi4-mini, mistral-v3, ...".
std::string tool_chat_format_names();
// Why a format takes no tools (the text of the error render_chat_tools throws).
std::string no_tool_syntax_message(ChatFormat f);
// Whether a conversation holds tool calls or tool results.
bool has_tool_turns(const std::vector<ChatMessage>& messages);

// render_chat of a conversation with tools (ChatOptions::tools), tool calls or tool results. Throws jf::Error
// for a format without tool syntax, tools or call arguments that are not JSON, and what the template refuses
// (llama3: more than one call in a message; tools but no user message to write them into; Mistral: a system
// message after the first message).
std::string render_chat_tools(ChatFormat f, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                              const Tokenizer& tok, const ChatOptions& opts);

// A call id as Mistral's templates write it: 9 letters and digits, the last ones of `id` (jf's ids end with
// 24 random ones), '0's in front when it has fewer.
std::string mistral_call_id(const std::string& id);

// How a format's replies call tools. Each call's JSON is {"name": "<name>", "<args_key>": <arguments object>}
// (with `ids`, optionally followed by , "id": "<9 letters and digits>"), exactly these separators, as the
// template writes past calls. Not `array`: each call is `open` JSON `close`, calls joined by `separator`
// (chatml). `array`: the calls are one JSON array, `open` [call, call] `close` with `separator` between calls
// (Mistral, Phi-4-mini).
struct ToolCallSyntax {
  std::string open, close, separator;
  std::string args_key;
  bool several = true;       // a reply may hold more than one call
  bool whole_reply = false;  // the calls are the whole reply, no text before them
  bool array = false;
  bool ids = false;
  std::string marker;  // the special text at the start of `open` that announces calls ("" with whole_reply)
  // tool_call_syntax(f, tok): the marker as a control token of the vocabulary, left out of `open` (the
  // model writes it, but the text never shows it and a grammar cannot allow it); else "".
  std::string hidden_marker;
};
ToolCallSyntax tool_call_syntax(ChatFormat f);  // throws jf::Error for a format without tool syntax
// The calls as they read in `tok`'s text: the array formats' markers that are control tokens of `tok` left out
// (chatml's per-call tags are kept: without them calls would have no boundaries).
ToolCallSyntax tool_call_syntax(ChatFormat f, const Tokenizer& tok);

// A reply split into its text (trailing whitespace before the calls dropped) and its calls (ids empty,
// arguments as compact JSON). Calls are read only when everything after the text is well-formed calls of
// tools named in `names` (the text ends where the calls' opening first makes that so); otherwise `calls` is
// empty and `content` is the whole reply.
struct ParsedReply {
  std::string content;
  std::vector<ChatToolCall> calls;
};
ParsedReply parse_tool_calls(const ToolCallSyntax& syntax, const std::string& reply, const std::vector<std::string>& names);
ParsedReply parse_tool_calls(ChatFormat f, const std::string& reply, const std::vector<std::string>& names);

// How many bytes at the start of an unfinished reply are text whatever follows (the rest may still turn out
// to be calls): what a stream can send before the reply is complete. Never more than parse_tool_calls's
// content of any completion of the reply.
size_t tool_call_free_length(const ToolCallSyntax& syntax, const std::string& reply);
size_t tool_call_free_length(ChatFormat f, const std::string& reply);

}  // namespace jf
