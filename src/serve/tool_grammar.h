// The grammars of replies with tool calls (GBNF): a reply that is calls ("required", a named tool), and
// tool_choice "auto"'s reply, free text that may end in calls, every call's arguments by its tool's schema.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat_tools.h"

namespace jf {

// Each tool: its name and json_schema_to_gbnf's grammar of its arguments.
using ToolGrammars = std::vector<std::pair<std::string, std::string>>;

// A reply of calls in `syntax` (its `open` as the text shows it): each call's JSON is
// {"name": "<name>", "<args_key>": <arguments>} (Mistral: optionally , "id": "<9 letters and digits>"), one
// tool's arguments following its grammar. `several`: one or more calls, else exactly one.
std::string tool_calls_gbnf(const ToolCallSyntax& syntax, const ToolGrammars& tools, bool several);

// tool_choice "auto": text that does not hold the format's marker, optionally followed by the marker and then
// calls as tool_calls_gbnf's to the end of the reply. whole_reply (llama3): either a call, or text that
// parse_tool_calls cannot read as one (not starting, after whitespace, with '{' or <|python_tag|>). The syntax
// must show its marker (no hidden_marker: a grammar cannot allow a control token).
std::string auto_tool_calls_gbnf(const ToolCallSyntax& syntax, const ToolGrammars& tools, bool several);

// GBNF rules `<prefix>0` .. `<prefix><n-1>` (n: the marker's code points): text without `marker`, one rule per
// matched prefix of it (the states of its Knuth-Morris-Pratt automaton), `<prefix>0` reading from the start.
// Where the marker would be complete, `then` (a rule name) follows it instead. `marker` is not empty.
std::string text_without_gbnf(const std::string& marker, const std::string& prefix, const std::string& then);

// A grammar whose sentences are those of `a` and those of `b` (their rules renamed apart).
std::string either_gbnf(const std::string& a, const std::string& b);

}  // namespace jf
