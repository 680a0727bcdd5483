// GBNF of replies with tool calls: calls only, or (tool_choice "auto") text, then optionally calls. Free text
// "without the marker" is a regular language: one rule per state of the marker's KMP automaton, each rule
// reading one more code point and naming the next state in tail position (so the matcher's stacks stay flat).
#include "serve/tool_grammar.h"

#include <cstdio>
#include <set>

#include "base/error.h"
#include "grammar/gbnf_compose.h"
#include "tokenizer/utf8.h"

namespace jf {

namespace {

// A marker's code points, and one as UTF-8 (the tokenizer's reader and writer).
std::vector<uint32_t> code_points(const std::string& s) {
  std::vector<uint32_t> out;
  uint32_t cp = 0;
  for (size_t i = 0; i < s.size();)
    if (tok::utf8_next(s, i, cp)) out.push_back(cp);
  return out;
}

std::string utf8(uint32_t cp) {
  std::string s;
  tok::utf8_append(s, cp);
  return s;
}

// [^...] of the code points, each escaped (so none is read as class syntax).
std::string class_without(const std::set<uint32_t>& cps) {
  std::string c = "[^";
  char b[16];
  for (uint32_t cp : cps) {
    std::snprintf(b, sizeof b, cp < 0x10000 ? "\\u%04X" : "\\U%08X", cp);
    c += b;
  }
  return c + "]";
}

// The KMP automaton's step: from `k` matched code points of `s`, reading `c`.
size_t kmp_next(const std::vector<uint32_t>& s, const std::vector<size_t>& fail, size_t k, uint32_t c) {
  while (k > 0 && s[k] != c) k = fail[k - 1];
  return s[k] == c ? k + 1 : 0;
}

std::vector<size_t> kmp_failure(const std::vector<uint32_t>& s) {
  std::vector<size_t> fail(s.size(), 0);
  for (size_t i = 1, k = 0; i < s.size(); i++) {
    while (k > 0 && s[i] != s[k]) k = fail[k - 1];
    if (s[i] == s[k]) k++;
    fail[i] = k;
  }
  return fail;
}

std::string id_gbnf() { return "( " + gbnf_literal(", \"id\": \"") + " [a-zA-Z0-9]{9} " + gbnf_literal("\"") + " )?"; }

// call-body (one call's JSON), calls-rest (what follows `open`) and each tool's rules.
std::string calls_rules(const ToolCallSyntax& syn, const ToolGrammars& tools, bool several) {
  std::string alts;
  for (size_t i = 0; i < tools.size(); i++) alts += (i ? " | t" : "t") + std::to_string(i);
  std::string g = "call-body ::= " + gbnf_literal("{\"name\": ") + " ( " + alts + " ) " + (syn.ids ? id_gbnf() + " " : "") +
                  gbnf_literal("}") + "\n";
  const std::string sep = gbnf_literal(syn.separator), close = gbnf_literal(syn.close);
  if (syn.array)
    g += "calls-rest ::= \"[\" call-body " + (several ? "( " + sep + " call-body )* " : "") + "\"]\" " + close + "\n";
  else
    g += "calls-rest ::= call-body " + close + (several ? " ( " + sep + " " + gbnf_literal(syn.open) + " call-body " + close + " )*" : "") + "\n";
  for (size_t i = 0; i < tools.size(); i++) {  // each tool's own rules under the prefix "t<i>-"
    const std::string t = std::string("t").append(std::to_string(i));
    g += t + " ::= " + gbnf_literal("\"" + tools[i].first + "\", \"" + syn.args_key + "\": ") + " " + t + "-root\n";
    g += prefix_gbnf_rules(tools[i].second, t + "-");
  }
  return g;
}

// Llama 3.1's text: what parse_tool_calls cannot read as a call (after whitespace, neither '{' nor the start
// of <|python_tag|>, which the parser skips).
std::string text_not_call_gbnf() {
  const std::vector<uint32_t> tag = code_points("<|python_tag|>");
  std::string g = "text ::= [ \\t\\n\\r]* text-start\n";
  g += "text-start ::= \"\" | [^{<\\x20\\t\\n\\r] text-any | \"<\" tag-1\n";
  for (size_t i = 1; i < tag.size(); i++) {
    g += "tag-" + std::to_string(i) + " ::= \"\" | " + class_without({tag[i]}) + " text-any";
    if (i + 1 < tag.size()) g += " | " + gbnf_literal(utf8(tag[i])) + " tag-" + std::to_string(i + 1);
    g += "\n";
  }
  return g + "text-any ::= [\\x00-\\U0010FFFF]*\n";
}

}  // namespace

std::string text_without_gbnf(const std::string& marker, const std::string& prefix, const std::string& then) {
  const std::vector<uint32_t> s = code_points(marker);
  if (s.empty()) throw Error("text_without_gbnf: an empty marker");
  const std::vector<size_t> fail = kmp_failure(s);
  const std::set<uint32_t> chars(s.begin(), s.end());
  std::string g;
  for (size_t k = 0; k < s.size(); k++) {
    g += prefix + std::to_string(k) + " ::= \"\" | " + class_without(chars) + " " + prefix + "0";
    for (uint32_t c : chars) {
      const size_t next = kmp_next(s, fail, k, c);
      if (next < s.size()) g += " | " + gbnf_literal(utf8(c)) + " " + prefix + std::to_string(next);
      else if (!then.empty()) g += " | " + gbnf_literal(utf8(c)) + " " + then;
    }
    g += "\n";
  }
  return g;
}

std::string tool_calls_gbnf(const ToolCallSyntax& syntax, const ToolGrammars& tools, bool several) {
  return "root ::= " + gbnf_literal(syntax.open) + " calls-rest\n" + calls_rules(syntax, tools, several);
}

std::string auto_tool_calls_gbnf(const ToolCallSyntax& syntax, const ToolGrammars& tools, bool several) {
  if (!syntax.hidden_marker.empty()) throw Error("a grammar cannot allow the control token " + syntax.hidden_marker);
  if (syntax.whole_reply) return "root ::= call-body | text\n" + text_not_call_gbnf() + calls_rules(syntax, tools, several);
  // After the marker: the rest of `open` (chatml's "\n"), then the calls.
  const std::string after_marker = syntax.open.substr(syntax.marker.size());
  return "root ::= text-0\nafter-marker ::= " + gbnf_literal(after_marker) + " calls-rest\n" +
         text_without_gbnf(syntax.marker, "text-", "after-marker") + calls_rules(syntax, tools, several);
}

std::string either_gbnf(const std::string& a, const std::string& b) {
  return "root ::= a-root | b-root\n" + prefix_gbnf_rules(a, "a-") + prefix_gbnf_rules(b, "b-");
}

}  // namespace jf
