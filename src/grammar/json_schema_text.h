// GBNF text pieces the JSON Schema converter (grammar/json_schema*.cpp) builds from: its errors, literals, code
// points, alternatives, repetition counts, prefix trees of literal sets, and JSON keys other than a set of
// names. Internal to that converter.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"

namespace jf::json_schema_text {

using Texts = std::vector<std::vector<std::string>>;  // texts as code points (each its UTF-8 bytes)
using AddRule = std::function<std::string(const std::string& kind, const std::string& body)>;  // -> the rule's name

constexpr int64_t kMaxCount = 10000;  // the most a GBNF {m,n} repeats

inline std::string where(const std::string& ptr) { return ptr.empty() ? "/" : ptr; }

[[noreturn]] inline void unsupported(const std::string& kw, const std::string& ptr, const std::string& why = "") {
  throw Error("json schema: unsupported keyword '" + kw + "' at " + where(ptr) + (why.empty() ? "" : " (" + why + ")"));
}

[[noreturn]] inline void malformed(const std::string& kw, const std::string& ptr, const std::string& what) {
  throw Error("json schema: '" + kw + "' at " + where(ptr) + " " + what);
}

// The GBNF repetition suffix for m..n times (n < 0: unbounded); "" for exactly once. `kw` names the keyword
// whose counts they are.
inline std::string rep(int64_t m, int64_t n, const std::string& kw, const std::string& ptr) {
  if (m > kMaxCount || n > kMaxCount) unsupported(kw, ptr, "counts above " + std::to_string(kMaxCount));
  const std::string lo = std::to_string(m), hi = std::to_string(n);  // (named: GCC 12 warns wrongly on "{" + string&&)
  if (n < 0) return m == 0 ? "*" : m == 1 ? "+" : "{" + lo + ",}";
  if (m == n) return m == 1 ? "" : "{" + lo + "}";
  return m == 0 && n == 1 ? "?" : "{" + lo + "," + hi + "}";
}

inline std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); i++) out += (i ? sep : "") + parts[i];
  return out;
}

// Alternatives as one item of a sequence.
inline std::string alt(const std::vector<std::string>& alts) { return alts.size() == 1 ? alts[0] : "( " + join(alts, " | ") + " )"; }

// A GBNF string literal of UTF-8 text.
inline std::string lit(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += {'\\', c};
    } else if (u < 0x20) {
      out += {'\\', 'x', "0123456789ABCDEF"[u >> 4], "0123456789ABCDEF"[u & 15]};
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A code point (its UTF-8 bytes) inside a GBNF character class.
inline std::string class_char(const std::string& c) {
  const bool esc = c.size() == 1 && std::string("\\]-^[").find(c[0]) != std::string::npos;
  return esc ? "\\" + c : c;
}

// UTF-8 text as its code points, each as its bytes: the unit of literal prefix trees and key exclusion.
inline std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size(); i++) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) == 0x80 && !out.empty()) out.back() += s[i];
    else out.emplace_back(1, s[i]);
  }
  return out;
}

// The JSON text of a code point (its UTF-8 bytes) inside a string, as nlohmann's dump writes it.
inline std::string canonical(const std::string& c) {
  const std::string s = nlohmann::json(c).dump();
  return s.substr(1, s.size() - 2);
}

// Code points that canonical text escapes: '"', '\\' and the control characters.
inline std::vector<std::string> specials() {
  std::vector<std::string> out = {"\"", "\\"};
  for (char c = 0; c < 0x20; c++) out.emplace_back(1, c);
  return out;
}

inline bool special(const std::string& c) { return c.size() == 1 && (static_cast<unsigned char>(c[0]) < 0x20 || c[0] == '"' || c[0] == '\\'); }

// Alternatives between the texts t[lo, hi) (sorted, sharing their first `from` code points), factored by
// common prefixes so that the matcher keeps one stack per prefix read, not one per text.
inline std::string prefix_tree(const Texts& t, size_t lo, size_t hi, size_t from, const AddRule& add) {
  size_t d = from;
  while (t[lo].size() > d && t[hi - 1].size() > d && t[lo][d] == t[hi - 1][d]) d++;  // sorted: the first and last agree
  const std::string prefix = d > from ? lit(join(std::vector<std::string>(t[lo].begin() + long(from), t[lo].begin() + long(d)), "")) + " " : "";
  std::vector<std::string> alts;
  size_t i = lo;
  if (t[i].size() == d) alts.push_back(""), i++;  // the text ending here sorts first
  for (size_t j = i; i < hi; i = j) {
    while (j < hi && t[j][d] == t[i][d]) j++;
    alts.push_back(prefix_tree(t, i, j, d, add));
  }
  return alts.size() == 1 ? prefix + alts[0] : prefix + add("lits", join(alts, " | "));
}

// A JSON key's rest after its first `d` code points, which t[lo, hi) (sorted) share: one of them must not be
// all of it. Each step may leave the names behind (then rule `crest` ends the key: canonical characters and the
// closing quote, `cesc` being the canonical escapes), or end the key where no name ends.
inline std::string key_node(const Texts& t, size_t lo, size_t hi, size_t d, const AddRule& add) {
  std::vector<std::string> alts;
  std::set<std::string> kids;
  const bool ends = t[lo].size() == d;
  for (size_t i = lo + ends, j = i; i < hi; i = j) {
    while (j < hi && t[j][d] == t[i][d]) j++;
    kids.insert(t[i][d]);
    alts.push_back(lit(canonical(t[i][d])) + " " + key_node(t, i, j, d + 1, add));
  }
  std::string other = "[^\"\\\\\\x00-\\x1F\\uD800-\\uDFFF";
  bool special_kid = false;
  for (const std::string& c : kids) {
    if (special(c)) special_kid = true;
    else other += class_char(c);
  }
  alts.push_back(other + "] crest");
  if (!special_kid) alts.push_back("cesc crest");
  for (const std::string& c : specials())
    if (special_kid && !kids.count(c)) alts.push_back(lit(canonical(c)) + " crest");
  if (!ends) alts.push_back("\"\\\"\"");
  return add("key", join(alts, " | "));
}

}  // namespace jf::json_schema_text
