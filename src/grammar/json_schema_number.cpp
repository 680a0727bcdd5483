// JSON Schema numbers -> GBNF. Integers in a range are runs of one shape (a fixed prefix, one digit from a range,
// then free digits); multipleOf n walks those runs through the minimal automaton of the remainders mod n, with
// one rule per (state, digits left). Decimals are compared with the bounds digit by digit: the integer part
// first, then the fraction, where only the bounds' own digits need rules.
#include "grammar/json_schema_number.h"

#include <algorithm>
#include <array>
#include <map>
#include <vector>

namespace jf::json_schema_number {

namespace {

using namespace json_schema_text;
using Json = nlohmann::ordered_json;
using Int = __int128;  // holds every 21-digit integer

constexpr int kDigits = 20;              // integer and fraction digits a number may have (the Numbers policy)
constexpr int64_t kMaxDivisor = 100000;  // bounds the automaton's construction
constexpr int kMaxStates = 200;          // multipleOf's automaton: ~20 rules of ~10 alternatives per state
constexpr const char* kAnyFraction = "( \".\" [0-9]{1,20} )?";
constexpr const char* kZeroFraction = "( \".\" \"0\"{1,20} )?";

Int pow10(int k) { return k == 0 ? 1 : 10 * pow10(k - 1); }
const Int kTop = pow10(kDigits) - 1;  // the largest integer part a number may write

std::string text_of(Int v) {  // v >= 0
  std::string s;
  do s.insert(s.begin(), char('0' + int(v % 10)));
  while ((v /= 10) > 0);
  return s;
}

Int value_of(const std::string& digits) {  // at most 21 digits
  Int v = 0;
  for (char c : digits) v = v * 10 + (c - '0');
  return v;
}

bool all_zero(const std::string& s) { return s.find_first_not_of('0') == std::string::npos; }

// ---- Decimals and bounds ----------------------------------------------------------------------------------

struct Decimal {
  bool neg = false;
  std::string ip = "0", fp;  // |value| = ip.fp: ip without leading zeros, fp without trailing zeros
};

// A schema's number as the decimal it writes: an integer exactly, a double in its shortest round-trip form.
Decimal decimal_of(const Json& v) {
  const std::string s = v.dump();
  Decimal d;
  size_t i = 0;
  if (s[i] == '-') d.neg = true, i++;
  std::string digits;
  long point = -1;
  for (; i < s.size() && s[i] != 'e' && s[i] != 'E'; i++) {
    if (s[i] == '.') point = long(digits.size());
    else digits += s[i];
  }
  if (point < 0) point = long(digits.size());
  if (i < s.size()) point += std::stol(s.substr(i + 1));
  if (point <= 0) d.ip = "0", d.fp = std::string(size_t(-point), '0') + digits;
  else if (size_t(point) >= digits.size()) d.ip = digits + std::string(size_t(point) - digits.size(), '0');
  else d.ip = digits.substr(0, size_t(point)), d.fp = digits.substr(size_t(point));
  d.ip.erase(0, std::min(d.ip.find_first_not_of('0'), d.ip.size() - 1));
  d.fp.erase(d.fp.find_last_not_of('0') + 1);
  if (d.ip == "0" && d.fp.empty()) d.neg = false;
  return d;
}

int compare_abs(const Decimal& a, const Decimal& b) {
  if (a.ip.size() != b.ip.size()) return a.ip.size() < b.ip.size() ? -1 : 1;
  const int c = a.ip != b.ip ? a.ip.compare(b.ip) : a.fp.compare(b.fp);  // fp: a shorter prefix is smaller
  return (c > 0) - (c < 0);
}

int compare(const Decimal& a, const Decimal& b) {
  if (a.neg != b.neg) return a.neg ? -1 : 1;
  return a.neg ? -compare_abs(a, b) : compare_abs(a, b);
}

bool is_zero(const Decimal& d) { return d.ip == "0" && d.fp.empty(); }

struct Bound {
  Decimal v;
  bool strict = false;
};

struct Bounds {
  std::optional<Bound> lower, upper;
};

// The tightest lower and upper bound of both drafts' keywords (draft 4: exclusiveMinimum true qualifies minimum).
Bounds bounds_of(const Json& s, const std::string& ptr) {
  const auto value = [&](const char* kw) {
    if (!s[kw].is_number()) malformed(kw, ptr, "must be a number");
    return decimal_of(s[kw]);
  };
  const auto flag = [&](const char* kw) { return s.contains(kw) && s[kw].is_boolean() && s[kw].get<bool>(); };
  const auto tighten = [](std::optional<Bound>& have, const Bound& b, int sign) {
    const int c = have ? sign * compare(b.v, have->v) : 1;
    if (c > 0 || (c == 0 && b.strict)) have = b;
  };
  Bounds b;
  if (s.contains("minimum")) tighten(b.lower, {value("minimum"), flag("exclusiveMinimum")}, 1);
  if (s.contains("exclusiveMinimum") && !s["exclusiveMinimum"].is_boolean()) tighten(b.lower, {value("exclusiveMinimum"), true}, 1);
  if (s.contains("maximum")) tighten(b.upper, {value("maximum"), flag("exclusiveMaximum")}, -1);
  if (s.contains("exclusiveMaximum") && !s["exclusiveMaximum"].is_boolean()) tighten(b.upper, {value("exclusiveMaximum"), true}, -1);
  return b;
}

// The least integer a lower bound allows, and the greatest an upper one allows (past kTop when beyond it).
Int least_integer(const Bound& b) {
  if (b.v.ip.size() > size_t(kDigits)) return b.v.neg ? -kTop - 1 : kTop + 1;
  const Int i = value_of(b.v.ip);
  return (b.v.neg ? -i : i + !b.v.fp.empty()) + (b.v.fp.empty() && b.strict);
}

Int greatest_integer(const Bound& b) {
  if (b.v.ip.size() > size_t(kDigits)) return b.v.neg ? -kTop - 1 : kTop + 1;
  const Int i = value_of(b.v.ip);
  return (b.v.neg ? -(i + !b.v.fp.empty()) : i) - (b.v.fp.empty() && b.strict);
}

// ---- Digit runs and multiples -----------------------------------------------------------------------------

std::string digit_class(const std::vector<int>& ds) {  // sorted digits
  if (ds.size() == 1) return lit(std::string(1, char('0' + ds[0])));
  std::string out = "[";
  for (size_t i = 0, j = 0; i < ds.size(); i = j) {
    for (j = i + 1; j < ds.size() && ds[j] == ds[j - 1] + 1;) j++;
    out += char('0' + ds[i]);
    if (j - i > 1) out += std::string(j - i > 2 ? "-" : "") + char('0' + ds[j - 1]);
  }
  return out + "]";
}

std::string digit_span(int a, int b) {
  std::vector<int> ds;
  for (int d = a; d <= b; d++) ds.push_back(d);
  return digit_class(ds);
}

// From `lo` to `hi` free digits ("" for none).
std::string free_digits(int lo, int hi) {
  if (hi == 0) return "";
  if (lo == hi) return lo == 1 ? " [0-9]" : " [0-9]{" + std::to_string(lo) + "}";
  return " [0-9]{" + std::to_string(lo) + "," + std::to_string(hi) + "}";
}

// Decimal texts of one shape: `prefix`, a digit in [lo, hi], then free_lo..free_hi free digits.
struct Run {
  std::string prefix;
  int lo, hi, free_lo, free_hi;
};

// The runs of the equal-length texts from a to b (a <= b), in order.
void runs_between(const std::string& prefix, const std::string& a, const std::string& b, std::vector<Run>& out) {
  const std::string ra = a.substr(1), rb = b.substr(1);
  const bool low_full = all_zero(ra), high_full = rb.find_first_not_of('9') == std::string::npos;
  const int k = int(ra.size());
  if (a[0] == b[0] && !(low_full && high_full)) return runs_between(prefix + a[0], ra, rb, out);
  if (!low_full) runs_between(prefix + a[0], ra, std::string(size_t(k), '9'), out);
  const int x = a[0] - '0' + !low_full, y = b[0] - '0' - !high_full;
  if (x <= y) out.push_back({prefix, x, y, k, k});
  if (!high_full) runs_between(prefix + b[0], std::string(size_t(k), '0'), rb, out);
}

// The runs of the naturals from a to b (0 <= a <= b <= kTop), without leading zeros; runs that differ only in
// their count of free digits are one run.
std::vector<Run> natural_runs(Int a, Int b) {
  const std::string sa = text_of(a), sb = text_of(b);
  std::vector<Run> runs, out;
  for (size_t len = sa.size(); len <= sb.size(); len++) {
    std::string lowest(len, '0');
    lowest[0] = '1';
    runs_between("", len == sa.size() ? sa : lowest, len == sb.size() ? sb : std::string(len, '9'), runs);
  }
  for (const Run& r : runs) {
    Run* last = out.empty() ? nullptr : &out.back();
    if (last && last->prefix == r.prefix && last->lo == r.lo && last->hi == r.hi && last->free_hi + 1 == r.free_lo) last->free_hi = r.free_hi;
    else out.push_back(r);
  }
  return out;
}

// Multiples of n: the minimal automaton of "the digits read so far are a multiple of n" (Moore's partition
// refinement of the remainders mod n), and one rule per state and count of digits still needed and allowed.
class Multiples {
 public:
  Multiples(int64_t n, const std::string& ptr, const AddRule& add) : add_(add) {
    std::vector<int> cls(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; r++) cls[size_t(r)] = r != 0;
    for (size_t count = n > 1 ? 2 : 1;;) {
      std::map<std::array<int, 11>, int> ids;
      std::vector<int> next(static_cast<size_t>(n));
      for (int64_t r = 0; r < n; r++) {
        std::array<int, 11> sig{cls[size_t(r)]};
        for (int d = 0; d < 10; d++) sig[size_t(d) + 1] = cls[size_t((10 * r + d) % n)];
        next[size_t(r)] = ids.emplace(sig, int(ids.size())).first->second;
      }
      cls.swap(next);
      if (ids.size() == count) break;
      count = ids.size();
      if (count > size_t(kMaxStates))
        unsupported("multipleOf", ptr, std::to_string(n) + " needs more than " + std::to_string(kMaxStates) + " remainder states");
    }
    next_.resize(size_t(*std::max_element(cls.begin(), cls.end()) + 1));
    for (int64_t r = 0; r < n; r++)
      for (int d = 0; d < 10; d++) next_[size_t(cls[size_t(r)])][size_t(d)] = cls[size_t((10 * r + d) % n)];
    accept_ = start_ = cls[0];
  }

  std::string name(const std::string& body) { return add_("mult", body); }

  // The texts of a run that are multiples.
  std::optional<std::string> run(const Run& r) {
    int q = start_;
    for (char c : r.prefix) q = next_[size_t(q)][size_t(c - '0')];
    const auto t = digits_then(q, r.lo, r.hi, r.free_lo, r.free_hi - r.free_lo);
    return t && !r.prefix.empty() ? lit(r.prefix) + " " + *t : t;
  }

 private:
  const AddRule& add_;
  std::vector<std::array<int, 10>> next_;
  int start_ = 0, accept_ = 0;
  std::map<std::array<int, 3>, std::optional<std::string>> rest_;

  // From state q: a digit in [lo, hi], then `need` digits and up to `extra` more, ending on a multiple.
  std::optional<std::string> digits_then(int q, int lo, int hi, int need, int extra) {
    std::map<int, std::vector<int>> by_state;
    for (int d = lo; d <= hi; d++) by_state[next_[size_t(q)][size_t(d)]].push_back(d);
    std::vector<std::string> alts;
    for (const auto& [to, ds] : by_state)
      if (const auto r = rest(to, need, extra)) alts.push_back(digit_class(ds) + (r->empty() ? "" : " " + *r));
    return alts.empty() ? std::nullopt : std::optional<std::string>(alt(alts));
  }

  // From state q, `need` digits and up to `extra` more (leading zeros allowed) to a multiple: "", or a rule's
  // name. One path through the rules per text, so the matcher keeps one stack.
  std::optional<std::string> rest(int q, int need, int extra) {
    const bool end = need == 0 && q == accept_;
    if (need == 0 && extra == 0) return end ? std::optional<std::string>("") : std::nullopt;
    const std::array<int, 3> key = {q, need, extra};
    if (const auto it = rest_.find(key); it != rest_.end()) return it->second;
    if (next_.size() == 1) return rest_[key] = free_digits(need, need + extra).substr(1);
    const auto more = need > 0 ? digits_then(q, 0, 9, need - 1, extra) : digits_then(q, 0, 9, 0, extra - 1);
    if (!more) return rest_[key] = end ? std::optional<std::string>("") : std::nullopt;
    return rest_[key] = add_("mult", *more + (end ? " | " : ""));
  }
};

// The naturals from a to b, each a multiple when `mult` is given.
std::optional<std::string> naturals(Int a, Int b, Multiples* mult) {
  std::vector<std::string> alts;
  for (const Run& r : natural_runs(a, b)) {
    if (mult) {
      if (const auto t = mult->run(r)) alts.push_back(*t);
    } else {
      alts.push_back((r.prefix.empty() ? "" : lit(r.prefix) + " ") + digit_span(r.lo, r.hi) + free_digits(r.free_lo, r.free_hi));
    }
  }
  if (alts.empty()) return std::nullopt;
  return mult && alts.size() > 1 ? mult->name(alt(alts)) : alt(alts);
}

// The integers from lo to hi (within +-kTop; "-0" is 0).
std::optional<std::string> integers(Int lo, Int hi, Multiples* mult) {
  std::vector<std::string> alts;
  if (lo < 0)
    if (const auto t = naturals(std::max<Int>(1, -hi), -lo, mult)) alts.push_back("\"-\" " + *t);
  if (hi >= 0)
    if (const auto t = naturals(std::max<Int>(0, lo), hi, mult)) alts.push_back(*t);
  if (lo <= 0 && hi >= 0) alts.push_back("\"-0\"");
  return alts.empty() ? std::nullopt : std::optional<std::string>(alt(alts));
}

int64_t divisor_of(const Json& s, const std::string& ptr) {
  const Json& m = s["multipleOf"];
  if (!m.is_number() || m.get<double>() <= 0) malformed("multipleOf", ptr, "must be a number above 0");
  const Decimal d = decimal_of(m);
  if (!d.fp.empty()) unsupported("multipleOf", ptr, "not an integer");
  if (d.ip.size() > 6 || value_of(d.ip) > kMaxDivisor) unsupported("multipleOf", ptr, "above " + std::to_string(kMaxDivisor));
  return int64_t(value_of(d.ip));
}

// ---- Fractions --------------------------------------------------------------------------------------------

// A limit on a fraction's digits w: 0.w above (or below) 0.digits, or equal unless strict.
struct Limit {
  std::string digits;
  bool strict;
};
using OptLimit = std::optional<Limit>;

Limit rest(const Limit& l) { return {l.digits.empty() ? "" : l.digits.substr(1), l.strict}; }
int first(const Limit& l) { return l.digits.empty() ? 0 : l.digits[0] - '0'; }
std::string digit_lit(int d) { return lit(std::string(1, char('0' + d))); }

// Whether no digits at all (0.w = 0) meet the limits.
bool zero_ok(const OptLimit& lo, const OptLimit& hi) {
  return (!lo || (all_zero(lo->digits) && !lo->strict)) && (!hi || !hi->strict || !all_zero(hi->digits));
}

// Digit strings w of 1..m digits (0..m with `empty`) with lo < 0.w < hi (or equal, unless strict).
std::optional<std::string> fraction_digits(OptLimit lo, const OptLimit& hi, int m, bool empty) {
  if (lo && all_zero(lo->digits) && !lo->strict) lo.reset();  // every w meets it
  std::vector<std::string> alts;
  if (m > 0) {
    const int l = lo ? first(*lo) : -1, h = hi ? first(*hi) : 10;
    if (l + 1 <= h - 1) alts.push_back(digit_span(l + 1, h - 1) + free_digits(0, m - 1));
    const auto tight = [&](int d, const OptLimit& a, const OptLimit& b) {
      if (const auto r = fraction_digits(a, b, m - 1, true)) alts.push_back(digit_lit(d) + (r->empty() ? "" : " " + *r));
    };
    if (lo && hi && l == h) {
      tight(l, rest(*lo), rest(*hi));
    } else {
      if (lo) tight(l, rest(*lo), std::nullopt);
      if (hi) tight(h, std::nullopt, rest(*hi));
    }
  }
  const bool none = empty && zero_ok(lo, hi);
  if (alts.empty()) return none ? std::optional<std::string>("") : std::nullopt;
  return none ? "( " + join(alts, " | ") + " )?" : alt(alts);
}

// A number's fraction part ("", or "." and 1..20 digits) where its integer part equals the limits' own.
std::optional<std::string> fraction(const OptLimit& lo, const OptLimit& hi) {
  const auto w = fraction_digits(lo, hi, kDigits, false);
  const bool zero = zero_ok(lo, hi);
  if (!w) return zero ? std::optional<std::string>("") : std::nullopt;
  return zero ? "( \".\" " + *w + " )?" : "\".\" " + *w;
}

// Numbers without sign or exponent, from lo to hi (both >= 0; no hi: any).
std::optional<std::string> unsigned_decimals(const Bound& lo, std::optional<Bound> hi) {
  if (hi && hi->v.ip.size() > size_t(kDigits)) hi.reset();  // above every number written
  if (lo.v.ip.size() > size_t(kDigits)) return std::nullopt;
  if (hi) {
    const int c = compare_abs(lo.v, hi->v);
    if (c > 0 || (c == 0 && (lo.strict || hi->strict))) return std::nullopt;
  }
  const Limit low{lo.v.fp, lo.strict};
  std::vector<std::string> alts;
  const auto put = [&](const std::string& ip, const std::optional<std::string>& f) {
    if (f) alts.push_back(lit(ip) + (f->empty() ? "" : " " + *f));
  };
  if (hi && hi->v.ip == lo.v.ip) {
    put(lo.v.ip, fraction(low, Limit{hi->v.fp, hi->strict}));
  } else {
    put(lo.v.ip, fraction(low, std::nullopt));
    const Int a = value_of(lo.v.ip) + 1, z = hi ? value_of(hi->v.ip) - 1 : kTop;
    if (a <= z) alts.push_back(*naturals(a, z, nullptr) + " " + kAnyFraction);
    if (hi) put(hi->v.ip, fraction(std::nullopt, Limit{hi->v.fp, hi->strict}));
  }
  return alts.empty() ? std::nullopt : std::optional<std::string>(alt(alts));
}

Bound magnitude(const Bound& b) { return {Decimal{false, b.v.ip, b.v.fp}, b.strict}; }

// Numbers without exponent within the bounds: those written without "-", then those with it (-0 is 0).
std::optional<std::string> decimals(const Bounds& b) {
  std::vector<std::string> alts;
  if (!b.upper || !b.upper->v.neg) {
    const Bound lo = b.lower && !b.lower->v.neg ? *b.lower : Bound{};
    if (const auto t = unsigned_decimals(lo, b.upper)) alts.push_back(*t);
  }
  if (!b.lower || b.lower->v.neg || is_zero(b.lower->v)) {  // "-" t: t at most -lower, at least -upper
    const Bound lo = b.upper && (b.upper->v.neg || is_zero(b.upper->v)) ? magnitude(*b.upper) : Bound{};
    if (const auto t = unsigned_decimals(lo, b.lower ? std::optional<Bound>(magnitude(*b.lower)) : std::nullopt)) alts.push_back("\"-\" " + *t);
  }
  return alts.empty() ? std::nullopt : std::optional<std::string>(alt(alts));
}

}  // namespace

std::optional<std::string> numbers(const Json& s, bool fractions, const std::string& ptr, const AddRule& add) {
  const Bounds b = bounds_of(s, ptr);
  const bool multiples = s.contains("multipleOf");
  const int64_t n = multiples ? divisor_of(s, ptr) : 1;
  if (!b.lower && !b.upper && !multiples) return std::string(fractions ? "number" : "integer");
  if (fractions && !multiples) return decimals(b);
  // Integers, or integral numbers (a multiple of an integer is one): the bounds rounded inwards.
  const Int lo = std::max(b.lower ? least_integer(*b.lower) : -kTop, -kTop), hi = std::min(b.upper ? greatest_integer(*b.upper) : kTop, kTop);
  if (lo > hi) return std::nullopt;
  std::optional<Multiples> mult;
  if (multiples) mult.emplace(n, ptr, add);
  const auto ints = integers(lo, hi, mult ? &*mult : nullptr);
  return ints && fractions ? *ints + " " + kZeroFraction : ints;
}

}  // namespace jf::json_schema_number
