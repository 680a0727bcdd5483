// UTF-8 helpers (unicode.cpp), for the tokenizer and the layers above it (grammars match code points).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace jf::tok {

// Length of the complete valid character at s[i], 0 for a valid but unfinished prefix (the string ends
// first), -1 when s[i] cannot start a valid character.
int utf8_classify(std::string_view s, size_t i);
// Decodes one code point at s[i]; on malformed input returns false and consumes one byte.
bool utf8_next(std::string_view s, size_t& i, uint32_t& cp);
void utf8_append(std::string& out, uint32_t cp);

}  // namespace jf::tok
