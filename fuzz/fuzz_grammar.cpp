// libFuzzer target: any bytes as GBNF text, and as a JSON schema. Either a clear jf::Error or a grammar that
// matches text without crashing (run by scripts/fuzz.sh; tests/test_grammar.cpp runs a seeded mutation pass
// of the same checks in every test run).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const jf::Grammar g = jf::Grammar::parse(text);
    jf::GrammarMatcher m(g);
    m.accepts(text);
    m.forced_text(m.start());
  } catch (const jf::Error&) {
  }
  try {
    const auto schema = nlohmann::ordered_json::parse(text, nullptr, false);
    if (!schema.is_discarded()) jf::Grammar::parse(jf::json_schema_to_gbnf(schema));
  } catch (const jf::Error&) {
  }
  return 0;
}
