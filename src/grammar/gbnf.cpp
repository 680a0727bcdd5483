// GBNF text -> Grammar: a recursive-descent parser over the text, then the checks a top-down matcher needs
// (every rule defined, no left recursion).
#include <algorithm>
#include <functional>
#include <map>

#include "base/error.h"
#include "grammar/grammar.h"
#include "tokenizer/utf8.h"

namespace jf {

bool CharClass::matches(uint32_t c) const {
  bool in = false;
  for (const auto& [lo, hi] : ranges) in = in || (c >= lo && c <= hi);
  return in != negated;
}

bool CharClass::matches_any(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const auto& [a, b] : ranges)
      if (a <= hi && b >= lo) return true;
    return false;
  }
  // Some code point of [lo, hi] lies outside every range: walk the gaps the ranges leave.
  std::vector<std::pair<uint32_t, uint32_t>> r = ranges;
  std::sort(r.begin(), r.end());
  uint32_t next = lo;
  for (const auto& [a, b] : r) {
    if (a > next) return next <= hi;
    if (b >= next) {
      if (b >= hi) return false;
      next = b + 1;
    }
  }
  return next <= hi;
}

int Grammar::rule_index(std::string_view name) const {
  for (size_t i = 0; i < rule_names.size(); i++)
    if (rule_names[i] == name) return static_cast<int>(i);
  return -1;
}

namespace {

using Seq = std::vector<GrammarElement>;  // one alternative, without its End
using Alts = std::vector<Seq>;
constexpr int kMaxRepeat = 10000;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Grammar run(std::string_view root_name) {
    skip_space();
    while (pos_ < s_.size()) parse_rule();
    const auto root = index_.find(std::string(root_name));
    if (root == index_.end() || !defined_[root->second]) fail("no rule named '" + std::string(root_name) + "'");
    for (size_t r = 0; r < names_.size(); r++)
      if (!defined_[r]) fail_at(first_use_[r], "rule '" + names_[r] + "' is used but never defined");
    Grammar g = flatten();
    g.root = root->second;
    check_left_recursion(g);
    return g;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  std::vector<Alts> rules_;
  std::vector<std::string> names_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
  std::map<std::string, uint32_t> index_;
  std::vector<CharClass> classes_;
  size_t elements_ = 0;

  [[noreturn]] void fail_at(size_t at, const std::string& what) const {
    const long line = 1 + std::count(s_.begin(), s_.begin() + static_cast<long>(std::min(at, s_.size())), '\n');
    throw Error("grammar: line " + std::to_string(line) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

  bool at_end() const { return pos_ >= s_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  static bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

  void skip_space() {
    while (!at_end()) {
      if (peek() == '#') {
        while (!at_end() && peek() != '\n') pos_++;
      } else if (std::isspace(static_cast<unsigned char>(peek()))) {
        pos_++;
      } else {
        return;
      }
    }
  }

  uint32_t rule_id(const std::string& name, size_t at) {
    const auto [it, added] = index_.emplace(name, static_cast<uint32_t>(names_.size()));
    if (added) {
      names_.push_back(name);
      rules_.emplace_back();
      defined_.push_back(false);
      first_use_.push_back(at);
    }
    return it->second;
  }

  uint32_t new_rule(const std::string& base, Alts alts) {
    // "#" cannot occur in a written name: a rule the text defines is never taken for a generated one.
    const uint32_t id = rule_id(base + "#" + std::to_string(names_.size()), pos_);
    defined_[id] = true;
    count(alts);
    rules_[id] = std::move(alts);
    return id;
  }

  void count(const Alts& alts) {
    for (const Seq& seq : alts) elements_ += seq.size() + 1;
    if (elements_ > kMaxGrammarElements) fail("grammar too large (more than " + std::to_string(kMaxGrammarElements) + " elements)");
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && name_char(peek())) pos_++;
    if (pos_ == start) fail(std::string("expected a rule name, found '") + (at_end() ? std::string("end of text") : std::string(1, peek())) + "'");
    return std::string(s_.substr(start, pos_ - start));
  }

  // A rule name followed by ::= starts the next rule, which ends the current one.
  bool at_rule_start() const {
    size_t p = pos_;
    while (p < s_.size() && name_char(s_[p])) p++;
    if (p == pos_) return false;
    while (p < s_.size() && (s_[p] == ' ' || s_[p] == '\t' || s_[p] == '\n' || s_[p] == '\r')) p++;
    return s_.substr(p, 3) == "::=";
  }

  void parse_rule() {
    const size_t start = pos_;
    const std::string name = parse_name();
    skip_space();
    if (s_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '" + name + "'");
    pos_ += 3;
    skip_space();
    const uint32_t id = rule_id(name, start);
    if (defined_[id]) fail_at(start, "rule '" + name + "' is defined twice");
    defined_[id] = true;
    Alts alts = parse_alternatives(false);
    count(alts);
    rules_[id] = std::move(alts);
  }

  Alts parse_alternatives(bool nested) {
    Alts alts;
    alts.push_back(parse_sequence(nested));
    while (peek() == '|') {
      pos_++;
      skip_space();
      alts.push_back(parse_sequence(nested));
    }
    return alts;
  }

  Seq parse_sequence(bool nested) {
    Seq seq;
    size_t last = 0;  // where the last item starts in seq (what a repetition repeats)
    for (;;) {
      skip_space();
      const char c = peek();
      if (at_end() || c == '|' || (c == ')' && nested)) return seq;
      if (c == ')') fail("unexpected ')'");
      if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (last >= seq.size()) fail(std::string("'") + c + "' follows nothing");
        repeat(seq, last);
        continue;
      }
      if (!nested && at_rule_start()) return seq;
      last = seq.size();
      parse_item(seq);
    }
  }

  void parse_item(Seq& seq) {
    const char c = peek();
    if (c == '"') {
      pos_++;
      while (peek() != '"') {
        if (at_end() || peek() == '\n') fail("unterminated string literal");
        seq.push_back(chars({{read_char(), 0}}, false, true));
      }
      pos_++;
    } else if (c == '[') {
      seq.push_back(parse_class());
    } else if (c == '.') {
      pos_++;
      seq.push_back(chars({}, true, false));
    } else if (c == '(') {
      pos_++;
      skip_space();
      Alts inner = parse_alternatives(true);
      if (peek() != ')') fail("expected ')'");
      pos_++;
      seq.push_back({GrammarElement::Ref, new_rule("group", std::move(inner))});
    } else if (name_char(c)) {
      const size_t at = pos_;
      seq.push_back({GrammarElement::Ref, rule_id(parse_name(), at)});
    } else {
      fail(std::string("unexpected '") + c + "'");
    }
  }

  GrammarElement chars(std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated, bool single) {
    if (single) ranges[0].second = ranges[0].first;
    classes_.push_back(CharClass{std::move(ranges), negated});
    return {GrammarElement::Chars, static_cast<uint32_t>(classes_.size() - 1)};
  }

  GrammarElement parse_class() {
    pos_++;  // [
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      pos_++;
    }
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    while (peek() != ']') {
      if (at_end()) fail("unterminated character class");
      const uint32_t lo = read_char();
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < s_.size()) {
        pos_++;
        hi = read_char();
        if (hi < lo) fail("character range is backwards");
      }
      ranges.emplace_back(lo, hi);
    }
    pos_++;
    return chars(std::move(ranges), negated, false);
  }

  // One code point of a literal or class: UTF-8, or an escape.
  uint32_t read_char() {
    const unsigned char c = static_cast<unsigned char>(peek());
    if (c != '\\') return read_utf8();
    pos_++;
    const char e = peek();
    pos_++;
    switch (e) {
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case '0': return 0;
      case 'x': return read_hex(2);
      case 'u': return read_hex(4);
      case 'U': return read_hex(8);
      case '\\': case '"': case '[': case ']': case '-': case '/': case '^': case '\'': return static_cast<unsigned char>(e);
      default: fail(std::string("unknown escape '\\") + e + "'");
    }
  }

  uint32_t read_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; i++) {
      const char h = peek();
      if (!std::isxdigit(static_cast<unsigned char>(h))) fail("expected " + std::to_string(digits) + " hex digits in an escape");
      v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
      pos_++;
    }
    if (v > 0x10FFFF) fail("escape past U+10FFFF");
    return v;
  }

  uint32_t read_utf8() {
    uint32_t cp = 0;
    if (!tok::utf8_next(s_, pos_, cp)) fail("invalid UTF-8");
    return cp;
  }

  int read_int() {
    skip_space();
    const size_t start = pos_;
    long v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek())) && v <= kMaxRepeat) v = v * 10 + (s_[pos_++] - '0');
    if (pos_ == start) fail("expected a number in '{m,n}'");
    if (v > kMaxRepeat) fail("repetition count past " + std::to_string(kMaxRepeat));
    skip_space();
    return static_cast<int>(v);
  }

  // Applies the operator at pos_ to seq[last ..]: x* x+ x? x{m} x{m,} x{m,n}.
  void repeat(Seq& seq, size_t last) {
    const Seq item(seq.begin() + static_cast<long>(last), seq.end());
    seq.resize(last);
    int lo = 0, hi = -1;  // -1: unbounded
    const char op = s_[pos_++];
    if (op == '+') lo = 1;
    if (op == '?') hi = 1;
    if (op == '{') {
      lo = hi = read_int();
      if (peek() == ',') {
        pos_++;
        skip_space();
        hi = peek() == '}' ? -1 : read_int();
      }
      if (peek() != '}') fail("expected '}'");
      pos_++;
      if (hi >= 0 && hi < lo) fail("repetition {m,n} with n < m");
    }
    for (int i = 0; i < lo; i++) seq.insert(seq.end(), item.begin(), item.end());
    if (hi < 0) {  // star ::= item star | (empty)
      const uint32_t star = new_rule("star", {});
      Seq again = item;
      again.push_back({GrammarElement::Ref, star});
      rules_[star] = {again, {}};
      count(rules_[star]);
      seq.push_back({GrammarElement::Ref, star});
    } else if (hi > lo) {  // opt_k ::= item opt_{k-1} | (empty), opt_1 ::= item | (empty)
      uint32_t opt = new_rule("opt", {item, {}});
      for (int k = 2; k <= hi - lo; k++) {
        Seq more = item;
        more.push_back({GrammarElement::Ref, opt});
        opt = new_rule("opt", {more, {}});
      }
      seq.push_back({GrammarElement::Ref, opt});
    }
    elements_ += seq.size();
    if (elements_ > kMaxGrammarElements) fail("grammar too large (more than " + std::to_string(kMaxGrammarElements) + " elements)");
  }

  Grammar flatten() {
    Grammar g;
    g.rule_names = names_;
    g.classes = std::move(classes_);
    g.rules.resize(rules_.size());
    for (size_t r = 0; r < rules_.size(); r++) {
      for (const Seq& seq : rules_[r]) {
        g.rules[r].push_back(static_cast<uint32_t>(g.elements.size()));
        g.elements.insert(g.elements.end(), seq.begin(), seq.end());
        g.elements.push_back({GrammarElement::End, 0});
      }
    }
    return g;
  }

  // A rule that can reach itself before consuming a character would expand forever.
  void check_left_recursion(const Grammar& g) {
    const size_t n = g.rules.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r < n; r++) {
        if (nullable[r]) continue;
        for (uint32_t a : g.rules[r]) {
          bool all = true;
          for (uint32_t e = a; g.elements[e].kind != GrammarElement::End && all; e++)
            all = g.elements[e].kind == GrammarElement::Ref && nullable[g.elements[e].value];
          if (all) nullable[r] = changed = true;
        }
      }
    }
    std::vector<int> state(n, 0);  // 0 new, 1 on the path, 2 done
    std::function<void(uint32_t)> visit = [&](uint32_t r) {
      state[r] = 1;
      for (uint32_t a : g.rules[r]) {
        for (uint32_t e = a; g.elements[e].kind == GrammarElement::Ref; e++) {
          const uint32_t to = g.elements[e].value;
          if (state[to] == 1) throw Error("grammar: left recursion through rule '" + g.rule_names[to] + "'");
          if (state[to] == 0) visit(to);
          if (!nullable[to]) break;
        }
      }
      state[r] = 2;
    };
    for (uint32_t r = 0; r < n; r++)
      if (state[r] == 0) visit(r);
  }
};

}  // namespace

Grammar Grammar::parse(std::string_view gbnf, std::string_view root) { return Parser(gbnf).run(root); }

}  // namespace jf
