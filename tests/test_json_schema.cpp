// JSON Schema -> GBNF (grammar/json_schema.h): hand-written schemas with texts the grammar must accept and
// reject, errors for what is unsupported or malformed, size bounds, and the JSON Schema Test Suite
// (JF_JSON_SCHEMA_SUITE: one draft's tests folder; tests/json_schema_suite_test.sh installs it).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>

#include "base/error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/regex_gbnf.h"
#include "tokenizer/utf8.h"
#include "json_schema_support.h"


TEST(JsonSchema, ObjectRequiredOptionalAndClosed) {
  const Compiled c = compile(R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
      "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["name"], "additionalProperties": false})");
  for (const char* v : {R"({"name": "a"})", R"({"name": "a", "age": 3})", R"({"name": "a", "tags": ["x", "y"]})",
                        R"({"name": "", "age": -12, "tags": []})"})
    for (const std::string& t : layouts(v)) EXPECT_TRUE(c.accepts(t)) << t;
  expect_texts(c, {R"({"name":"a","age":3})", "{\n  \"name\" : \"a\"\n}", "{ \"name\": \"a\" }"},
               {"{}", R"({"age": 3})", R"({"name": 1})", R"({"name": "a", "extra": 1})", R"({"name": "a", "age": "3"})",
                R"({"name": "a)", R"({"name": "a"}x)", R"({"name": "a"} )", R"( {"name": "a"})", R"({"name": "a",})",
                R"({"name": "a", "age": 1.5})", R"({"name": "a", "tags": [1]})", R"({"name": "a", "name": "b"})",
                R"([{"name": "a"}])", "null",
                // policy: properties in schema order; bounded whitespace
                R"({"age": 3, "name": "a"})", "{\n" + std::string(41, ' ') + "\"name\": \"a\"}", R"({  "name": "a"})"});
}

TEST(JsonSchema, AdditionalPropertiesDefaultAndSchema) {
  const Compiled open = compile(R"({"properties": {"a": {"type": "integer"}, "ab": {"type": "integer"}}})");
  expect_texts(open, {R"({"a": 1, "zz": [1, {"q": null}]})", R"({"zz": 1})", R"({"a": 1, "ab": 2, "abc": "s"})", R"({"ab": 2, "b": 0})",
                      R"({"a": 1, "": 0})", R"({"a": 1, "a\"": 0})", "1", R"("s")", "[1]"},
               {R"({"a": "x"})", R"({"zz": 1, "a": "x"})", R"({"a": 1, "a": "x"})", R"({"a": 1, "ab": 2, "ab": "x"})",
                // the named keys spelt with escapes are not "other" keys either
                R"({"\u0061": "x"})", R"({"a\u0062": "x"})"});
  const Compiled typed = compile(R"({"type": "object", "additionalProperties": {"type": "boolean"}})");
  expect_texts(typed, {"{}", R"({"x": true, "y": false})", R"({"\u00e9\n": true})"}, {R"({"x": 1})", R"({"x": true, "y": null})", "[]"});
  const Compiled special = compile(R"({"type": "object", "properties": {"a\"b": {"type": "integer"}, "é\n": {"type": "string"}},
      "required": ["a\"b"]})");
  expect_texts(special, {R"({"a\"b": 1, "é\n": "x"})", R"({"a\"b": 1, "a\"bc": "x"})", R"({"a\"b": 1, "\n": 2})"},
               {R"({"é\n": "x"})", R"({"a\"b": 1, "a\"b": "x"})", R"({"a\"b": 1, "é\n": 2})"});
}

TEST(JsonSchema, RequiredWithoutProperties) {
  const Compiled c = compile(R"({"type": "object", "required": ["id"], "additionalProperties": {"type": "integer"}})");
  expect_texts(c, {R"({"id": 1})", R"({"id": 1, "x": 2})"}, {"{}", R"({"x": 2})", R"({"id": "1"})", R"({"id": 1, "x": "2"})"});
  EXPECT_NE(error_of(R"({"type": "object", "required": ["id"], "additionalProperties": false})").find("accepts no value"), std::string::npos);
}

TEST(JsonSchema, NestedArraysAndCounts) {
  const Compiled c = compile(R"({"type": "array", "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
      "minItems": 1, "maxItems": 3})");
  for (const char* v : {"[[1, 2]]", "[[], [3]]", "[[1], [2], [3, 4]]"})
    for (const std::string& t : layouts(v)) EXPECT_TRUE(c.accepts(t)) << t;
  expect_texts(c, {}, {"[]", "[[1, 2, 3]]", "[[1], [2], [3], [4]]", R"([["a"]])", "[[1], ]", "[[1]", "[1]", "{}"});
  const Compiled tuple = compile(R"({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})");
  expect_texts(tuple, {R"(["a", 1])", R"(["a"])", "[]", "{}"}, {R"(["a", 1, 2])", R"([1, "a"])", R"(["a", "b"])"});
  const Compiled draft4 = compile(R"({"items": [{"type": "integer"}], "additionalItems": {"type": "string"}, "minItems": 2})");
  expect_texts(draft4, {R"([1, "a"])", R"([1, "a", "b"])"}, {"[1]", "[1, 2]", R"(["a", "b"])", "[]"});
  const Compiled least = compile(R"({"prefixItems": [{"type": "integer"}, {"type": "string"}, {"type": "boolean"}], "minItems": 2})");
  expect_texts(least, {R"([1, "a"])", R"([1, "a", true])", R"([1, "a", true, null])"}, {"[1]", "[]", R"([1, "a", 2])"});
  EXPECT_NE(error_of(R"({"type": "array", "prefixItems": [{}], "items": false, "minItems": 2})").find("accepts no value"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "array", "prefixItems": [{}, false], "minItems": 2})").find("accepts no value"), std::string::npos);
  const Compiled exact = compile(R"({"type": "array", "minItems": 3, "maxItems": 3})");
  expect_texts(exact, {"[1, 2, 3]", R"([null, {}, "x"])"}, {"[1, 2]", "[1, 2, 3, 4]"});
}

TEST(JsonSchema, EnumAndConst) {
  const Compiled c = compile(R"({"enum": ["red", "green", "blue", "re\"d", null, 42, 1.5, {"a": [1]}, [true]]})");
  expect_texts(c, {R"("red")", R"("green")", R"("re\"d")", "null", "42", "42.0", "1.5", R"({"a": [1]})", "{\n  \"a\": [\n    1\n  ]\n}", "[true]"},
               {R"("yellow")", R"("re")", R"("redd")", R"("Red")", "43", "4", "1.50", R"({"a": [2]})", "[]", "true", R"("\u0072ed")"});
  const Compiled typed = compile(R"({"type": "string", "enum": ["a", 1, {"b": 1}, null, ["a"]]})");
  expect_texts(typed, {R"("a")"}, {"1", R"({"b": 1})", "null", R"(["a"])"});
  const Compiled integer = compile(R"({"type": "integer", "enum": [1, 2.0, 2.5]})");
  expect_texts(integer, {"1", "2"}, {"1.0", "2.5", "3"});
  const Compiled konst = compile(R"({"const": "x", "description": "only x"})");
  expect_texts(konst, {R"("x")"}, {R"("y")", "\"x"});
  EXPECT_NE(error_of(R"({"enum": ["a"], "minLength": 2})").find("'minLength'"), std::string::npos);
  EXPECT_NE(error_of(R"({"enum": [], "const": 1})").find("accepts no value"), std::string::npos);
}

TEST(JsonSchema, AnyOfOneOfAllOf) {
  const Compiled any = compile(R"({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 10}]})");
  expect_texts(any, {R"("ab")", "10", "999"}, {R"("abc")", "9", "true", "10.5"});
  const Compiled based = compile(R"({"type": "string", "anyOf": [{"maxLength": 2}, {"minLength": 4}]})");
  expect_texts(based, {R"("ab")", R"("abcd")"}, {R"("abc")", "1"});
  const Compiled one = compile(R"({"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]})");
  expect_texts(one, {R"("a")", "1", "null"}, {"1.5", "true"});
  const Compiled tagged = compile(R"({"oneOf": [
      {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind", "x"], "additionalProperties": false},
      {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind", "y"], "additionalProperties": false}]})");
  expect_texts(tagged, {R"({"kind": "a", "x": 1})", R"({"kind": "b", "y": "s"})"}, {R"({"kind": "a", "y": "s"})", R"({"kind": "c", "x": 1})"});
  EXPECT_NE(error_of(R"({"oneOf": [{"type": "integer"}, {"minimum": 2}]})").find("unsupported keyword 'oneOf' at /"), std::string::npos);
  EXPECT_NE(error_of(R"({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]})").find("'oneOf'"), std::string::npos);
  const Compiled all = compile(R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}],
      "properties": {"b": {"type": "string"}}})");
  expect_texts(all, {R"({"b": "x", "a": 1})", R"({"a": 1})"}, {R"({"b": "x"})", R"({"a": "1"})", R"({"a": 1, "b": 2})"});
  const Compiled both = compile(R"({"allOf": [{"properties": {"a": {"type": "integer", "minimum": 0}}}, {"properties": {"a": {"maximum": 5}}}]})");
  expect_texts(both, {R"({"a": 0})", R"({"a": 5})"}, {R"({"a": 6})", R"({"a": -1})"});
  EXPECT_NE(error_of(R"({"allOf": [{"properties": {"a": {}}, "additionalProperties": false}, {"properties": {"b": {}}}]})")
                .find("'additionalProperties'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"allOf": [{"minLength": 1}, {"minLength": 2}]})").find("'minLength'"), std::string::npos);
  // Draft 4's exclusiveMinimum: true qualifies the minimum beside it only, so it does not merge with another's.
  EXPECT_NE(error_of(R"({"allOf": [{"type": "integer", "minimum": 5}, {"exclusiveMinimum": true}]})").find("'minimum'"), std::string::npos);
}

TEST(JsonSchema, RefsAndRecursion) {
  const Compiled tree = compile(R"({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
      "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["value"], "additionalProperties": false}},
      "$ref": "#/$defs/node"})");
  for (const char* v : {R"({"value": 1})", R"({"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}, {"value": 4}]})"})
    for (const std::string& t : layouts(v)) EXPECT_TRUE(tree.accepts(t)) << t;
  expect_texts(tree, {}, {R"({"value": 1, "children": [{"children": []}]})", R"({"value": 1, "children": [{"value": 2, "x": 1}]})"});
  const Compiled list = compile(R"({"type": "object", "properties": {"v": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
      "required": ["v", "next"], "additionalProperties": false})");
  expect_texts(list, {R"({"v": 1, "next": null})", R"({"v": 1, "next": {"v": 2, "next": null}})"}, {R"({"v": 1, "next": {"v": 2}})"});
  const Compiled old = compile(R"({"definitions": {"a": {"type": "integer"}, "b": {"$ref": "#/definitions/a"}}, "items": {"$ref": "#/definitions/b"}})");
  expect_texts(old, {"[1, 2]"}, {R"(["x"])"});
  EXPECT_NE(error_of(R"({"$ref": "#/$defs/missing"})").find("unresolvable $ref '#/$defs/missing'"), std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "http://example.com/s.json"})").find("unsupported keyword '$ref'"), std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "#"})").find("left recursion"), std::string::npos);
  EXPECT_NE(error_of(R"({"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a", "maxLength": 2})").find("'$ref'"), std::string::npos);
}

TEST(JsonSchema, StringLengthsCountCodePoints) {
  const Compiled c = compile(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  expect_texts(c, {R"("ab")", R"("abc")", R"("a\nb")", R"("\u00e9\u00E9")", "\"😀😀\"", R"("\ud83d\ude00\uD83D\uDE00")", R"("\/\\")"},
               {R"("a")", R"("abcd")", R"("a\qb")", R"("\ud83dab")", R"("\ude00ab")", "\"a\nb\"", R"("ab)", R"("\u00e")", "12",
                "\"\xED\xA0\x80" "b\""});  // a surrogate, raw
  const Compiled exact = compile(R"({"type": "string", "maxLength": 0})");
  expect_texts(exact, {R"("")"}, {R"("a")"});
  EXPECT_NE(error_of(R"({"type": "string", "maxLength": 20000})").find("'maxLength'"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "minLength": 3, "maxLength": 2})").find("accepts no value"), std::string::npos);
}

TEST(JsonSchema, Formats) {
  const Compiled date = compile(R"({"type": "string", "format": "date"})");
  expect_texts(date, {R"("2024-02-29")", R"("2000-02-29")", R"("1999-12-31")", R"("2023-04-30")", R"("0400-02-29")"},
               {R"("2023-02-29")", R"("1900-02-29")", R"("2024-04-31")", R"("2024-13-01")", R"("2024-00-10")", R"("2024-1-01")", R"("2024-01-00")"});
  // Every day of every month against the calendar, and February 29 of every year 0000-9999.
  const auto leap = [](int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; };
  const auto quoted_date = [](int y, int m, int d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "\"%04d-%02d-%02d\"", y, m, d);
    return std::string(buf);
  };
  for (int y : {1900, 1999, 2000, 2023, 2024, 2100})
    for (int m = 0; m <= 13; m++)
      for (int d = 0; d <= 32; d++) {
        const int days = m == 2 ? (leap(y) ? 29 : 28) : (m == 4 || m == 6 || m == 9 || m == 11) ? 30 : 31;
        ASSERT_EQ(date.accepts(quoted_date(y, m, d)), m >= 1 && m <= 12 && d >= 1 && d <= days) << quoted_date(y, m, d);
      }
  for (int y = 0; y <= 9999; y++) ASSERT_EQ(date.accepts(quoted_date(y, 2, 29)), leap(y)) << y;
  const Compiled time = compile(R"({"type": "string", "format": "time"})");
  expect_texts(time, {R"("12:34:56Z")", R"("23:59:59.123+05:30")", R"("00:00:00z")"},
               {R"("24:00:00Z")", R"("12:34:56")", R"("12:60:00Z")", R"("12:34:56.Z")", R"("12:34:56+24:00")"});
  const Compiled dt = compile(R"({"type": "string", "format": "date-time"})");
  expect_texts(dt, {R"("2024-01-01T00:00:00Z")", R"("1963-06-19t08:30:06.283185-07:00")"}, {R"("2024-01-01 00:00:00Z")", R"("2024-01-01T00:00Z")"});
  const Compiled uuid = compile(R"({"type": "string", "format": "uuid"})");
  expect_texts(uuid, {R"("123e4567-e89b-12d3-a456-426614174000")", R"("123E4567-E89B-12D3-A456-426614174000")"},
               {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"});
  EXPECT_EQ(error_of(R"({"type": "string", "format": "email"})"), "json schema: unsupported keyword 'format' at / (format 'email')");
}

TEST(JsonSchema, NumbersAndIntegers) {
  const Compiled num = compile(R"({"type": "number"})");
  expect_texts(num, {"1", "-0.5", "1e10", "1.5E-3", "0", "-0", "12345678901234567890.5"}, {"01", "1.", ".5", "+1", "1e", "NaN", "--1", "1 "});
  const Compiled integer = compile(R"({"type": "integer"})");
  expect_texts(integer, {"0", "-7", "18446744073709551615"}, {"1.0", "1e3", "-", "00", "123456789012345678901"});
  const Compiled types = compile(R"({"type": ["string", "null"]})");
  expect_texts(types, {R"("x")", "null"}, {"1", "false"});
  const Compiled boolean = compile(R"({"type": "boolean"})");
  expect_texts(boolean, {"true", "false"}, {"null", "1", "True"});
}

// Integer bounds: every integer near the bounds, and random ones, against the arithmetic.
TEST(JsonSchema, IntegerRangesExact) {
  std::mt19937_64 rng(7);
  struct Case {
    std::string schema;
    std::optional<int64_t> lo, hi;
  };
  std::vector<Case> cases = {{R"({"type": "integer", "minimum": -15, "maximum": 120})", -15, 120},
                             {R"({"type": "integer", "minimum": 7})", 7, std::nullopt},
                             {R"({"type": "integer", "exclusiveMaximum": -3})", std::nullopt, -4},
                             {R"({"type": "integer", "minimum": 1.5, "exclusiveMaximum": 1000})", 2, 999},
                             {R"({"type": "integer", "minimum": 10, "exclusiveMinimum": true, "maximum": 20, "exclusiveMaximum": true})", 11, 19},
                             {R"({"type": "integer", "minimum": 0, "maximum": 0})", 0, 0}};
  for (int i = 0; i < 20; i++) {
    const int64_t a = int64_t(rng() % 2000001) - 1000000, b = a + int64_t(rng() % 100000);
    cases.push_back({R"({"type": "integer", "minimum": )" + std::to_string(a) + R"(, "maximum": )" + std::to_string(b) + "}", a, b});
  }
  for (const Case& k : cases) {
    const Compiled c = compile(k.schema);
    std::vector<int64_t> probe;
    for (std::optional<int64_t> edge : {k.lo, k.hi, std::optional<int64_t>(0)})
      for (int64_t d = -130; edge && d <= 130; d++) probe.push_back(*edge + d);
    for (int i = 0; i < 300; i++) probe.push_back(int64_t(rng() % 4000001) - 2000000);
    for (int64_t v : {int64_t(-999999999999), int64_t(999999999999)}) probe.push_back(v);
    for (int64_t v : probe) {
      const bool in = (!k.lo || v >= *k.lo) && (!k.hi || v <= *k.hi);
      ASSERT_EQ(c.accepts(std::to_string(v)), in) << k.schema << " value " << v;
    }
    EXPECT_EQ(c.accepts("-0"), (!k.lo || *k.lo <= 0) && (!k.hi || *k.hi >= 0)) << k.schema;
    EXPECT_FALSE(c.accepts("007")) << k.schema;
  }
  EXPECT_NE(error_of(R"({"type": "number", "multipleOf": 0.5})").find("unsupported keyword 'multipleOf'"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "integer", "minimum": 5, "maximum": 4})").find("accepts no value"), std::string::npos);
}

TEST(JsonSchema, UnsupportedKeywordsNameKeywordAndPlace) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"properties": {"tags": {"type": "array", "uniqueItems": true}}})", "json schema: unsupported keyword 'uniqueItems' at /properties/tags"},
      {R"({"not": {"type": "string"}})", "json schema: unsupported keyword 'not' at /"},
      {R"({"patternProperties": {"^a": {}}})", "json schema: unsupported keyword 'patternProperties' at /"},
      {R"j({"items": {"type": "string", "pattern": "a(?=b)"}})j", "json schema: unsupported keyword 'pattern' at /items (lookahead)"},
      {R"({"items": {"pattern": "^a", "maxLength": 3}})", "json schema: unsupported keyword 'pattern' at /items (next to minLength / maxLength)"},
      {R"({"$defs": {"x": {"multipleOf": 2.5}}, "$ref": "#/$defs/x"})", "json schema: unsupported keyword 'multipleOf' at /$defs/x (not an integer)"},
      {R"({"type": "object", "minProperties": 3, "required": ["a"]})",
       "json schema: unsupported keyword 'minProperties' at / (needs two or more keys beyond the required ones, which may repeat)"},
      {R"({"anyOf": [{"if": {}}]})", "json schema: unsupported keyword 'if' at /anyOf/0"},
      {R"({"properties": {"a/b": {"x-custom": 1}}})", "json schema: unsupported keyword 'x-custom' at /properties/a~1b"},
      {R"({"properties": {"a": {"$id": "http://x/y"}}})", "json schema: unsupported keyword '$id' at /properties/a"},
  };
  for (const auto& [schema, message] : cases) EXPECT_EQ(error_of(schema), message) << schema;
  EXPECT_EQ(error_of(R"({"uniqueItems": false, "title": "t", "$schema": "x", "$id": "http://x", "examples": [1], "default": 2})"), "");
}

TEST(JsonSchema, MalformedSchemasThrow) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type": "strin"})", "'type'"},     {R"({"minLength": -1})", "'minLength'"},
      {R"({"type": "object", "required": "a"})", "'required'"}, {R"({"type": "object", "properties": []})", "'properties'"},
      {R"({"enum": 1})", "'enum'"},           {R"({"$ref": 5})", "'$ref'"},
      {R"({"anyOf": []})", "'anyOf'"},        {R"({"type": "array", "items": 3})", "not an object or a boolean"},
      {"false", "accepts no value"},          {R"({"maxItems": 1.5})", "'maxItems'"},
  };
  for (const auto& [schema, part] : cases) {
    const std::string e = error_of(schema);
    EXPECT_NE(e.find(part), std::string::npos) << schema << " gave: " << e;
    EXPECT_EQ(e.rfind("json schema: ", 0), 0u) << e;
  }
}

TEST(JsonSchema, BoundedWork) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  Json big = {{"enum", Json::array()}};
  for (int i = 0; i < 300000; i++) big["enum"].push_back(std::string("value-") + std::to_string(int64_t(i) * 7919));
  std::string e;
  try {
    json_schema_to_gbnf(big);
  } catch (const Error& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("too large"), std::string::npos) << e;
  // A smaller enum compiles into a prefix tree: one stack per prefix, and exact.
  Json small = {{"enum", Json::array()}};
  for (int i = 0; i < 5000; i++) small["enum"].push_back(std::string("v") + std::to_string(i * 13));
  const Compiled c = compile_gbnf(json_schema_to_gbnf(small));
  expect_texts(c, {R"("v0")", R"("v13")", R"("v64987")"}, {R"("v1")", R"("v14")", R"("v")", R"("v649870")"});
  // Deep nesting: a clear error, not a stack overflow.
  std::string deep = R"({"type": "integer"})";
  for (int i = 0; i < 500; i++) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_NE(error_of(deep).find("nesting deeper than 64"), std::string::npos);
  // References that fan out stay linear: each target is one rule.
  Json fan = {{"$defs", Json::object()}, {"$ref", "#/$defs/a0"}};
  for (int i = 0; i < 60; i++) {
    const std::string next = i == 59 ? "" : std::string("#/$defs/a") + std::to_string(i + 1);
    fan["$defs"][std::string("a") + std::to_string(i)] = next.empty() ? Json{{"type", "integer"}}
                                                         : Json{{"type", "array"}, {"prefixItems", {{{"$ref", next}}, {{"$ref", next}}}}};
  }
  const std::string gbnf = json_schema_to_gbnf(fan);
  EXPECT_LT(gbnf.size(), 20000u);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 30.0);
  EXPECT_NE(error_of(R"({"type": "array", "maxItems": 100000})").find("'maxItems'"), std::string::npos);
}

TEST(JsonSchema, KeyOrderOfPlainJsonIsSorted) {
  // nlohmann::json sorts keys: its properties come alphabetically; ordered_json keeps the schema's order.
  const nlohmann::json schema = nlohmann::json::parse(R"({"properties": {"z": {"type": "integer"}, "a": {"type": "integer"}}, "additionalProperties": false})");
  const Compiled sorted = compile_gbnf(json_schema_to_gbnf(schema));
  expect_texts(sorted, {R"({"a": 1, "z": 2})"}, {R"({"z": 2, "a": 1})"});
  const Compiled kept = compile(schema.dump().replace(schema.dump().find("\"a\""), 3, "\"b\""));
  EXPECT_TRUE(kept.accepts(R"({"b": 1, "z": 2})"));
}

TEST(JsonSchema, AnyObject) {
  const Compiled c = compile_gbnf(json_any_gbnf());
  for (const char* v : {"{}", R"({"a": [1, 2.5, {"b": null}], "c": "\u00e9\n"})"})
    for (const std::string& t : layouts(v)) EXPECT_TRUE(c.accepts(t)) << t;
  expect_texts(c, {}, {"[]", "1", R"("s")", "{", R"({"a": })", R"({"a" 1})"});
}

// ---- JSON Schema Test Suite -----------------------------------------------------------------------------

namespace {

// Property names in the order the converter writes them: every `properties` (depth first, a schema's own
// before its subschemas'), then `required` names found nowhere in `properties`.
void property_order(const Json& s, bool required_pass, std::vector<std::string>& out) {
  const auto add = [&](const std::string& k) {
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  };
  if (s.is_object()) {
    if (!required_pass && s.contains("properties") && s["properties"].is_object())
      for (const auto& kv : s["properties"].items()) add(kv.key());
    if (required_pass && s.contains("required") && s["required"].is_array())
      for (const Json& r : s["required"])
        if (r.is_string()) add(r.get<std::string>());
  }
  if (s.is_object() || s.is_array())
    for (const Json& v : s) property_order(v, required_pass, out);
}

Json reorder(const Json& v, const std::vector<std::string>& order) {
  if (v.is_array()) {
    Json out = Json::array();
    for (const Json& x : v) out.push_back(reorder(x, order));
    return out;
  }
  if (!v.is_object()) return v;
  std::vector<std::string> keys;
  for (const auto& kv : v.items()) keys.push_back(kv.key());
  const auto rank = [&](const std::string& k) { return size_t(std::find(order.begin(), order.end(), k) - order.begin()); };
  std::stable_sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  Json out = Json::object();
  for (const std::string& k : keys) out[k] = reorder(v[k], order);
  return out;
}

// A number nlohmann could not keep as written (an integer past 64 bits becomes a double: 1.2e+52).
bool has_rewritten_number(const Json& v) {
  if (v.is_number_float()) return v.dump().find_first_of("eE") != std::string::npos;
  if (v.is_array() || v.is_object())
    for (const Json& x : v)
      if (has_rewritten_number(x)) return true;
  return false;
}

}  // namespace

// Disabled where ctest discovers it (it needs the suite, which json_schema_suite_test.sh installs and names in
// JF_JSON_SCHEMA_SUITE: that script runs it, with --gtest_also_run_disabled_tests).
TEST(JsonSchemaSuite, DISABLED_AcceptsExactlyTheValidInstances) {
  const char* dir = std::getenv("JF_JSON_SCHEMA_SUITE");
  const char* ci = std::getenv("CI");
  if (!dir || !*dir) {
    if (ci && std::string(ci) == "true") FAIL() << "CI=true but JF_JSON_SCHEMA_SUITE is not set (run tests/json_schema_suite_test.sh)";
    GTEST_SKIP() << "JF_JSON_SCHEMA_SUITE is not set: run tests/json_schema_suite_test.sh";
  }
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::map<std::string, std::pair<int, int>> skipped;  // keyword -> groups, instances
  int groups = 0, compiled = 0, instances = 0, texts = 0, key_order_gaps = 0, number_gaps = 0, reordered = 0;
  for (const auto& path : files) {
    std::ifstream in(path);
    const Json suite = Json::parse(in);
    const std::string file = std::filesystem::relative(path, dir).string();
    int file_compiled = 0, file_skipped = 0, file_checked = 0;
    for (const Json& group : suite) {
      groups++;
      const std::string name = file + ": " + group["description"].get<std::string>();
      std::optional<Compiled> c;
      try {
        c = compile_gbnf(json_schema_to_gbnf(group["schema"]));
      } catch (const Error& e) {
        const std::string msg = e.what();
        const size_t q = msg.find("unsupported keyword '");
        if (q != std::string::npos) {
          const std::string kw = msg.substr(q + 21, msg.find('\'', q + 21) - q - 21);
          skipped[kw].first++;
          skipped[kw].second += int(group["tests"].size());
          file_skipped++;
          continue;
        }
        // Only a schema that accepts nothing may fail otherwise; then every instance must be invalid.
        ASSERT_NE(msg.find("accepts no value"), std::string::npos) << name << ": " << msg;
        for (const Json& t : group["tests"]) EXPECT_FALSE(t["valid"].get<bool>()) << name;
        continue;
      }
      compiled++, file_compiled++;
      std::vector<std::string> order;
      property_order(group["schema"], false, order);
      property_order(group["schema"], true, order);
      for (const Json& t : group["tests"]) {
        const Json& data = t["data"];
        const bool valid = t["valid"].get<bool>();
        const std::string what = name + " / " + t["description"].get<std::string>();
        const Json ordered = reorder(data, order);
        const bool number_gap = has_rewritten_number(data);
        instances++, file_checked++;
        for (int indent : {-1, 2}) {
          const std::string text = ordered.dump(indent), original = data.dump(indent);
          const bool got = c->accepts(text);
          texts++;
          if (got) {
            EXPECT_TRUE(valid) << "accepted though invalid: " << what << "\n" << text;  // never looser
          }
          if (number_gap && valid && !got) number_gaps++;
          else EXPECT_EQ(got, valid) << what << "\n" << text;
          if (original != text) {
            reordered++;
            const bool got_original = c->accepts(original);
            if (got_original) {
              EXPECT_TRUE(valid) << "accepted though invalid: " << what << "\n" << original;
            }
            if (valid && !got_original) key_order_gaps++;
          }
        }
      }
    }
    std::printf("[suite] %-34s groups compiled %2d, skipped %2d; instances checked %3d\n", file.c_str(), file_compiled, file_skipped, file_checked);
  }
  std::printf("[suite] skipped (unsupported), by the keyword named:");
  for (const auto& [kw, n] : skipped) std::printf(" %s %d groups / %d instances;", kw.c_str(), n.first, n.second);
  std::printf("\n[suite] groups %d, compiled %d; instances checked %d (%d texts, compact and pretty);"
              " texts re-ordered to the schema's key order %d, of which valid but rejected in their own order %d;"
              " valid texts with numbers nlohmann rewrote (bignums), rejected %d\n",
              groups, compiled, instances, texts, reordered, key_order_gaps, number_gaps);
  // The draft 4 suite (json-schema-test-suite 0.0.10) holds 263 instances; 180 of them are checked today (each
  // as 2 texts; pattern, multipleOf, minimum / maximum and min / maxProperties included), so that this cannot
  // pass vacuously, nor by skipping what is supported now.
  EXPECT_GE(instances, 180);
  EXPECT_GE(texts, 360);
}

// The GBNF parser names the rules it makes for groups and repetitions; a rule the text defines under such a name
// ("opt-3") was once taken for one of them and its alternatives overwritten.
TEST(JsonSchema, GbnfWrittenRuleNamesAreNotGeneratedOnes) {
  const Compiled c = compile_gbnf("opt-3 ::= \"y\"\nb ::= \"z\"\nroot ::= \"x\"? opt-3\n");
  expect_texts(c, {"xy", "y"}, {"xx", "x"});
  const Compiled g = compile_gbnf("root ::= (\"a\" | \"b\") group-1\ngroup-1 ::= \"x\"\n");
  expect_texts(g, {"ax", "bx"}, {"a", "xx"});
}
