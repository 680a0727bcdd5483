// Byte-level BPE pre-tokenization: the regex lists llama.cpp uses per tokenizer.ggml.pre name, run with PCRE2.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jf {

// A sequence of regexes: the first splits the text into matches and the gaps between them, each later one
// splits every fragment the previous produced (llama.cpp's unicode_regex_split). Immutable and thread-safe.
class RegexSplitter {
 public:
  explicit RegexSplitter(const std::vector<std::string>& regexes);  // throws jf::Error on a bad pattern
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // `text` must be valid UTF-8. Appends [begin, end) byte ranges of the words, in order, covering all of it.
  void split(std::string_view text, std::vector<std::pair<size_t, size_t>>& words) const;

 private:
  struct Compiled;
  std::vector<std::unique_ptr<Compiled>> res_;
};

// Regexes for a tokenizer.ggml.pre name; throws jf::Error naming the supported values when unknown.
std::vector<std::string> pre_tokenizer_regexes(const std::string& pre);
// Every name pre_tokenizer_regexes knows, sorted.
std::vector<std::string> pre_tokenizer_names();
// llama.cpp's per-name flags: take a pre-tokenized word whole when it is a token (Llama-3) / add BOS by default.
bool pre_tokenizer_ignores_merges(const std::string& pre);
bool pre_tokenizer_adds_bos(const std::string& pre);
// The pre name whose regex list equals `regexes` (used to name tokenizer.json pre-tokenizers), or "".
std::string pre_tokenizer_name_for(const std::vector<std::string>& regexes);
// The GPT-2 regex as Hugging Face's ByteLevel pre-tokenizer spells it.
extern const char* const kByteLevelRegex;

}  // namespace jf
