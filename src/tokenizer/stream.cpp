// Incremental detokenization that only ever hands out whole UTF-8 characters.
#include "tokenizer/internal.h"

namespace jf {

namespace {

const char* const kReplacement = "\xEF\xBF\xBD";

// Classifies the bytes at s[i]: returns the length of a complete valid character, 0 when the bytes are a
// valid but unfinished prefix (more bytes may complete it), or -1 when s[i] cannot start a valid character.
int classify(const std::string& s, size_t i) {
  auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return 1;
  int n = 0;
  unsigned lo = 0x80, hi = 0xBF;
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
    auto b = static_cast<unsigned char>(s[i + k]);
    unsigned l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (b < l || b > h) return -1;
  }
  return n;
}

// Moves every complete character (and a U+FFFD for every invalid byte) from `pending` to the result; an
// unfinished tail stays pending unless `final`, when it becomes one U+FFFD.
std::string drain(std::string& pending, bool final) {
  std::string out;
  size_t i = 0;
  while (i < pending.size()) {
    int c = classify(pending, i);
    if (c > 0) {
      out.append(pending, i, static_cast<size_t>(c));
      i += static_cast<size_t>(c);
    } else if (c < 0) {
      out += kReplacement;
      i += 1;
    } else if (final) {
      out += kReplacement;
      i = pending.size();
    } else {
      break;
    }
  }
  pending.erase(0, i);
  return out;
}

}  // namespace

StreamingDecoder::StreamingDecoder(const Tokenizer& tok) : tok_(tok) {
  first_ = tok.spec().kind == VocabKind::Spm && tok.spec().add_space_prefix;
}

std::string StreamingDecoder::push(int32_t id) {
  std::string piece = tok_.token_bytes(id);
  if (first_ && !tok_.is_control(id)) {
    if (!piece.empty() && piece[0] == ' ') piece.erase(0, 1);  // SentencePiece's dummy-prefix space
    first_ = false;
  }
  pending_ += piece;
  return drain(pending_, false);
}

std::string StreamingDecoder::finish() { return drain(pending_, true); }

}  // namespace jf
