// Text <-> token ids for SentencePiece-style vocabularies (scores + byte fallback) and byte-level BPE
// vocabularies (merges + pre-tokenizer regexes), loaded from GGUF metadata, a llama2.c tokenizer.bin or a
// Hugging Face tokenizer.json. Thread-safety: a Tokenizer is immutable after construction; all const
// methods may be called concurrently.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jf {

class GgufMetadata;

enum class VocabKind { Spm, Bpe };

// GGUF token_type values.
enum class TokenKind : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// Everything a tokenizer needs, independent of the file it came from.
struct VocabSpec {
  VocabKind kind = VocabKind::Spm;
  std::string pre = "default";          // pre-tokenizer name (GGUF tokenizer.ggml.pre) for BPE
  std::vector<std::string> pre_regexes; // explicit split regexes (tokenizer.json); overrides `pre` when set
  std::vector<std::string> tokens;
  std::vector<float> scores;            // SPM merge priorities (may be empty for BPE)
  std::vector<TokenKind> types;
  std::vector<std::string> merges;      // BPE merges "left right", highest priority first
  int32_t bos = -1, eos = -1, unk = -1, pad = -1;
  std::vector<int32_t> eog;             // further end-of-generation ids (e.g. <|im_end|>, <|eot_id|>)
  std::vector<int32_t> rstrip;          // special tokens that swallow the whitespace after them in a text
  bool add_bos = true;
  bool add_eos = false;
  bool add_space_prefix = true;         // SPM: prepend a space (the "dummy prefix") before encoding
  std::string chat_template;            // Jinja source as found in the model (may be empty)
};

class Tokenizer {
 public:
  explicit Tokenizer(VocabSpec spec);  // validates and builds lookup tables; throws jf::Error
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  static std::unique_ptr<Tokenizer> from_gguf(const GgufMetadata& meta);
  // llama2.c tokenizer.bin; vocab_size comes from the checkpoint header.
  static std::unique_ptr<Tokenizer> from_llama2c(const std::string& path, int32_t vocab_size);
  // Hugging Face directory: tokenizer.json (+ tokenizer_config.json for chat template / special tokens).
  static std::unique_ptr<Tokenizer> from_hf(const std::string& dir);
  // `tok` (may be null) for a model of n_vocab ids: the ids it lacks become unused "[PAD<id>]" tokens (decoded
  // as nothing), as the reference converter names the rows a model's embedding has beyond its tokenizer
  // (Qwen2, Gemma 3); more tokens than the model has is an error.
  static std::unique_ptr<Tokenizer> padded(std::unique_ptr<Tokenizer> tok, int32_t n_vocab);
  // Writes the tokenizer.ggml.* keys (and tokenizer.chat_template) so a converted model keeps its vocabulary.
  void to_gguf(GgufMetadata& meta) const;

  // add_special: add BOS/EOS as the vocabulary asks. parse_special: text like "<|im_start|>" becomes the
  // control token instead of being spelled out.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // Raw bytes a token stands for ("\xe2\x96\x81" becomes ' ', byte tokens become their byte, BPE's
  // byte-to-unicode mapping is undone). Control tokens give "" unless render_special.
  std::string token_bytes(int32_t id, bool render_special = false) const;
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

  const std::string& token_text(int32_t id) const;  // the vocabulary string
  int32_t n_vocab() const;
  int32_t bos() const;
  int32_t eos() const;
  bool is_eog(int32_t id) const;      // eos or any of spec().eog
  std::vector<int32_t> eog_ids() const;  // every id is_eog() accepts, ascending (a generation's stop set)
  bool is_control(int32_t id) const;
  const VocabSpec& spec() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Cuts text into consecutive pieces of at most max_bytes (> 0) that concatenate to it: each piece ends after
// its last newline when it has one, else before a UTF-8 character starts, so no character is split. For
// encoding large texts piece by piece (the encoders hold tens of bytes of working memory per byte).
std::vector<std::string_view> text_pieces(std::string_view text, size_t max_bytes);

// The text with every invalid UTF-8 sequence replaced by U+FFFD, as the encoders read it. A model's raw bytes
// (byte-level tokens that end inside a character) become text that every file reader here accepts.
std::string valid_utf8(std::string_view text);

// Incremental detokenizer: returns text only at UTF-8 character boundaries, so a character spanning
// several tokens is never printed broken. Without context it decodes a text from its start (SentencePiece
// drops the dummy-prefix space of the first token). Given the tokens already in the context (a prompt), it
// hands out exactly what the new tokens add: decode(context + new) minus decode(context), so the space in
// front of a continuation's first word is kept ("Max." + " Max"), and a character the context left
// unfinished is completed by the new bytes. For `jf generate` and any server streaming completions.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tok);
  StreamingDecoder(const Tokenizer& tok, std::span<const int32_t> context);
  std::string push(int32_t id);  // complete text available after this token (may be "")
  std::string finish();          // whatever is pending (invalid UTF-8 replaced by U+FFFD)

 private:
  std::string take(bool final);

  const Tokenizer& tok_;
  std::string pending_;
  std::string context_tail_;  // the context's unfinished last character, printed by the context's own decode
  bool first_ = true;
};

}  // namespace jf
