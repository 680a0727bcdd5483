#include "grammar/gbnf_compose.h"

#include <cctype>

#include "grammar/json_schema_text.h"

namespace jf {

namespace {

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

// From `at` (an opening quote or bracket) past the unescaped `close`; a backslash escapes the next byte.
size_t past_quoted(std::string_view s, size_t at, char close) {
  for (size_t i = at + 1; i < s.size(); i++) {
    if (s[i] == '\\') i++;
    else if (s[i] == close) return i + 1;
  }
  return s.size();
}

}  // namespace

std::string prefix_gbnf_rules(std::string_view gbnf, std::string_view prefix) {
  std::string out;
  out.reserve(gbnf.size() + gbnf.size() / 4);
  size_t i = 0;
  while (i < gbnf.size()) {
    const char c = gbnf[i];
    size_t end = i + 1;
    if (c == '"') end = past_quoted(gbnf, i, '"');
    else if (c == '[') end = past_quoted(gbnf, i, ']');
    else if (c == '{') end = std::min(gbnf.size(), gbnf.find('}', i)) + 1;  // {m,n}: digits, not names
    else if (c == '#') end = std::min(gbnf.size(), gbnf.find('\n', i));
    else if (name_char(c)) {
      while (end < gbnf.size() && name_char(gbnf[end])) end++;
      out += prefix;
    }
    out += gbnf.substr(i, end - i);
    i = end;
  }
  return out;
}

std::string gbnf_literal(const std::string& text) { return json_schema_text::lit(text); }

}  // namespace jf
