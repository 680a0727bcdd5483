// GBNF text pieces the JSON Schema converter (grammar/json_schema.cpp) builds from: literals, code points,
// alternatives, exact decimal grammars of integer ranges, prefix trees of literal sets, and JSON keys other
// than a set of names. Internal to that converter.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace jf::json_schema_text {

using Texts = std::vector<std::vector<std::string>>;  // texts as code points (each its UTF-8 bytes)
using AddRule = std::function<std::string(const std::string& kind, const std::string& body)>;  // -> the rule's name

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

// Decimal texts of equal length: those >= `a`, those <= `b`, those in [a, b].
inline std::string digits(size_t n) { return n == 0 ? "" : n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}"; }
inline std::string span(int lo, int hi) { return lo == hi ? lit(std::string(1, char(lo))) : "[" + std::string(1, char(lo)) + "-" + char(hi) + "]"; }

inline std::string at_least(const std::string& a) {
  if (a.find_first_not_of('0') == std::string::npos) return digits(a.size());
  const std::string more = a[0] < '9' ? " | " + span(a[0] + 1, '9') + " " + digits(a.size() - 1) : "";
  return "( " + lit(a.substr(0, 1)) + " " + at_least(a.substr(1)) + more + " )";
}

inline std::string at_most(const std::string& b) {
  if (b.find_first_not_of('9') == std::string::npos) return digits(b.size());
  const std::string less = b[0] > '0' ? " | " + span('0', b[0] - 1) + " " + digits(b.size() - 1) : "";
  return "( " + lit(b.substr(0, 1)) + " " + at_most(b.substr(1)) + less + " )";
}

inline std::string between(const std::string& a, const std::string& b) {
  if (a.empty()) return "";
  if (a[0] == b[0]) return lit(a.substr(0, 1)) + " " + between(a.substr(1), b.substr(1));
  std::vector<std::string> alts = {lit(a.substr(0, 1)) + " " + at_least(a.substr(1))};
  if (a[0] + 1 < b[0]) alts.push_back(span(a[0] + 1, b[0] - 1) + " " + digits(a.size() - 1));
  alts.push_back(lit(b.substr(0, 1)) + " " + at_most(b.substr(1)));
  return alt(alts);
}

// The naturals in [a, b] without leading zeros (no b: up to 20 digits, as the JSON rule `integer` allows).
inline std::string naturals(uint64_t a, std::optional<uint64_t> b) {
  const std::string sa = std::to_string(a);
  const size_t top = b ? std::to_string(*b).size() : sa.size();
  std::vector<std::string> alts;
  for (size_t len = sa.size(); len <= top; len++) {
    std::string lo = sa;
    if (len > sa.size()) lo = std::string(len, '0'), lo[0] = '1';
    alts.push_back(between(lo, b && len == top ? std::to_string(*b) : std::string(len, '9')));
  }
  if (!b && sa.size() < 20) alts.push_back("[1-9] [0-9]{" + std::to_string(sa.size()) + ",19}");
  return alt(alts);
}

// Integers in [lo, hi] (either may be open; "-0" is 0); nullopt when none.
inline std::optional<std::string> integers(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> alts;
  const int64_t neg_top = hi ? std::min<int64_t>(*hi, -1) : -1;
  if (!lo || *lo <= neg_top) alts.push_back("\"-\" " + naturals(uint64_t(-neg_top), lo ? std::optional<uint64_t>(uint64_t(-*lo)) : std::nullopt));
  const int64_t pos_low = lo ? std::max<int64_t>(*lo, 0) : 0;
  if (!hi || *hi >= pos_low) alts.push_back(naturals(uint64_t(pos_low), hi ? std::optional<uint64_t>(uint64_t(*hi)) : std::nullopt));
  if (pos_low == 0 && (!hi || *hi >= 0)) alts.push_back("\"-0\"");
  if (alts.empty()) return std::nullopt;
  return alt(alts);
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
