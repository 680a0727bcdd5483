// Building one GBNF grammar out of others: json_schema_to_gbnf writes a whole grammar (root, ws, value, ...)
// per schema, so to join several (the arguments of several tools) each one's rules get a prefix of their own.
#pragma once
#include <string>
#include <string_view>

namespace jf {

// `gbnf` with every rule name, defined or referenced, written as `prefix` + name: names outside string
// literals, character classes, repetition counts and comments. (The parser's own '#' names never appear in
// a text.)
std::string prefix_gbnf_rules(std::string_view gbnf, std::string_view prefix);

// A GBNF string literal matching `text` (UTF-8) exactly.
std::string gbnf_literal(const std::string& text);

}  // namespace jf
