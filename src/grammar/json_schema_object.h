// An object's members -> GBNF, in jf's key order (the named properties in schema order, required ones
// mandatory, optional ones skippable, then other keys where allowed), counted for minProperties /
// maxProperties. Internal to the JSON Schema converter (grammar/json_schema.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "grammar/json_schema_text.h"

namespace jf::json_schema_object {

struct Member {
  std::string text;  // the GBNF of `"name" ws ":" ws value ws`
  bool required;
};

// The members between an object's braces: the named ones, then any number of `extra` (the GBNF of one other
// member; none: no others), between `min` and `max` (-1: no limit) members in all, each counted as written (a
// repeated key counts twice). nullopt: no object has them. Throws jf::Error for counts past the grammar's
// limits (`ptr`: where, for the message).
std::optional<std::string> members(const std::vector<Member>& named, const std::optional<std::string>& extra, int64_t min,
                                   int64_t max, const std::string& ptr, const json_schema_text::AddRule& add);

}  // namespace jf::json_schema_object
