// What the JSON Schema tests share (test_json_schema.cpp, test_json_schema_exact.cpp): schemas compiled to a
// matcher, the error a schema gives, texts a grammar must accept and reject, a value in several layouts.
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

using namespace jf;
using Json = nlohmann::ordered_json;

namespace json_schema_test {

struct Compiled {
  std::unique_ptr<Grammar> grammar;
  std::unique_ptr<GrammarMatcher> matcher;
  bool accepts(std::string_view text) const { return matcher->accepts(text); }
};

inline Compiled compile_gbnf(const std::string& gbnf) {
  Compiled c;
  c.grammar = std::make_unique<Grammar>(Grammar::parse(gbnf));
  c.matcher = std::make_unique<GrammarMatcher>(*c.grammar);
  return c;
}

inline Compiled compile(const std::string& schema) { return compile_gbnf(json_schema_to_gbnf(Json::parse(schema))); }

// The jf::Error message the schema gives, "" when it compiles.
inline std::string error_of(const std::string& schema) {
  try {
    json_schema_to_gbnf(Json::parse(schema));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

inline void expect_texts(const Compiled& c, const std::vector<std::string>& good, const std::vector<std::string>& bad) {
  for (const std::string& t : good) EXPECT_TRUE(c.accepts(t)) << "should accept: " << t;
  for (const std::string& t : bad) EXPECT_FALSE(c.accepts(t)) << "should reject: " << t;
}

// A value both compact and pretty-printed (dump(2) and dump(4)).
inline std::vector<std::string> layouts(const std::string& json) {
  const Json v = Json::parse(json);
  return {v.dump(), v.dump(2), v.dump(4), v.dump(1, '\t')};
}

}  // namespace json_schema_test
using namespace json_schema_test;
