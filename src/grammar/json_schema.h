// JSON Schema -> GBNF (grammar/grammar.h): the grammar of the JSON texts a schema accepts, for structured
// output (OpenAI's response_format json_schema and json_object).
//
// The grammar is exact within these policies; anything else throws jf::Error, never a looser grammar:
//  - Whitespace (JsonWhitespace::Flexible, the default): none before or after the root value. Between two tokens: nothing, one space, or a line break
//    and up to 40 spaces or tabs. Compact `{"a": 1, "b": [2, 3]}` and pretty-printed text (indentation up to
//    40 columns) both match, and a model cannot loop on whitespace.
//  - Object keys: the schema's properties come in the order `properties` lists them, required ones mandatory,
//    optional ones skippable (like llama.cpp); other keys, when additionalProperties allows them, come after
//    them. nlohmann::json sorts object keys, so pass an ordered_json to keep the schema's own order. Property
//    names, enum and const strings are written as nlohmann's dump writes them (raw UTF-8, escaping only `"`,
//    `\` and control characters); other strings may use every JSON escape (a surrogate pair is one character,
//    a lone surrogate is refused). Duplicate keys are not prevented.
//  - Numbers: at most 20 integer digits, 20 fraction digits, 3 exponent digits; an integer has neither
//    fraction nor exponent (1.0 is a number, not an integer, as in draft 4). An enum / const number is its
//    dump(), an integral one also as N.0 where non-integers are allowed. A number under minimum / maximum /
//    exclusive* or multipleOf has no exponent; bounds compare exactly with the decimal the schema writes (its
//    shortest form: 0.1 is 1/10), and under multipleOf a number is integral (N, N.0, N.00, ...).
//  - Formats (no escapes inside them): date (leap years exact), time (seconds 00-59: no leap second; at most 9
//    fraction digits; Z or an offset required), date-time, uuid.
//  - pattern: an ECMAScript regular expression over code points (the `u` flag), matching anywhere unless `^` /
//    `$` anchor it (grammar/regex_gbnf.h); the string may use every JSON escape.
//  - minProperties / maxProperties count the members written (a repeated other key counts each time).
//
// Keywords: type, enum, const, properties, required, additionalProperties, items (a schema, or draft 4's
// array), prefixItems, additionalItems, minItems, maxItems, uniqueItems: false, minLength, maxLength, format,
// pattern (not next to minLength / maxLength / format; no lookaround, backreference, \b or inner anchor),
// minimum / maximum / exclusiveMinimum / exclusiveMaximum (draft 4's boolean exclusive* too), multipleOf (a
// positive integer up to 100000 whose remainder automaton has at most 200 states), minProperties /
// maxProperties (minProperties only where at most one key beyond the required ones is needed, or no other key
// is allowed: other keys are not kept distinct), $ref (#, #/$defs/..., any JSON pointer into the schema;
// recursion allowed), allOf, anyOf and oneOf (merged with the schema they sit in where the merge is exact; oneOf
// only with provably disjoint branches: types, const / enum values, or a required property with disjoint
// schemas). Annotations are ignored (title, description, $schema, $id at the root, $comment, examples, default,
// deprecated, readOnly, writeOnly, definitions, $defs). Every other keyword, an unknown one included, is
// "unsupported keyword 'K' at /pointer".
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace jf {

// A GBNF grammar (root rule `root`) of the JSON texts valid under `schema`. Throws jf::Error "json schema: ..."
// for an unsupported keyword, a malformed schema, nesting deeper than 64, a schema that accepts nothing, or a
// grammar past 200k elements.
// `ws`: Flexible (above), or Compact: no whitespace at all (`{"a":1,"b":[2,3]}`), so that everything but the
// values is forced text, which decoders send as drafts (jump-forward).
enum class JsonWhitespace { Flexible, Compact };
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, JsonWhitespace ws = JsonWhitespace::Flexible);
// (Properties in key order: nlohmann::json sorts them.)
std::string json_schema_to_gbnf(const nlohmann::json& schema, JsonWhitespace ws = JsonWhitespace::Flexible);

// Any JSON object (its values any JSON value), under the same whitespace policy: response_format json_object.
std::string json_any_gbnf(JsonWhitespace ws = JsonWhitespace::Flexible);

}  // namespace jf
