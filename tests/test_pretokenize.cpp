// BPE pre-tokenizers by name: the families the supported architectures' files name, a hand-checked split of
// GPT-4o's regex, and an unknown name as a clear error.
#include <string>
#include <vector>

#include "base/error.h"
#include "test_support.h"
#include "tokenizer/pretokenize.h"

namespace jf {
namespace {

std::vector<std::string> split_words(const std::string& pre, const std::string& text) {
  RegexSplitter split(pre_tokenizer_regexes(pre));
  std::vector<std::pair<size_t, size_t>> words;
  split.split(text, words);
  std::vector<std::string> out;
  for (auto [b, e] : words) out.push_back(text.substr(b, e - b));
  return out;
}

// GPT-4o's split (Phi-4-mini): camel case splits, contractions stay attached, digits go by three, '/' takes a
// following newline.
TEST(PreTokenizer, Gpt4oSplit) {
  const std::vector<std::string> want = {"hello", "World", " don't", " ", "123", "45", " HTTPServer", "\n\n",
                                         " ",     " a",    "/b",     "//\n", "c"};
  EXPECT_EQ(split_words("gpt-4o", "helloWorld don't 12345 HTTPServer\n\n  a/b//\nc"), want);
  // Llama-3's split of the same words differs: no camel-case split, the contraction apart.
  const std::vector<std::string> llama = {"helloWorld", " don", "'t"};
  EXPECT_EQ(split_words("llama-bpe", "helloWorld don't"), llama);
}

TEST(PreTokenizer, NamesOfTheSupportedFamilies) {
  for (const char* pre : {"llama-bpe", "qwen2", "deepseek-r1-qwen", "smollm", "gpt-4o", "default", "gpt-2"})
    EXPECT_FALSE(pre_tokenizer_regexes(pre).empty()) << pre;
  EXPECT_EQ(pre_tokenizer_regexes("deepseek-r1-qwen"), pre_tokenizer_regexes("qwen2"));
  EXPECT_EQ(pre_tokenizer_name_for(pre_tokenizer_regexes("gpt-4o")), "gpt-4o");
  test::expect_error([] { pre_tokenizer_regexes("o300k"); }, "unknown BPE pre-tokenizer 'o300k' (supported: ");
}

// Every name's regexes compile and split a text into words that cover it, Greek extended letters and
// letter-like symbols included (deepseek-llm's table once had ranges that Unicode normalization reversed).
TEST(PreTokenizer, EveryNameCompilesAndCoversTheText) {
  const std::string text = "Hello, w\u00f6rld 12345!\n\n  \u65e5\u672c\u8a9e \u1f7d\u1fd3\u2126\u212a x";
  for (const std::string& pre : pre_tokenizer_names()) {
    std::string joined;
    for (const std::string& w : split_words(pre, text)) joined += w;
    EXPECT_EQ(joined, text) << pre;
  }
  // deepseek-llm: its "CJK" class spans U+0800-U+4E00, so the Greek extended and letter-like code points
  // become a word of their own after the letter class took them with the "a" (as in llama.cpp, tested
  // against it in tests/llamacpp).
  const std::vector<std::string> want = {"a", "\u1f7d\u1fd3\u2126\u212a", " b"};
  EXPECT_EQ(split_words("deepseek-llm", "a\u1f7d\u1fd3\u2126\u212a b"), want);
}

}  // namespace
}  // namespace jf
