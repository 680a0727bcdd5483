// ECMAScript regular expression -> GBNF over JSON string text, in two steps: parse the pattern into a tree of
// code point sets, sequences, alternatives and repetitions; then write the tree as GBNF, each set as a rule of
// the JSON spellings of its code points. A repetition of something that can match the empty string repeats
// only its non-empty part instead (the same language; GBNF refuses a repeated item that can be empty).
#include "grammar/regex_gbnf.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <vector>

#include "grammar/code_set.h"
#include "grammar/json_schema_text.h"
#include "tokenizer/utf8.h"

namespace jf {

namespace {

using json_schema_text::alt;
using json_schema_text::join;
using json_schema_text::lit;
using Ranges = CodeRanges;  // code points: sorted, disjoint, inclusive (code_set.h)

constexpr uint32_t kMaxCp = kMaxCodePoint;
constexpr uint32_t kNone = 0xFFFFFFFF;  // past the end of the pattern
constexpr int kMaxRepeat = 10000;       // GBNF's most in {m,n}
constexpr int kMaxNesting = 100;        // groups in groups: the parser and the writer recurse on them

// ---- Code point sets ------------------------------------------------------------------------------------

// ECMAScript's sets (\d \w \s, and what `.` leaves out), and what a JSON string may hold.
const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{9, 13},          {32, 32},         {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
                       {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const Ranges kLineEnds = {{10, 10}, {13, 13}, {0x2028, 0x2029}};
const Ranges kScalars = {{0, 0xD7FF}, {0xE000, kMaxCp}};                      // no lone surrogate in a string
const Ranges kRaw = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0xD7FF}, {0xE000, kMaxCp}};  // written as themselves
const std::pair<uint32_t, char> kShortEscapes[] = {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {8, 'b'}, {12, 'f'}, {10, 'n'}, {13, 'r'}, {9, 't'}};

// ---- The tree -------------------------------------------------------------------------------------------

struct Node {
  enum Kind { Set, Seq, Alt, Repeat, Begin, End };  // Begin / End: the anchors ^ and $
  Kind kind = Seq;
  Ranges set;
  std::vector<Node> kids;
  int min = 1, max = 1;  // Repeat; max -1: unbounded
};

Node leaf(Ranges r) { return {Node::Set, normalized(std::move(r)), {}, 1, 1}; }

bool nullable(const Node& n) {
  switch (n.kind) {
    case Node::Set: return false;
    case Node::Alt: return std::any_of(n.kids.begin(), n.kids.end(), nullable);
    case Node::Repeat: return n.min == 0 || nullable(n.kids[0]);
    case Node::Seq: return std::all_of(n.kids.begin(), n.kids.end(), nullable);
    default: return true;
  }
}

bool has_anchor(const Node& n) {
  return n.kind == Node::Begin || n.kind == Node::End || std::any_of(n.kids.begin(), n.kids.end(), has_anchor);
}

// ---- Parsing --------------------------------------------------------------------------------------------

class Parser {
 public:
  explicit Parser(std::string_view pattern) {
    for (size_t i = 0; i < pattern.size();) {
      uint32_t cp = 0;
      if (!tok::utf8_next(pattern, i, cp)) throw RegexInvalid("invalid UTF-8");
      cps_.push_back(cp);
    }
  }

  Node run() {
    Node n = alternatives();
    if (pos_ < cps_.size()) invalid("')' without '('");
    return n;
  }

 private:
  std::vector<uint32_t> cps_;
  size_t pos_ = 0;
  int depth_ = 0;  // groups open

  [[noreturn]] void invalid(const std::string& why) const { throw RegexInvalid(why + " at character " + std::to_string(pos_)); }
  uint32_t peek(size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : kNone; }
  bool eat(uint32_t c) { return peek() == c ? (pos_++, true) : false; }

  Node alternatives() {
    std::vector<Node> alts = {sequence()};
    while (eat('|')) alts.push_back(sequence());
    return alts.size() == 1 ? alts[0] : Node{Node::Alt, {}, std::move(alts)};
  }

  Node sequence() {
    Node seq;
    while (peek() != kNone && peek() != '|' && peek() != ')') {
      Node t = term();
      if (t.kind == Node::Seq) seq.kids.insert(seq.kids.end(), t.kids.begin(), t.kids.end());  // a group's
      else seq.kids.push_back(std::move(t));
    }
    return seq.kids.size() == 1 ? seq.kids[0] : seq;
  }

  Node term() {
    Node atom = this->atom();
    int lo = 0, hi = 0;
    if (!quantifier(lo, hi)) return atom;
    if (atom.kind == Node::Begin || atom.kind == Node::End) throw RegexUnsupported("a repeated anchor");
    eat('?');  // lazy: the same strings
    int ignored_lo = 0, ignored_hi = 0;
    const size_t at = pos_;
    if (quantifier(ignored_lo, ignored_hi)) pos_ = at, invalid("nothing to repeat");
    return {Node::Repeat, {}, {std::move(atom)}, lo, hi};
  }

  // * + ? {m} {m,} {m,n} at pos_ (consumed when found); a '{' that starts none of them is a literal.
  bool quantifier(int& lo, int& hi) {
    const uint32_t c = peek();
    if (c == '*' || c == '+' || c == '?') {
      pos_++;
      lo = c == '+', hi = c == '?' ? 1 : -1;
      return true;
    }
    if (c != '{') return false;
    size_t p = pos_ + 1;
    const auto number = [&](long& v) {
      const size_t start = p;
      for (v = 0; p < cps_.size() && cps_[p] >= '0' && cps_[p] <= '9'; p++) v = std::min(v * 10 + long(cps_[p] - '0'), 1000000000L);
      return p > start;
    };
    long m = 0, n = 0;
    if (!number(m)) return false;
    n = m;
    if (p < cps_.size() && cps_[p] == ',') {
      p++;
      if (!number(n)) n = -1;
    }
    if (p >= cps_.size() || cps_[p] != '}') return false;
    pos_ = p + 1;
    if (n >= 0 && n < m) invalid("numbers out of order in a {} quantifier");
    if (m > kMaxRepeat || n > kMaxRepeat) throw RegexUnsupported("repetition counts above " + std::to_string(kMaxRepeat));
    lo = int(m), hi = int(n);
    return true;
  }

  Node atom() {
    const uint32_t c = peek();
    if (c == '*' || c == '+' || c == '?') invalid("nothing to repeat");
    if (c == '{') {
      int lo = 0, hi = 0;
      const size_t at = pos_;
      if (quantifier(lo, hi)) pos_ = at, invalid("nothing to repeat");
    }
    pos_++;
    switch (c) {
      case '^': return {Node::Begin, {}, {}};
      case '$': return {Node::End, {}, {}};
      case '.': return leaf(complement(kLineEnds));
      case '(': return group();
      case '[': return leaf(char_class());
      case '\\': {
        Ranges set;
        escape(false, set);
        return leaf(set);
      }
      default: return leaf({{c, c}});  // also a lone '{', '}' or ']' (ECMAScript's Annex B)
    }
  }

  Node group() {
    if (++depth_ > kMaxNesting) throw RegexUnsupported("groups nested deeper than " + std::to_string(kMaxNesting));
    if (eat('?')) {
      if (peek() == '=' || peek() == '!') throw RegexUnsupported("lookahead");
      if (peek() == '<' && (peek(1) == '=' || peek(1) == '!')) throw RegexUnsupported("lookbehind");
      if (eat('<')) {  // a named group
        const size_t start = pos_;
        while (peek() != kNone && peek() != '>') pos_++;
        if (peek() == kNone || pos_ == start) invalid("a group name");
        pos_++;
      } else if (!eat(':')) {
        invalid("an unknown (? group");
      }
    }
    Node inner = alternatives();
    if (!eat(')')) invalid("'(' without ')'");
    depth_--;
    return inner;
  }

  // [...] and [^...]: its code points.
  Ranges char_class() {
    const bool negated = eat('^');
    Ranges set;
    while (!eat(']')) {
      if (peek() == kNone) invalid("'[' without ']'");
      Ranges a;
      const bool single = class_atom(a);
      if (peek() == '-' && peek(1) != ']' && peek(1) != kNone) {
        pos_++;
        Ranges b;
        if (!class_atom(b) || !single) throw RegexUnsupported("a class escape as the end of a range");
        if (a[0].first > b[0].first) invalid("a range out of order in a class");
        a = {{a[0].first, b[0].first}};
      }
      set.insert(set.end(), a.begin(), a.end());
    }
    set = normalized(set);
    return negated ? complement(set) : set;
  }

  // One code point of a class (true), or a class escape's set.
  bool class_atom(Ranges& out) {
    const uint32_t c = peek();
    pos_++;
    if (c != '\\') {
      out = {{c, c}};
      return true;
    }
    return escape(true, out);
  }

  // After a backslash: a code point (true) or a class escape (\d ...), as `out`.
  bool escape(bool in_class, Ranges& out) {
    const uint32_t c = peek();
    if (c == kNone) invalid("'\\' at the end");
    pos_++;
    const auto one = [&](uint32_t cp) { return out = {{cp, cp}}, true; };
    switch (c) {
      case 'd': return out = kDigit, false;
      case 'D': return out = complement(kDigit), false;
      case 'w': return out = kWord, false;
      case 'W': return out = complement(kWord), false;
      case 's': return out = kSpace, false;
      case 'S': return out = complement(kSpace), false;
      case 't': return one(9);
      case 'n': return one(10);
      case 'v': return one(11);
      case 'f': return one(12);
      case 'r': return one(13);
      case 'b':
        if (in_class) return one(8);
        throw RegexUnsupported("word boundary \\b");
      case 'B': throw RegexUnsupported("\\B");
      case 'p': case 'P': throw RegexUnsupported("Unicode property escapes");
      case 'k': throw RegexUnsupported("backreferences");
      case 'c': {
        const uint32_t l = peek();
        if (!((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z'))) invalid("\\c without a letter");
        pos_++;
        return one(l % 32);
      }
      case 'x': return one(hex(2));
      case 'u': return one(unicode_escape());
      case '0':
        if (peek() >= '0' && peek() <= '9') throw RegexUnsupported("octal escapes");
        return one(0);
      default: break;
    }
    if (c >= '1' && c <= '9') throw RegexUnsupported("backreferences");
    const bool letter_or_digit = c < 0x80 && std::isalnum(int(c));
    if (letter_or_digit) invalid(std::string("an unknown escape \\") + char(c));
    return one(c);  // \. \\ \/ \- \" ... stand for themselves
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; i++) {
      const uint32_t h = peek();
      if (h >= 0x80 || !std::isxdigit(int(h))) invalid("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + uint32_t(std::isdigit(int(h)) ? h - '0' : std::tolower(int(h)) - 'a' + 10);
      pos_++;
    }
    return v;
  }

  // \uXXXX (a surrogate pair written as two is one code point), or \u{X...}.
  uint32_t unicode_escape() {
    if (eat('{')) {
      uint32_t v = 0;
      const size_t start = pos_;
      while (peek() != '}') {
        v = v * 16 + hex(1);
        if (v > kMaxCp) invalid("a code point past U+10FFFF");
      }
      if (pos_ == start) invalid("an empty \\u{}");
      pos_++;
      return v;
    }
    const uint32_t v = hex(4);
    if (v >= 0xD800 && v <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
      const size_t at = pos_;
      pos_ += 2;
      const uint32_t low = peek() == '{' ? 0 : hex(4);
      if (low >= 0xDC00 && low <= 0xDFFF) return 0x10000 + ((v - 0xD800) << 10) + (low - 0xDC00);
      pos_ = at;
    }
    return v;  // a lone surrogate: no string holds one, so it matches nothing
  }
};

// ---- Writing GBNF ---------------------------------------------------------------------------------------

std::string class_cp(uint32_t cp) {
  if (cp < 0x80 && std::isalnum(int(cp))) return std::string(1, char(cp));
  char buf[16];
  std::snprintf(buf, sizeof buf, cp < 0x10000 ? "\\u%04X" : "\\U%08X", cp);
  return buf;
}

// A GBNF class of the code points, negated where that is shorter.
std::string gbnf_class(const Ranges& r) {
  const Ranges out = complement(r);
  const bool negate = out.size() < r.size();
  std::string s = negate ? "[^" : "[";
  for (const auto& [a, b] : negate ? out : r) {
    s += class_cp(a);
    if (a != b) s += "-" + class_cp(b);
  }
  return s + "]";
}

// Hex digits a..b (0-15) in either case.
std::string hex_digits(uint32_t a, uint32_t b) {
  if (a == b && a <= 9) return lit(std::string(1, char('0' + a)));
  std::string s = "[";
  if (a <= 9) s += std::string(1, char('0' + a)) + (std::min(b, 9u) > a ? "-" + std::string(1, char('0' + std::min(b, 9u))) : "");
  for (const char base : {'a', 'A'})
    if (b >= 10) {
      const uint32_t lo = std::max(a, 10u);
      s += std::string(1, char(base + lo - 10)) + (b > lo ? "-" + std::string(1, char(base + b - 10)) : "");
    }
  return s + "]";
}

// The `width`-digit hex texts (either case) of the values lo..hi.
std::string hex_range(uint32_t lo, uint32_t hi, int width) {
  if (width == 0) return "";
  const uint32_t step = 1u << (4 * (width - 1));
  const uint32_t dl = lo / step, dh = hi / step, rl = lo % step, rh = hi % step;
  const auto then = [](const std::string& head, const std::string& rest) { return rest.empty() ? head : head + " " + rest; };
  if (dl == dh) return then(hex_digits(dl, dl), hex_range(rl, rh, width - 1));
  const std::string any = width == 1 ? "" : width == 2 ? "[0-9a-fA-F]" : "[0-9a-fA-F]{" + std::to_string(width - 1) + "}";
  std::vector<std::string> alts;
  const bool low_full = rl == 0, high_full = rh == step - 1;
  if (!low_full) alts.push_back(then(hex_digits(dl, dl), hex_range(rl, step - 1, width - 1)));
  if (dl + !low_full <= dh - !high_full) alts.push_back(then(hex_digits(dl + !low_full, dh - !high_full), any));
  if (!high_full) alts.push_back(then(hex_digits(dh, dh), hex_range(0, rh, width - 1)));
  return alt(alts);
}

// The surrogate pairs (high lo..hi, then low lo..hi) of the code points a..b, all past U+FFFF.
std::vector<std::string> surrogate_pairs(uint32_t a, uint32_t b) {
  const auto pair = [](uint32_t h0, uint32_t h1, uint32_t l0, uint32_t l1) { return hex_range(h0, h1, 4) + " \"\\\\u\" " + hex_range(l0, l1, 4); };
  const uint32_t ha = 0xD800 + ((a - 0x10000) >> 10), la = 0xDC00 + ((a - 0x10000) & 0x3FF);
  const uint32_t hb = 0xD800 + ((b - 0x10000) >> 10), lb = 0xDC00 + ((b - 0x10000) & 0x3FF);
  if (ha == hb) return {pair(ha, ha, la, lb)};
  std::vector<std::string> out;
  const bool low_full = la == 0xDC00, high_full = lb == 0xDFFF;
  if (!low_full) out.push_back(pair(ha, ha, la, 0xDFFF));
  if (ha + !low_full <= hb - !high_full) out.push_back(pair(ha + !low_full, hb - !high_full, 0xDC00, 0xDFFF));
  if (!high_full) out.push_back(pair(hb, hb, 0xDC00, lb));
  return out;
}

class Writer {
 public:
  explicit Writer(const RegexAddRule& add) : add_(add) {}

  // Every code point: what precedes and follows an unanchored match.
  std::string any() { return *spelled(kScalars); }

  // The texts of the strings n matches; nullopt: none.
  std::optional<std::string> text(const Node& n) { return memo(texts_, n, [&] { return text_of(n); }); }

 private:
  using Memo = std::map<const Node*, std::optional<std::string>>;
  const RegexAddRule& add_;
  std::map<Ranges, std::optional<std::string>> sets_;
  Memo texts_, nonempties_;

  // Each node's texts once, a long one as a rule: a sequence of parts that can be empty asks for its later
  // parts' texts once per earlier part, which would compound with nesting.
  template <class F>
  std::optional<std::string> memo(Memo& m, const Node& n, F&& make) {
    if (const auto it = m.find(&n); it != m.end()) return it->second;
    std::optional<std::string> t = make();
    if (t && t->size() > 64 && t->find(' ') != std::string::npos) t = add_("re", *t);
    return m[&n] = t;
  }

  std::optional<std::string> text_of(const Node& n) {
    switch (n.kind) {
      case Node::Set: return spelled(n.set);
      case Node::Alt: return alternatives(n.kids, [&](const Node& k) { return text(k); });
      case Node::Repeat: return repeat(n);
      default: break;  // Seq (anchors are gone by now)
    }
    std::vector<std::string> parts;
    for (const Node& k : n.kids) {
      const auto t = text(k);
      if (!t) return std::nullopt;
      if (!t->empty()) parts.push_back(*t);
    }
    return join(parts, " ");
  }

  template <class F>
  static std::optional<std::string> alternatives(const std::vector<Node>& kids, F&& each) {
    std::vector<std::string> alts;
    for (const Node& k : kids)
      if (const auto t = each(k)) alts.push_back(*t);
    if (alts.empty()) return std::nullopt;
    return alts.size() == 1 ? alts[0] : "( " + join(alts, " | ") + " )";
  }

  static std::string group(const std::string& t) {
    const bool name = !t.empty() && std::all_of(t.begin(), t.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; });
    return name ? t : "( " + t + " )";
  }

  static std::string times(int lo, int hi) {
    if (hi < 0) return lo == 0 ? "*" : lo == 1 ? "+" : "{" + std::to_string(lo) + ",}";
    if (lo == hi) return lo == 1 ? "" : "{" + std::to_string(lo) + "}";
    return lo == 0 && hi == 1 ? "?" : "{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
  }

  std::optional<std::string> repeat(const Node& n) {
    const Node& x = n.kids[0];
    if (n.max == 0) return "";
    if (nullable(x)) {  // x{m,n} = x'{0,n}, x' the non-empty strings of x
      const auto body = nonempty(x);
      return body ? group(*body) + times(0, n.max) : "";
    }
    const auto body = text(x);
    if (!body) return n.min == 0 ? std::optional<std::string>("") : std::nullopt;
    return group(*body) + times(n.min, n.max);
  }

  // The texts of the non-empty strings n matches.
  std::optional<std::string> nonempty(const Node& n) { return memo(nonempties_, n, [&] { return nonempty_of(n); }); }

  std::optional<std::string> nonempty_of(const Node& n) {
    if (!nullable(n)) return text(n);
    if (n.kind == Node::Alt) return alternatives(n.kids, [&](const Node& k) { return nonempty(k); });
    if (n.kind == Node::Repeat) {  // nullable: x{0,n} or a nullable x
      const Node& x = n.kids[0];
      const auto body = nullable(x) ? nonempty(x) : text(x);
      return n.max == 0 || !body ? std::nullopt : std::optional<std::string>(group(*body) + times(1, n.max));
    }
    // A sequence of nullable parts: the first non-empty one, then anything of the rest (each rest one rule,
    // built from the end, so that the alternatives share them).
    std::vector<std::string> alts;
    std::string rest;
    for (size_t i = n.kids.size(); i-- > 0;) {
      if (const auto head = nonempty(n.kids[i])) alts.insert(alts.begin(), rest.empty() ? *head : *head + " " + rest);
      const std::string k = *text(n.kids[i]), both = rest.empty() ? k : k.empty() ? rest : k + " " + rest;
      rest = both.size() > 64 ? add_("re", both) : both;
    }
    if (alts.empty()) return std::nullopt;
    return alts.size() == 1 ? alts[0] : "( " + join(alts, " | ") + " )";
  }

  // A rule of every JSON spelling of the code points: raw, a short escape, \uXXXX, a surrogate pair.
  std::optional<std::string> spelled(const Ranges& set) {
    const Ranges s = intersect(set, kScalars);
    if (const auto it = sets_.find(s); it != sets_.end()) return it->second;
    if (s.empty()) return sets_[s] = std::nullopt;
    std::vector<std::string> alts, escaped;
    if (const Ranges raw = intersect(s, kRaw); !raw.empty()) alts.push_back(gbnf_class(raw));
    std::string shorts;
    for (const auto& [cp, c] : kShortEscapes)
      if (contains(s, cp)) shorts += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    if (!shorts.empty()) escaped.push_back("[" + shorts + "]");
    std::vector<std::string> u;
    for (const auto& [a, b] : intersect(s, {{0, 0xFFFF}})) u.push_back(hex_range(a, b, 4));
    for (const auto& [a, b] : intersect(s, {{0x10000, kMaxCp}}))
      for (const std::string& p : surrogate_pairs(a, b)) u.push_back(p);
    if (!u.empty()) escaped.push_back("\"u\" " + alt(u));
    alts.push_back("\"\\\\\" " + alt(escaped));
    return sets_[s] = add_("re-chars", join(alts, " | "));
  }
};

struct Branch {
  bool start, end;  // anchored at the start / at the end
  Node body;
};

// The top-level alternatives with their anchors taken off (a group of alternatives at the top is looked into:
// (^a|b$)); an anchor anywhere else is refused.
void branches(const Node& n, bool start, bool end, std::vector<Branch>& out) {
  if (n.kind == Node::Alt) {
    for (const Node& k : n.kids) branches(k, start, end, out);
    return;
  }
  std::vector<Node> items = n.kind == Node::Seq ? n.kids : std::vector<Node>{n};
  while (!items.empty() && items.front().kind == Node::Begin) start = true, items.erase(items.begin());
  while (!items.empty() && items.back().kind == Node::End) end = true, items.pop_back();
  if (items.size() == 1 && items[0].kind == Node::Alt && has_anchor(items[0])) return branches(items[0], start, end, out);
  Node body{Node::Seq, {}, std::move(items)};
  if (has_anchor(body)) throw RegexUnsupported("an anchor inside the pattern, not at its start or end");
  out.push_back({start, end, std::move(body)});
}

}  // namespace

std::optional<std::string> regex_to_gbnf(std::string_view pattern, const RegexAddRule& add) {
  std::vector<Branch> bs;
  branches(Parser(pattern).run(), false, false, bs);
  Writer w(add);
  std::vector<std::string> alts;
  for (const Branch& b : bs) {
    // Unanchored, a match of the empty string is a match of every string.
    if (nullable(b.body) && !(b.start && b.end)) return w.any() + "*";
    const auto t = w.text(b.body);
    if (!t) continue;
    const std::string any = w.any();  // (named: GCC 12 warns wrongly on "x" + string&&)
    std::string a = b.start ? *t : any + "* " + *t;
    if (!b.end) a += " " + any + "*";
    alts.push_back(a);
  }
  if (alts.empty()) return std::nullopt;
  return alts.size() == 1 ? alts[0] : "( " + join(alts, " | ") + " )";
}

}  // namespace jf
