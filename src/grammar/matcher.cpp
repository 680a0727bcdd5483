#include "grammar/matcher.h"

#include <algorithm>

#include "base/error.h"
#include "tokenizer/utf8.h"

namespace jf {

std::string GrammarState::key() const {
  std::string k;
  k.reserve(8 + stacks.size() * 16);
  auto put = [&](uint32_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
  put(partial);
  put(static_cast<uint32_t>(partial_left) | static_cast<uint32_t>(partial_size) << 8);
  for (const GrammarStack& s : stacks) {
    put(static_cast<uint32_t>(s.size()));
    for (uint32_t e : s) put(e);
  }
  return k;
}

GrammarMatcher::GrammarMatcher(const Grammar& g) : g_(g) {}

// The smallest code point a UTF-8 sequence of `bytes` may encode (a smaller one is an overlong encoding).
static uint32_t min_code_point(int bytes) { return bytes == 2 ? 0x80 : bytes == 3 ? 0x800 : bytes == 4 ? 0x10000 : 0; }

void GrammarMatcher::normalize(std::vector<GrammarStack>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
}

// The parser refused left recursion, so every Ref expanded here is followed by a character before the same
// rule comes back: the recursion ends.
void GrammarMatcher::expand(GrammarStack s, std::vector<GrammarStack>& out, int depth) const {
  if (s.empty() || g_.elements[s.back()].kind == GrammarElement::Chars) {
    out.push_back(std::move(s));
    return;
  }
  const uint32_t at = s.back();
  s.pop_back();
  if (g_.elements[at + 1].kind != GrammarElement::End) s.push_back(at + 1);
  for (uint32_t alt : g_.rules[g_.elements[at].value]) {
    GrammarStack next = s;
    if (g_.elements[alt].kind != GrammarElement::End) next.push_back(alt);
    expand(std::move(next), out, depth + 1);
  }
}

GrammarState GrammarMatcher::start() const {
  GrammarState s;
  for (uint32_t alt : g_.rules[g_.root]) {
    GrammarStack stack;
    if (g_.elements[alt].kind != GrammarElement::End) stack.push_back(alt);
    expand(std::move(stack), s.stacks, 0);
  }
  normalize(s.stacks);
  return s;
}

void GrammarMatcher::step(const GrammarState& from, uint32_t cp, GrammarState& to) const {
  to.stacks.clear();
  for (const GrammarStack& s : from.stacks) {
    if (s.empty() || !g_.classes[g_.elements[s.back()].value].matches(cp)) continue;
    GrammarStack next(s.begin(), s.end() - 1);
    if (g_.elements[s.back() + 1].kind != GrammarElement::End) next.push_back(s.back() + 1);
    expand(std::move(next), to.stacks, 0);
  }
  normalize(to.stacks);
  // A grammar this ambiguous (a nested counted repetition: `(.{1,100}){1,100}`) costs its matcher more per
  // character than a text can afford: refused rather than left to stall a server's model thread.
  if (to.stacks.size() > kMaxGrammarStacks)
    throw Error("grammar: more than " + std::to_string(kMaxGrammarStacks) +
                " ways to continue the text at once (an ambiguous grammar, e.g. a counted repetition inside another)");
}

bool GrammarMatcher::advance(GrammarState& s, uint8_t b) const {
  if (s.partial_left == 0) {
    if (b < 0x80) {
      GrammarState next;
      step(s, b, next);
      s.stacks = std::move(next.stacks);
      return !s.dead();
    }
    const int n = (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0) {
      s.stacks.clear();
      return false;
    }
    s.partial = b & (0x7Fu >> n);
    s.partial_left = static_cast<int8_t>(n - 1);
    s.partial_size = static_cast<int8_t>(n);
  } else {
    if ((b & 0xC0) != 0x80) {
      s.stacks.clear();
      return false;
    }
    s.partial = (s.partial << 6) | (b & 0x3Fu);
    if (--s.partial_left == 0) {
      const uint32_t cp = s.partial;
      s.partial = 0;
      if (cp < min_code_point(s.partial_size) || cp > 0x10FFFF) {  // overlong or past Unicode
        s.stacks.clear();
        return false;
      }
      GrammarState next;
      step(s, cp, next);
      s.stacks = std::move(next.stacks);
      return !s.dead();
    }
  }
  // Inside a code point: alive while some class takes a code point with these leading bits (of the code
  // points a sequence of this length may encode).
  const int shift = 6 * s.partial_left;
  const uint32_t lo = std::max(s.partial << shift, min_code_point(s.partial_size)), hi = std::min((s.partial << shift) | ((1u << shift) - 1), 0x10FFFFu);
  if (lo > hi) {
    s.stacks.clear();
    return false;
  }
  const bool alive = std::any_of(s.stacks.begin(), s.stacks.end(), [&](const GrammarStack& st) {
    return !st.empty() && g_.classes[g_.elements[st.back()].value].matches_any(lo, hi);
  });
  if (!alive) s.stacks.clear();
  return alive;
}

bool GrammarMatcher::advance(GrammarState& s, std::string_view bytes) const {
  for (char c : bytes)
    if (!advance(s, static_cast<uint8_t>(c))) return false;
  return !s.dead();
}

bool GrammarMatcher::complete(const GrammarState& s) const {
  return s.partial_left == 0 && std::any_of(s.stacks.begin(), s.stacks.end(), [](const GrammarStack& st) { return st.empty(); });
}

bool GrammarMatcher::finished(const GrammarState& s) const {
  return complete(s) && s.stacks.size() == 1;
}

std::string GrammarMatcher::forced_text(const GrammarState& from, size_t max_bytes) const {
  std::string out;
  if (from.partial_left != 0) return out;
  GrammarState s = from, next;
  while (out.size() < max_bytes && !s.dead()) {
    int64_t only = -1;  // the one code point every stack's class allows
    for (const GrammarStack& st : s.stacks) {
      if (st.empty()) return out;  // the grammar may end here
      const CharClass& c = g_.classes[g_.elements[st.back()].value];
      if (c.negated || c.ranges.empty()) return out;
      for (const auto& [lo, hi] : c.ranges) {
        if (lo != hi || (only >= 0 && only != lo)) return out;
        only = lo;
      }
    }
    step(s, static_cast<uint32_t>(only), next);
    std::swap(s, next);
    tok::utf8_append(out, static_cast<uint32_t>(only));
  }
  return out;
}

bool GrammarMatcher::accepts(std::string_view text) const {
  GrammarState s = start();
  return advance(s, text) && complete(s);
}

}  // namespace jf
