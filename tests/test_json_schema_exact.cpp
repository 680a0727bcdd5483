// JSON Schema keywords whose grammars must be exact, checked against an independent reference on many
// generated texts: `pattern` against std::regex (regex_gbnf.h), integer `multipleOf` against the remainder,
// number bounds against an exact decimal comparison, min/maxProperties against a count.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <regex>

#include "grammar/regex_gbnf.h"
#include "json_schema_support.h"
#include "tokenizer/utf8.h"

using namespace jf;
using Json = nlohmann::ordered_json;

// ---- pattern: against std::regex --------------------------------------------------------------------------

namespace {

// The grammar of the string contents a pattern allows, straight from regex_to_gbnf.
Compiled compile_regex(const std::string& pattern) {
  std::string rules;
  int next = 0;
  const RegexAddRule add = [&](const std::string& kind, const std::string& body) {
    const std::string name = kind + "-" + std::to_string(next++);
    rules += name + " ::= " + body + "\n";
    return name;
  };
  const std::optional<std::string> e = regex_to_gbnf(pattern, add);
  return compile_gbnf("root ::= " + e.value_or("[^\\x00-\\U0010FFFF]") + "\n" + rules);
}

std::wstring wide(const std::string& utf8) {
  std::wstring out;
  uint32_t cp = 0;
  for (size_t i = 0; i < utf8.size();) {
    if (!tok::utf8_next(utf8, i, cp)) throw std::runtime_error("bad UTF-8 in a test");
    out += wchar_t(cp);
  }
  return out;
}

// A code point written one of the ways JSON allows, at random: raw (but for '"', '\' and controls), a short
// escape, \uXXXX with each hex digit in either case, a surrogate pair.
std::string json_spelling(char32_t c, std::mt19937_64& rng) {
  static const std::map<char32_t, char> shorts = {{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {8, 'b'}, {12, 'f'}, {10, 'n'}, {13, 'r'}, {9, 't'}};
  const auto hex4 = [&](uint32_t v) {
    std::string s = "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) {
      const char h = "0123456789abcdef"[(v >> shift) & 15];
      s += rng() % 2 ? char(std::toupper(h)) : h;
    }
    return s;
  };
  std::vector<std::string> ways;
  if (c >= 0x20 && c != '"' && c != '\\') ways.emplace_back(), tok::utf8_append(ways.back(), uint32_t(c));
  if (shorts.count(c)) ways.push_back(std::string("\\") + shorts.at(c));
  if (c < 0x10000) ways.push_back(hex4(uint32_t(c)));
  else ways.push_back(hex4(0xD800 + ((uint32_t(c) - 0x10000) >> 10)) + hex4(0xDC00 + ((uint32_t(c) - 0x10000) & 0x3FF)));
  return ways[rng() % ways.size()];
}

}  // namespace

// For each pattern, every string of up to 3 characters of an alphabet and random longer ones, each written
// with random JSON escapes: the grammar accepts exactly what std::regex_search (ECMAScript, over code points:
// wchar_t is 32 bits here) finds a match in.
TEST(RegexGbnf, AcceptsExactlyWhatStdRegexMatches) {
  struct Case {
    std::string pattern;
    std::u32string alphabet;
    std::u32string seed = U"";  // a match, for patterns random strings rarely match: it and random edits of it
  };
  const std::vector<Case> cases = {
      {"^a*$", U"ab"},
      {"a+", U"ab\""},
      {"abc", U"abcx"},
      {"^abc", U"abc"},
      {"abc$", U"abc"},
      {"^(ab|cd)+$", U"abcd"},
      {"^[a-c]{2,3}$", U"abcd"},
      {"x?y{2}z*", U"xyz"},
      {"^[^ab]*$", U"ab\"\\\n\u00e9"},
      {"^.$", U"a\n\r\"\\\t\u00e9\U0001F600"},
      {"^..?$", U"a\n\U0001F600"},
      {"^\\d+(\\.\\d{1,2})?$", U"059.a"},
      {"^\\w+@\\w+\\.com$", U"a_Z9@.cm", U"a_@Z9.com"},
      {"\\s", U" \t\na"},
      {"^\\S+$", U" a\t"},
      {"^[\\D]\\W$", U"1a_-"},
      {"^(?:a|b)*c$", U"abc"},
      {"^a|b$", U"abx"},
      {"(^a|b$)", U"abx"},
      {"^(a?)*$", U"ab"},
      {"(a*)*b", U"ab"},
      {"^(|a)+$", U"ab"},
      {"^(a|b?){2,3}c?$", U"abc"},
      {"^(a*b?)+c$", U"abc"},
      {"^[\\-.]+$", U"-.a"},
      {"^\\\\\"$", U"\\\"a"},
      {"^\"+$", U"\"a"},
      {"^\\n\\t$", U"\n\ta"},
      {"^[\\x00-\\x1f]+$", U"\x01\x1f a"},
      {"^\\u00e9+$", U"\u00e9e"},
      {"^[\u00e9-\u00fc]$", U"\u00e9\u00fca\u00f0"},
      {"^a{0}b$", U"ab"},
      {"colou?r", U"colur", U"color"},
      {"^(a|b){2,}?$", U"ab"},
      {"^[/\\]]{1,2}$", U"/]a"},
      {"^\U0001F600+a$", U"\U0001F600a\u00e9"},
      {"^[\\u0100-\\uFFFF]$", U"a\u00ff\u0100\uffff\U00010000"},
      {"b{2}|a{3}", U"ab"},
      {"^$", U"a"},
      {"^$|a", U"ab"},
  };
  std::mt19937_64 rng(5);
  for (const Case& k : cases) {
    SCOPED_TRACE(k.pattern);
    const Compiled c = compile_regex(k.pattern);
    const std::wregex re(wide(k.pattern), std::regex::ECMAScript);
    std::vector<std::u32string> strings = {U""};
    for (size_t i = 0; i < strings.size() && strings.size() < 400; i++)
      if (strings[i].size() < 3)
        for (char32_t a : k.alphabet) strings.push_back(strings[i] + a);
    for (int i = 0; i < 300; i++) {
      std::u32string s(4 + rng() % 5, U' ');
      for (char32_t& ch : s) ch = k.alphabet[rng() % k.alphabet.size()];
      if (!k.seed.empty()) {  // the seed, with up to two characters replaced, inserted or dropped
        s = k.seed;
        for (int edit = int(rng() % 3); edit > 0; edit--) {
          const size_t at = rng() % s.size();
          const char32_t ch = k.alphabet[rng() % k.alphabet.size()];
          const int how = int(rng() % 3);
          if (how == 0) s[at] = ch;
          else if (how == 1) s.insert(s.begin() + long(at), ch);
          else if (s.size() > 1) s.erase(at, 1);
        }
      }
      strings.push_back(s);
    }
    int matched = 0;
    for (const std::u32string& s : strings) {
      const bool want = std::regex_search(std::wstring(s.begin(), s.end()), re);
      matched += want;
      for (int spelling = 0; spelling < 2; spelling++) {
        std::string text;
        for (char32_t ch : s) text += json_spelling(ch, rng);
        ASSERT_EQ(c.accepts(text), want) << "text: " << text;
      }
    }
    EXPECT_GT(matched, 0);  // the alphabet exercises the pattern both ways
    EXPECT_LT(matched, int(strings.size())) << "every string matches";
  }
}

TEST(RegexGbnf, JsonEscapingAndCodePoints) {
  const Compiled quote = compile(R"({"type": "string", "pattern": "^a\"b\\\\$"})");  // a"b\ (a backslash)
  expect_texts(quote, {R"("a\"b\\")", R"("a\u0022b\u005C")", R"("\u0061\"b\\")"}, {R"("a"b\")", R"("a\"b\")", R"("a\"b\\\\")"});
  const Compiled newline = compile(R"({"type": "string", "pattern": "^\\n$"})");
  expect_texts(newline, {R"("\n")", R"("\u000a")", R"("\u000A")"}, {"\"\n\"", R"("n")", R"("\\n")"});
  // ECMAScript's \s holds more than ASCII space; `.` leaves out line terminators only.
  const Compiled space = compile(R"({"type": "string", "pattern": "^\\s$"})");
  expect_texts(space, {R"(" ")", R"("\u00a0")", "\"\u2028\"", R"("\ufeff")", R"("\u000b")", R"("\f")"}, {R"("a")", R"("\u200b")"});
  const Compiled dot = compile(R"({"type": "string", "pattern": "^.$"})");
  expect_texts(dot, {R"("\u2027")", R"("\b")", R"("\ud83d\ude00")", "\"😀\""}, {R"("\u2028")", R"("\r")", R"("\ud83d")", "\"\xED\xA0\x80\""});
  const Compiled astral = compile(R"({"type": "string", "pattern": "^[\\u{1F600}-\\u{1F64F}]$"})");
  expect_texts(astral, {"\"😀\"", R"("\uD83D\uDE4F")", R"("\ud83d\ude00")"}, {R"("\uD83D\uDE50")", R"("\uD83D\uDDFF")", R"("a")"});
  const Compiled pair = compile(R"({"type": "string", "pattern": "^\\uD83D\\uDE00$"})");  // one code point, written as two
  expect_texts(pair, {"\"😀\"", R"("\ud83d\ude00")"}, {R"("\ud83d")"});
  // Not anchored: the match may sit anywhere in the string.
  const Compiled inside = compile(R"({"type": "string", "pattern": "a+"})");
  expect_texts(inside, {R"("xxaayy")", R"("a")", R"("\n\u0061")"}, {R"("xy")", R"("")"});
  // A string pattern leaves other types alone; one that matches nothing leaves no string.
  const Compiled typed = compile(R"({"pattern": "^a$"})");
  expect_texts(typed, {R"("a")", "1", "null", "[\"b\"]"}, {R"("b")"});
  EXPECT_NE(error_of(R"({"type": "string", "pattern": "[]"})").find("accepts no value"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "pattern": "^[^\\s\\S]$"})").find("accepts no value"), std::string::npos);
  const Compiled everything = compile(R"({"type": "string", "pattern": "^[^]$"})");
  expect_texts(everything, {R"("\n")", R"("a")"}, {R"("")", R"("ab")"});
}

TEST(RegexGbnf, RefusesWhatItCannotExpressByName) {
  const std::vector<std::pair<std::string, std::string>> unsupported = {
      {"a(?=b)", "lookahead"},       {"a(?!b)", "lookahead"},           {"(?<=a)b", "lookbehind"},
      {"(?<!a)b", "lookbehind"},     {"(a)\\1", "backreferences"},      {"(?<n>a)\\k<n>", "backreferences"},
      {"\\bword", "word boundary"},  {"a\\B", "\\B"},                   {"a^b", "an anchor inside"},
      {"a$b", "an anchor inside"},   {"x(^a|b)", "an anchor inside"},   {"(^a)*", "an anchor inside"},
      {"^*", "a repeated anchor"},   {"\\p{L}", "Unicode property"},    {"a{10001}", "repetition counts above 10000"},
      {"[\\d-z]", "class escape"},   {"\\01", "octal"},
  };
  for (const auto& [pattern, why] : unsupported) {
    const std::string e = error_of(Json{{"type", "string"}, {"pattern", pattern}}.dump());
    EXPECT_EQ(e.rfind("json schema: unsupported keyword 'pattern' at / (", 0), 0u) << pattern << ": " << e;
    EXPECT_NE(e.find(why), std::string::npos) << pattern << ": " << e;
  }
  for (const std::string pattern : {"(a", "a)", "[a", "*a", "a**", "[z-a]", "a{3,2}", "\\q", "\\", "(?x)", "\\xZ1"}) {
    const std::string e = error_of(Json{{"type", "string"}, {"pattern", pattern}}.dump());
    EXPECT_EQ(e.rfind("json schema: 'pattern' at / is not a valid regular expression (", 0), 0u) << pattern << ": " << e;
  }
  EXPECT_EQ(error_of(R"({"type": "string", "pattern": "^a", "format": "date"})"),
            "json schema: unsupported keyword 'pattern' at / (next to format)");
  EXPECT_EQ(error_of(R"({"type": "string", "pattern": 5})"), "json schema: 'pattern' at / must be a string");
  // Annex B literals and lazy quantifiers are accepted.
  expect_texts(compile(R"({"type": "string", "pattern": "^a{,2}}]$"})"), {R"("a{,2}}]")"}, {R"("aa")"});
  expect_texts(compile(R"({"type": "string", "pattern": "^a+?b??$"})"), {R"("aab")", R"("a")"}, {R"("b")"});
}

// Nesting is bounded by name; parts that can be empty, however nested or many, keep the grammar small.
TEST(RegexGbnf, NestingAndSizeStayBounded) {
  std::string deep = "a", nested = "a?", wide = "^(";
  for (int i = 0; i < 5000; i++) deep = "(" + deep + ")";
  for (int i = 0; i < 12; i++) nested = "(" + nested + nested + ")?";  // 2^12 parts, each asked for many times
  for (int i = 0; i < 300; i++) wide += "a?b?";
  EXPECT_NE(error_of(Json{{"type", "string"}, {"pattern", deep}}.dump()).find("groups nested deeper than 100"), std::string::npos);
  EXPECT_LT(json_schema_to_gbnf(Json{{"type", "string"}, {"pattern", "^" + nested + "$"}}).size(), 400000u);
  EXPECT_LT(json_schema_to_gbnf(Json{{"type", "string"}, {"pattern", wide + ")*$"}}).size(), 100000u);
  // (Matching them is slow: ambiguity costs the matcher stacks. Small ones:)
  expect_texts(compile(R"({"type": "string", "pattern": "^(a?b?a?b?a?b?a?b?)*$"})"), {R"("")", R"("abba")"}, {R"("ac")", R"("c")"});
  expect_texts(compile(R"({"type": "string", "pattern": "^(((a?a?)?(a?a?)?)?((a?a?)?(a?a?)?)?)?$"})"), {R"("")", R"("aaaa")"}, {R"("ab")"});
}

// ---- multipleOf: every integer near zero and the bounds, and random big ones ------------------------------

namespace {

std::string text_of(unsigned __int128 v) {
  std::string s;
  do s.insert(s.begin(), char('0' + int(v % 10)));
  while ((v /= 10) > 0);
  return s;
}

int64_t remainder_of(const std::string& digits, int64_t n) {
  int64_t r = 0;
  for (char c : digits) r = (r * 10 + (c - '0')) % n;
  return r;
}

std::string random_digits(std::mt19937_64& rng, size_t len) {
  std::string s(1, char('1' + rng() % 9));
  while (s.size() < len) s += char('0' + rng() % 10);
  return s;
}

}  // namespace

TEST(JsonSchema, MultipleOfIntegersExact) {
  std::mt19937_64 rng(3);
  for (int64_t n : {1, 2, 3, 7, 10, 12, 25, 48, 64, 100, 125, 199, 1000, 100000}) {
    SCOPED_TRACE(n);
    const Compiled c = compile(R"({"type": "integer", "multipleOf": )" + std::to_string(n) + "}");
    for (int64_t v = -3000; v <= 3000; v++) ASSERT_EQ(c.accepts(std::to_string(v)), v % n == 0) << v;
    for (int i = 0; i < 2000; i++) {
      std::string d = random_digits(rng, 1 + rng() % 20);
      if (i % 2) {  // a multiple, rounded down from it
        unsigned __int128 v = 0;
        for (char ch : d) v = v * 10 + unsigned(ch - '0');
        if (v < unsigned(n)) continue;
        d = text_of(v - v % unsigned(n));
      }
      const bool multiple = remainder_of(d, n) == 0;
      ASSERT_EQ(c.accepts(d), multiple) << d;
      ASSERT_EQ(c.accepts("-" + d), multiple) << d;
    }
    EXPECT_TRUE(c.accepts("-0"));
    expect_texts(c, {}, {"00", "0" + std::to_string(n), std::string(21, '0').replace(0, 1, "1"), std::to_string(n) + ".0", "1e3"});
  }
  // With bounds: the multiples inside them, exactly.
  for (int i = 0; i < 40; i++) {
    const int64_t n = 1 + int64_t(rng() % 60), a = int64_t(rng() % 6001) - 3000, b = a + int64_t(rng() % 2000);
    const bool ex_lo = i % 3 == 0, ex_hi = i % 4 == 0;
    const std::string schema = R"({"type": "integer", "multipleOf": )" + std::to_string(n) + (ex_lo ? R"(, "exclusiveMinimum": )" : R"(, "minimum": )") +
                               std::to_string(a) + (ex_hi ? R"(, "exclusiveMaximum": )" : R"(, "maximum": )") + std::to_string(b) + "}";
    SCOPED_TRACE(schema);
    const std::string e = error_of(schema);
    bool any = false;
    for (int64_t v = a - 100; v <= b + 100; v++) any = any || (v % n == 0 && (ex_lo ? v > a : v >= a) && (ex_hi ? v < b : v <= b));
    if (!any) {
      EXPECT_NE(e.find("accepts no value"), std::string::npos) << e;
      continue;
    }
    ASSERT_EQ(e, "");
    const Compiled c = compile(schema);
    for (int64_t v = a - 100; v <= b + 100; v++)
      ASSERT_EQ(c.accepts(std::to_string(v)), v % n == 0 && (ex_lo ? v > a : v >= a) && (ex_hi ? v < b : v <= b)) << v;
  }
  // Bounds past 64 bits, and a number type: integral values, written with a zero fraction or none.
  const Compiled big = compile(R"({"type": "integer", "multipleOf": 7, "minimum": 18446744073709551500})");  // a uint64
  for (const std::string head : {"18446744073709551", "99999999999999999"})
    for (int v = 0; v < 1000; v++) {
      const std::string t = head + std::string(v < 10 ? "00" : v < 100 ? "0" : "") + std::to_string(v);
      ASSERT_EQ(big.accepts(t), remainder_of(t, 7) == 0 && t >= "18446744073709551500") << t;
    }
  const Compiled num = compile(R"({"type": "number", "multipleOf": 5, "exclusiveMaximum": 20.5})");
  expect_texts(num, {"10", "10.0", "-15.000", "-0.0", "0", "20", "20.00"}, {"10.5", "11", "1e1", "10.", "25", "10.01"});
  EXPECT_NE(error_of(R"({"multipleOf": 997})").find("unsupported keyword 'multipleOf' at / (997 needs more than 200 remainder states)"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"multipleOf": 1000001})").find("(above 100000)"), std::string::npos);
  EXPECT_EQ(error_of(R"({"multipleOf": 0})"), "json schema: 'multipleOf' at / must be a number above 0");
  EXPECT_NE(error_of(R"({"multipleOf": 1.5})").find("unsupported keyword 'multipleOf' at / (not an integer)"), std::string::npos);
}

// ---- Number bounds: random decimals near each bound, against an exact decimal comparison ---------------

namespace {

struct Dec {
  bool neg;
  std::string ip, fp;  // no leading zeros (but "0"); no trailing zeros
};

Dec dec_of(std::string t) {
  Dec d{!t.empty() && t[0] == '-', "", ""};
  if (d.neg) t.erase(0, 1);
  const size_t dot = t.find('.');
  d.ip = t.substr(0, dot);
  d.fp = dot == std::string::npos ? "" : t.substr(dot + 1);
  d.ip.erase(0, std::min(d.ip.find_first_not_of('0'), d.ip.size() - 1));
  d.fp.erase(d.fp.find_last_not_of('0') + 1);
  if (d.ip == "0" && d.fp.empty()) d.neg = false;
  return d;
}

int cmp_dec(const Dec& a, const Dec& b) {
  if (a.neg != b.neg) return a.neg ? -1 : 1;
  int c = a.ip.size() != b.ip.size() ? (a.ip.size() < b.ip.size() ? -1 : 1) : a.ip != b.ip ? a.ip.compare(b.ip) : a.fp.compare(b.fp);
  c = (c > 0) - (c < 0);
  return a.neg ? -c : c;
}

// A number text near `b`: its digits, one changed, one more or fewer, trailing zeros, the other sign; now and
// then one outside jf's bounded number syntax (leading zero, exponent, 21 fraction digits).
std::string near(const Dec& b, std::mt19937_64& rng) {
  const auto digit = [&] { return char('0' + rng() % 10); };
  std::string ip = b.ip, fp = b.fp;
  switch (rng() % 6) {
    case 0: ip = std::to_string(rng() % 1000); break;
    case 1: ip.back() = digit(); break;
    case 2: if (ip.size() > 1) ip.pop_back(); else ip += digit(); break;
    default: break;
  }
  switch (rng() % 6) {
    case 0: fp = ""; for (size_t k = rng() % 4; k > 0; k--) fp += digit(); break;
    case 1: if (!fp.empty()) fp.back() = digit(); break;
    case 2: fp += digit(); break;
    case 3: if (!fp.empty()) fp.pop_back(); break;
    default: break;
  }
  if (rng() % 3 == 0) fp += std::string(rng() % 3, '0');
  if (ip.size() > 1 && ip[0] == '0') ip.erase(0, ip.find_first_not_of('0') == std::string::npos ? ip.size() - 1 : ip.find_first_not_of('0'));
  std::string t = ((b.neg != (rng() % 8 == 0)) ? "-" : "") + ip + (fp.empty() ? "" : "." + fp);
  switch (rng() % 40) {
    case 0: return "0" + t;
    case 1: return t + "e0";
    case 2: return t + (fp.empty() ? "." : "") + std::string(21, '0');
    default: return t;
  }
}

}  // namespace

TEST(JsonSchema, NumberBoundsExact) {
  struct Case {
    std::string bounds;       // the schema's keywords
    std::string lo, hi;       // "" for none
    bool lo_strict, hi_strict;
    std::vector<std::string> extra = {};  // texts where random ones near the bounds rarely fall
  };
  const std::vector<Case> cases = {
      {R"("minimum": 1.5)", "1.5", "", false, false},
      {R"("exclusiveMinimum": -3)", "-3", "", true, false},
      {R"("exclusiveMinimum": 0, "maximum": 100.25)", "0", "100.25", true, false},
      {R"("minimum": -0.001, "maximum": 0.001)", "-0.001", "0.001", false, false},
      {R"("minimum": 0, "exclusiveMaximum": 1)", "0", "1", false, true},
      {R"("minimum": 1.1, "exclusiveMinimum": true)", "1.1", "", true, false},  // draft 4
      {R"("maximum": 3.0, "exclusiveMaximum": true)", "", "3", false, true},
      {R"("minimum": -12.5, "exclusiveMaximum": -12.25)", "-12.5", "-12.25", false, true},
      {R"("minimum": 7, "maximum": 7)", "7", "7", false, false},
      {R"("exclusiveMinimum": 0.1, "exclusiveMaximum": 0.10000001)", "0.1", "0.10000001", true, true,
       {"0.100000005", "0.10000000999999999999", "0.1000000000000000000001"}},
      {R"("minimum": 1e-25)", "0.0000000000000000000000001", "", false, false},
      {R"("maximum": -1e-25)", "", "-0.0000000000000000000000001", false, false},
      {R"("minimum": 1234.5678, "maximum": 1234.5679, "exclusiveMaximum": 1234.56785)", "1234.5678", "1234.56785", false, true},
      {R"("minimum": 0.5, "exclusiveMinimum": 0.5)", "0.5", "", true, false},
      {R"("exclusiveMaximum": 0)", "", "0", false, true},
      {R"("maximum": 0)", "", "0", false, false},
      {R"("minimum": -99999999999999999999.5)", "-100000000000000000000", "", false, false},  // a double: -1e20
  };
  const std::regex syntax(R"(-?(0|[1-9][0-9]{0,19})(\.[0-9]{1,20})?)");
  std::mt19937_64 rng(9);
  for (const Case& k : cases) {
    const std::string schema = R"({"type": "number", )" + k.bounds + "}";
    SCOPED_TRACE(schema);
    const Compiled c = compile(schema);
    const auto in = [&](const std::string& t) {
      if (!std::regex_match(t, syntax)) return false;
      const Dec v = dec_of(t);
      if (!k.lo.empty() && cmp_dec(v, dec_of(k.lo)) < (k.lo_strict ? 1 : 0)) return false;
      return k.hi.empty() || cmp_dec(v, dec_of(k.hi)) <= (k.hi_strict ? -1 : 0);
    };
    std::vector<std::string> texts;
    for (int i = -300; i <= 300; i++) {
      texts.push_back(std::to_string(i / 10) + "." + std::to_string(std::abs(i % 10)));
      if (i > -10 && i < 0) texts.back() = "-" + texts.back();
      texts.push_back(std::to_string(i));
    }
    for (const std::string& b : {k.lo, k.hi})
      if (!b.empty())
        for (int i = 0; i < 4000; i++) texts.push_back(near(dec_of(b), rng));
    texts.insert(texts.end(), k.extra.begin(), k.extra.end());
    int accepted = 0;
    for (const std::string& t : texts) {
      ASSERT_EQ(c.accepts(t), in(t)) << t;
      accepted += in(t);
    }
    EXPECT_GT(accepted, 0);
    expect_texts(c, {}, {"1e0", "-1E-1", "0.5e1"});  // policy: a bounded number has no exponent
  }
  EXPECT_NE(error_of(R"({"type": "number", "minimum": 2, "exclusiveMaximum": 2})").find("accepts no value"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "number", "minimum": 1e30})").find("accepts no value"), std::string::npos);
  expect_texts(compile(R"({"type": "number", "maximum": 1e30})"), {"99999999999999999999.5", "-1"}, {"1e31"});
  // An integer type keeps integers; an unbounded number keeps exponents.
  expect_texts(compile(R"({"type": "integer", "minimum": 1.5, "maximum": 1e19})"), {"2", "10000000000000000000"}, {"1", "2.0", "10000000000000000001"});
  expect_texts(compile(R"({"type": "number", "exclusiveMinimum": true})"), {"1e5", "-3"}, {});
}

// ---- minProperties / maxProperties: every object of a few named and other keys --------------------------

TEST(JsonSchema, PropertyCountsExact) {
  const std::vector<std::string> names = {"a", "b", "c"}, others = {"x0", "x1", "x2"};
  for (const bool open : {false, true})
    for (int min = 0; min <= 4; min++)
      for (int max = -1; max <= 4; max++) {
        Json schema = {{"type", "object"}, {"properties", {{"a", {{"type", "integer"}}}, {"b", {{"type", "integer"}}}, {"c", {{"type", "integer"}}}}},
                       {"required", {"b"}}, {"additionalProperties", open}, {"minProperties", min}};
        if (max >= 0) schema["maxProperties"] = max;
        SCOPED_TRACE(schema.dump());
        const std::string e = error_of(schema.dump());
        if (open && min > 2) {  // two or more other keys needed: they could repeat
          EXPECT_NE(e.find("unsupported keyword 'minProperties'"), std::string::npos) << e;
          continue;
        }
        const bool none = (max >= 0 && (max < min || max < 1)) || (!open && min > 3);
        if (none) {
          EXPECT_NE(e.find("accepts no value"), std::string::npos) << e;
          continue;
        }
        ASSERT_EQ(e, "");
        const Compiled c = compile(schema.dump());
        for (int subset = 0; subset < 8; subset++)
          for (int extra = 0; extra <= 3; extra++) {
            Json v = Json::object();
            for (int i = 0; i < 3; i++)
              if (subset >> i & 1) v[names[size_t(i)]] = i;
            for (int i = 0; i < extra; i++) v[others[size_t(i)]] = "s";
            const int count = int(v.size());
            const bool valid = (subset & 2) && (open || extra == 0) && count >= min && (max < 0 || count <= max);
            for (const std::string& t : layouts(v.dump())) ASSERT_EQ(c.accepts(t), valid) << t;
          }
      }
  // The suite's kind: no properties named, other keys counted.
  const Compiled some = compile(R"({"minProperties": 1, "maxProperties": 2})");
  expect_texts(some, {R"({"foo": 1})", R"({"foo": 1, "bar": 2})", "[]", "3"}, {"{}", R"({"foo": 1, "bar": 2, "baz": 3})"});
}

