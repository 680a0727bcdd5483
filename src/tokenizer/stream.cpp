// Incremental detokenization that only ever hands out whole UTF-8 characters.
#include "tokenizer/internal.h"

namespace jf {

namespace {

const char* const kReplacement = "\xEF\xBF\xBD";

// Moves every complete character (and a U+FFFD for every invalid byte) from `pending` to the result; an
// unfinished tail stays pending unless `final`, when it becomes one U+FFFD.
std::string drain(std::string& pending, bool final) {
  std::string out;
  size_t i = 0;
  while (i < pending.size()) {
    int c = tok::utf8_classify(pending, i);
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
