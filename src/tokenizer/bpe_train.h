// Training of byte-level BPE vocabularies (GPT-2 alphabet, jf's pre-tokenizers) from a text corpus.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace jf {

// Where training stands; passed to BpeTrainOptions::progress.
struct BpeTrainProgress {
  enum class Stage { Count, Merge, Done };
  Stage stage = Stage::Count;
  size_t done = 0;         // Count: documents split so far; Merge/Done: merges made so far
  size_t total = 0;        // Count: documents; Merge/Done: new tokens wanted (two merges may spell one token)
  size_t words = 0;        // distinct pre-tokenized words (from Merge on)
  int64_t last_count = 0;  // frequency of the latest merged pair
  uint64_t bytes = 0;      // corpus bytes (after UTF-8 sanitising)
  uint64_t tokens = 0;     // tokens the corpus splits into with the merges so far (training segmentation)
  double seconds = 0;      // since train_bpe started
};

struct BpeTrainOptions {
  int32_t vocab_size = 4096;  // total: 256 byte tokens + merged tokens + special tokens
  std::string pre = "llama-bpe";  // pre-tokenizer name (see pretokenize.h), stored as tokenizer.ggml.pre
  int64_t min_frequency = 2;  // stop when the most frequent pair occurs fewer times than this
  // Appended after the merged tokens, in this order, as control tokens.
  std::vector<std::string> special_tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  std::string bos_token = "<|endoftext|>";  // must be one of special_tokens ("" for none)
  std::string eos_token = "<|endoftext|>";  // must be one of special_tokens ("" for none)
  bool add_bos = true;                      // tokenizer.ggml.add_bos_token of the result
  // Called while counting (every 256 documents), every 64 merges, and once at the end. May be empty.
  std::function<void(const BpeTrainProgress&)> progress;
};

// Learns merges from `documents` (any bytes; invalid UTF-8 is replaced by U+FFFD as encode() does).
// Words are split with the `pre` regexes and counted once; then the most frequent adjacent pair is merged,
// repeatedly, until the vocabulary reaches vocab_size or no pair occurs min_frequency times. Ties go to the
// pair whose merge line "left right" is bytewise smallest, so training is reproducible.
// The result: tokens 0..255 are the single bytes in GPT-2's order (its bytes_to_unicode list, i.e. by
// code point: "!" is 0), then the merged tokens in merge order, then the special tokens.
// Throws jf::Error on bad options.
VocabSpec train_bpe(const BpeTrainOptions& opts, const std::vector<std::string>& documents);
// The checks train_bpe starts with (pre name, sizes, special tokens), for callers that want to fail before
// reading a corpus. Throws jf::Error.
void validate_bpe_train_options(const BpeTrainOptions& opts);

struct CorpusStats {
  size_t files = 0;         // files read
  uint64_t bytes = 0;       // their total size
  size_t skipped_binary = 0;       // contain a NUL byte
  size_t skipped_invalid_utf8 = 0;
  size_t skipped_unreadable = 0;   // files or directories that could not be opened
  size_t skipped_budget = 0;       // would have exceeded max_bytes
};

// Reads every file whose name ends with `extension` (".py"; "" for all) under each root, walking
// directories depth-first in sorted name order (symbolic links inside the roots are not followed), so the
// result is deterministic. A root may also be a single file (read whatever its name). Files that would take
// the total past max_bytes (0: no limit) are skipped; binary, invalid UTF-8 and unreadable files are
// skipped and counted in `stats`. Throws jf::Error when a root does not exist.
std::vector<std::string> read_corpus(const std::vector<std::string>& roots, const std::string& extension, size_t max_bytes,
                                     CorpusStats* stats = nullptr);

}  // namespace jf
