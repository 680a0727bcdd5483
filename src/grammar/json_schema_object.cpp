// Object members -> GBNF: a chain of rules from the last named property back to the first, one per property
// and count of members written so far (counts past what minProperties / maxProperties look at are one count).
#include "grammar/json_schema_object.h"

#include <algorithm>

namespace jf::json_schema_object {

namespace {

using namespace json_schema_text;
using Tail = std::optional<std::string>;  // what may follow; nullopt: nothing can

constexpr int64_t kMaxRules = 20000;  // named properties times counts

// `item` repeated lo..hi times (hi < 0: unbounded), as a sequence; "" for none.
std::string times(const std::string& item, int64_t lo, int64_t hi, const std::string& kw, const std::string& ptr) {
  return hi == 0 ? "" : "( " + item + " )" + rep(lo, hi, kw, ptr);
}

}  // namespace

std::optional<std::string> members(const std::vector<Member>& named, const std::optional<std::string>& extra, int64_t min,
                                   int64_t max, const std::string& ptr, const AddRule& add) {
  const int64_t n = int64_t(named.size());
  if (!extra && min > n) return std::nullopt;
  if (!extra && max >= n) max = -1;  // no limit: there are not that many keys
  const char* kw = max >= 0 ? "maxProperties" : "minProperties";
  const int64_t cap = max >= 0 ? max + 1 : min;  // counts at or past cap behave alike (past max: dead)
  if (cap > kMaxRules || (n + 1) * (cap + 1) > kMaxRules) unsupported(kw, ptr, "counts times properties above " + std::to_string(kMaxRules));
  const auto sat = [&](int64_t c) { return std::min(c, cap); };
  // The other members, once c are written (after a comma each), or before any (the first without one).
  const auto extras = [&](int64_t c, bool written) -> Tail {
    if (max >= 0 && c > max) return std::nullopt;
    const int64_t lo = std::max<int64_t>(min - c, 0), hi = max < 0 ? -1 : max - c;
    if (!extra || hi == 0) return lo == 0 ? Tail("") : std::nullopt;
    const std::string more = "\",\" ws " + *extra;
    if (written) return times(more, lo, hi, kw, ptr);
    const std::string rest = times(more, std::max<int64_t>(lo - 1, 0), hi < 0 ? -1 : hi - 1, kw, ptr);
    const std::string some = *extra + (rest.empty() ? "" : " " + rest);
    return lo == 0 ? "( " + some + " )?" : some;
  };
  const auto then = [](const std::string& head, const Tail& tail) { return tail ? Tail(head + (tail->empty() ? "" : " " + *tail)) : std::nullopt; };
  const auto either = [&](const Tail& a, const Tail& b) { return !a ? b : !b ? a : Tail(add("obj", *a + " | " + *b)); };
  // after[c]: what may follow once c members (at least one) are written; first: before any.
  std::vector<Tail> after(size_t(cap) + 1);
  for (int64_t c = std::min<int64_t>(cap, 1); c <= cap; c++) after[size_t(c)] = extras(c, true);
  Tail first = extras(0, false);
  for (size_t i = named.size(); i-- > 0;) {
    const Member& m = named[i];
    const std::string name = add("x", m.text);  // used by every count
    std::vector<Tail> before(after.size());
    for (int64_t c = std::min<int64_t>(cap, 1); c <= cap; c++) {
      const Tail& next = after[size_t(sat(c + 1))];
      if (m.required) before[size_t(c)] = then("\",\" ws " + name, next);
      else if (next == after[size_t(c)]) before[size_t(c)] = then("( \",\" ws " + name + " )?", next);  // no counting: one tail
      else before[size_t(c)] = either(then("\",\" ws " + name, next), after[size_t(c)]);
      if (before[size_t(c)] && before[size_t(c)]->find(' ') != std::string::npos) before[size_t(c)] = add("obj", *before[size_t(c)]);
    }
    const Tail take = then(name, after[size_t(sat(1))]);
    first = m.required ? take : either(take, first);
    after = std::move(before);
  }
  return first;
}

}  // namespace jf::json_schema_object
