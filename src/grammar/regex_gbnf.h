// JSON Schema `pattern` -> GBNF: an ECMAScript regular expression as a grammar over the JSON text of a string's
// contents, so that a model writes only strings the pattern matches, one character at a time.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/error.h"

namespace jf {

// A valid pattern that this converter cannot express exactly (a lookaround, a backreference, \b, an anchor
// inside the pattern, ...): what() says which.
struct RegexUnsupported : Error {
  using Error::Error;
};

// Not a regular expression at all: what() says where.
struct RegexInvalid : Error {
  using Error::Error;
};

// Adds a rule with that body under a new name of that kind; returns the name.
using RegexAddRule = std::function<std::string(const std::string& kind, const std::string& body)>;

// The GBNF sequence of the texts between a JSON string's quotes whose decoded string the pattern matches, as
// JSON Schema reads patterns: a match anywhere (a `^` at the start or `$` at the end of the pattern, or of each
// of its top-level alternatives, anchors that end), over code points (ECMAScript's `u` flag). A code point may be
// written every way JSON allows: raw (but for `"`, `\` and controls), a short escape (`\n`, `\"`, `\/`, ...),
// `\uXXXX` in either case, a surrogate pair. nullopt: the pattern matches no string (`[]`). Throws
// RegexUnsupported or RegexInvalid; the rules it needs come from `add`.
std::optional<std::string> regex_to_gbnf(std::string_view pattern, const RegexAddRule& add);

}  // namespace jf
