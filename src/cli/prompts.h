// Prompt sets for `jf bench`: JSONL files with a `prompt` field, or the shared datasets' own fields.
#pragma once
#include <string>
#include <vector>

namespace jf::cli {

// format: "jsonl" (field `prompt`), "humaneval" (`prompt`), "mbpp" (`text`), "gsm8k" (`question`),
// "text" (one prompt per non-empty line), or "auto" (from the file name). Throws jf::Error with the line
// number for malformed input.
std::vector<std::string> load_prompts(const std::string& path, const std::string& format);

}  // namespace jf::cli
