// UTF-8 decoding/validation and the GPT-2 byte-to-unicode table that byte-level BPE vocabularies are spelled in.
#include <array>

#include "tokenizer/internal.h"

namespace jf::tok {

const char* const kSpace = "\xE2\x96\x81";

size_t utf8_len(unsigned char lead) {
  static const size_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lookup[lead >> 4];
}

int utf8_classify(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  int n = 0;
  unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte (excludes overlongs and surrogates)
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return -1;
  }
  for (int k = 1; k < n; k++) {
    if (i + k >= s.size()) return 0;
    const auto b = static_cast<unsigned char>(s[i + k]);
    const unsigned l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) return -1;
  }
  return n;
}

bool utf8_next(std::string_view s, size_t& i, uint32_t& cp) {
  const int n = utf8_classify(s, i);
  if (n <= 0) {  // invalid, or a character cut off by the end of the string
    i += 1;
    return false;
  }
  const auto at = [&](size_t k) -> unsigned { return static_cast<unsigned char>(s[k]); };
  uint32_t v = n == 1 ? at(i) : at(i) & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (int k = 1; k < n; k++) v = (v << 6) | (at(i + k) & 0x3F);
  cp = v;
  i += static_cast<size_t>(n);
  return true;
}

void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool utf8_valid(std::string_view s) {
  size_t i = 0;
  uint32_t cp;
  while (i < s.size()) {
    if (!utf8_next(s, i, cp)) return false;
  }
  return true;
}

std::string utf8_sanitize(std::string_view s) {
  if (utf8_valid(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    uint32_t cp;
    if (utf8_next(s, i, cp)) {
      out.append(s.substr(start, i - start));
    } else {
      out += "\xEF\xBF\xBD";
    }
  }
  return out;
}

namespace {

struct ByteTables {
  std::array<std::string, 256> to_unicode;
  std::array<int, 324> to_byte;  // mapped code points are all below 324
  ByteTables() {
    to_byte.fill(-1);
    auto printable = [](int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    int n = 0;
    for (int b = 0; b < 256; b++) {
      uint32_t cp = printable(b) ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + n++);
      utf8_append(to_unicode[b], cp);
      to_byte[cp] = b;
    }
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return tables().to_unicode[b]; }

int unicode_to_byte(uint32_t cp) { return cp < tables().to_byte.size() ? tables().to_byte[cp] : -1; }

}  // namespace jf::tok
