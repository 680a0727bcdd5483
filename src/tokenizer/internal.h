// Private state of jf::Tokenizer shared by the tokenizer's source files (not part of the public API).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace jf {

class RegexSplitter;  // pretokenize.h

namespace tok {

// Hash map keyed by std::string that can be probed with a std::string_view without allocating.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

// ---- UTF-8 helpers (unicode.cpp) ----
// Length of the UTF-8 sequence announced by a lead byte (1 for stray continuation bytes), as llama.cpp counts.
size_t utf8_len(unsigned char lead);
// utf8_classify, utf8_next, utf8_append: tokenizer/utf8.h.
// Replaces every malformed byte with U+FFFD (what llama.cpp's BPE path does before splitting).
std::string utf8_sanitize(std::string_view s);
bool utf8_valid(std::string_view s);

// GPT-2 byte <-> unicode mapping used by byte-level BPE vocabularies.
const std::string& byte_to_unicode(uint8_t b);  // UTF-8 of the code point standing for byte b
int unicode_to_byte(uint32_t cp);               // -1 when cp stands for no byte

extern const char* const kSpace;  // U+2581 "▁", SentencePiece's escaped space

// A piece of text in the doubly linked list both BPE variants merge over.
struct Symbol {
  int prev, next;   // neighbours (-1 at the ends)
  size_t start, n;  // byte span; n == 0 once merged into its left neighbour
  int32_t id = -1;  // token of the span when known (byte-level BPE), -1 otherwise
};

// Merges syms[left] with the symbol after it (which must exist) and relinks the list.
inline void absorb_next(std::vector<Symbol>& syms, int left) {
  Symbol& l = syms[left];
  Symbol& r = syms[l.next];
  l.n += r.n;
  r.n = 0;
  l.next = r.next;
  if (l.next >= 0) syms[l.next].prev = left;
}

}  // namespace tok

struct Tokenizer::Impl {
  VocabSpec spec;
  tok::TokenMap token_to_id;

  // Tokens matched literally before model tokenization, longest first: user-defined ones always,
  // control/unknown ones only with parse_special.
  std::vector<int32_t> special_sorted;
  std::vector<bool> rstrip;  // per token: whitespace after it in a text is dropped (spec.rstrip)

  // SPM: byte fallback ids ("<0xXX>", else the single-byte token), -1 when absent.
  int32_t byte_ids[256];

  // BPE: (left id, right id) -> (rank, merged id or -1).
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  std::unordered_map<uint64_t, Merge> merges;
  int32_t bytelevel_ids[256];  // token of the mapped character for each raw byte, -1 when absent
  bool ignore_merges = false;  // a pre-tokenized word that is itself a token is taken whole (Llama-3)
  std::unique_ptr<RegexSplitter> splitter;

  // Decoded bytes of every token (control/unknown ones hold their text; render_special decides).
  std::vector<std::string> pieces;

  void encode_spm(std::string_view text, std::vector<int32_t>& out) const;
  void encode_bpe(std::string_view text, std::vector<int32_t>& out) const;
  int32_t find(std::string_view text) const {
    auto it = token_to_id.find(text);
    return it == token_to_id.end() ? -1 : it->second;
  }
};

// Shared by the loaders: llama.cpp's name-based end-of-generation detection (<|eot_id|>, <|im_end|>, ...).
// Marks such tokens as control, and adds them to spec.eog.
void detect_eog_tokens(VocabSpec& spec);
// Phi-3 files (general.name containing "phi-3" / "phi3", any case): whitespace after their special tokens
// is dropped, as llama.cpp does for files of that name.
bool phi3_by_name(std::string name);
void strip_after_phi3_specials(VocabSpec& spec);

}  // namespace jf
