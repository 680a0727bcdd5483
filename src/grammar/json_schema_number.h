// JSON Schema numbers -> GBNF: minimum / maximum / exclusiveMinimum / exclusiveMaximum (draft 4's boolean
// exclusive* too) and multipleOf, as exact grammars over decimal digits. Internal to the JSON Schema converter
// (grammar/json_schema.cpp).
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "grammar/json_schema_text.h"

namespace jf::json_schema_number {

// The numbers schema `s` allows, as a GBNF sequence: integers only, or every number (`fractions`); nullopt when
// no number does. Within jf's number policy (at most 20 integer and 20 fraction digits), exactly: bounds are
// compared with the decimal the schema writes (its shortest form: 0.1 is 1/10), and a bounded number, or one
// under multipleOf, is written without an exponent. multipleOf must be a positive integer whose divisibility
// automaton is small (see the .cpp). Throws jf::Error "json schema: ..." for anything else.
std::optional<std::string> numbers(const nlohmann::ordered_json& s, bool fractions, const std::string& ptr,
                                   const json_schema_text::AddRule& add);

}  // namespace jf::json_schema_number
