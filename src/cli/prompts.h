// Prompt sets for `jf bench`: JSONL files with a `prompt` field, or the shared datasets' own fields.
#pragma once
#include <string>
#include <vector>

namespace jf::cli {

// format: "jsonl" (field `prompt`), "humaneval" (`prompt`), "mbpp" (`text`), "gsm8k" (`question`),
// "text" (one prompt per non-empty line), or "auto" (from the file name). Throws jf::Error with the line
// number for malformed input.
std::vector<std::string> load_prompts(const std::string& path, const std::string& format);

// Prompts with their reference answers where the format has them: gsm8k's `answer` field holds the
// worked solution and, after its last "####", the final answer (kept here, normalised). `answers` is empty
// for formats without answers.
struct PromptSet {
  std::vector<std::string> prompts;
  std::vector<std::string> answers;
};
PromptSet load_prompt_set(const std::string& path, const std::string& format);

// The final answer a model's output states, as GSM8K evaluations read it: the first number after the last
// "answer is" (any case) when the text has one, else the last number in the text; commas, a leading '+',
// '$' and trailing zeros after a decimal point dropped. Empty when the text has no number.
std::string extract_answer(const std::string& text);
// The same normalisation of a reference answer ("1,234.50" -> "1234.5"); empty when it is not a number.
std::string normalize_number(const std::string& text);

}  // namespace jf::cli
