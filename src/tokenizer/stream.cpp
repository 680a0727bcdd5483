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

StreamingDecoder::StreamingDecoder(const Tokenizer& tok, std::span<const int32_t> context) : StreamingDecoder(tok) {
  for (int32_t id : context)
    if (!tok.is_control(id)) first_ = false;  // the text started inside the context
  // The context's unfinished last character (byte tokens) stays pending so the new bytes complete it; its
  // bytes were the context's, so they are not handed out again.
  const std::string text = tok.decode(context);
  size_t start = text.size();
  while (start > 0 && text.size() - start < 4 && (static_cast<unsigned char>(text[start - 1]) & 0xC0) == 0x80) start--;
  if (start > 0 && (static_cast<unsigned char>(text[start - 1]) & 0xC0) == 0xC0) start--;  // a lead byte
  const std::string tail = text.substr(start);
  const size_t i = 0;
  if (!tail.empty() && tok::utf8_classify(tail, i) == 0) pending_ = context_tail_ = tail;  // incomplete, not invalid
}

std::string StreamingDecoder::take(bool final) {
  std::string out = drain(pending_, final);
  if (!context_tail_.empty() && !out.empty()) {
    // The context's unfinished character came out completed: its first bytes were the context's. (Had it
    // turned out invalid it comes out as U+FFFD, which stays: the context alone never printed it.)
    if (out.compare(0, context_tail_.size(), context_tail_) == 0) out.erase(0, context_tail_.size());
    context_tail_.clear();
  }
  return out;
}

std::string StreamingDecoder::push(int32_t id) {
  std::string piece = tok_.token_bytes(id);
  if (first_ && !tok_.is_control(id)) {
    if (!piece.empty() && piece[0] == ' ') piece.erase(0, 1);  // SentencePiece's dummy-prefix space
    first_ = false;
  }
  pending_ += piece;
  return take(false);
}

std::string StreamingDecoder::finish() { return take(true); }

}  // namespace jf
