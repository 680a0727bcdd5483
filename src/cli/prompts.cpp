#include "cli/prompts.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "base/mapped_file.h"

namespace jf::cli {

namespace {

std::string resolve_format(const std::string& path, const std::string& format_in) {
  std::string format = format_in;
  if (format == "auto") {
    const std::string lower = [&] {
      std::string s = path;
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return s;
    }();
    format = lower.find("humaneval") != std::string::npos ? "humaneval"
             : lower.find("mbpp") != std::string::npos    ? "mbpp"
             : lower.find("gsm8k") != std::string::npos   ? "gsm8k"
             : lower.ends_with(".txt")                    ? "text"
                                                          : "jsonl";
  }
  return format;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// The number starting at text[i] (digits with ',' groups and one '.'); `end` is where it stops.
std::string number_at(const std::string& text, size_t i, size_t* end) {
  std::string n;
  if (i > 0 && text[i - 1] == '-') n = "-";
  bool dot = false;
  for (; i < text.size(); i++) {
    const char c = text[i];
    if (is_digit(c)) n += c;
    else if (c == ',' && i + 1 < text.size() && is_digit(text[i + 1])) continue;
    else if (c == '.' && !dot && i + 1 < text.size() && is_digit(text[i + 1])) n += c, dot = true;
    else break;
  }
  *end = i;
  if (dot) {  // 12.50 -> 12.5, 12.0 -> 12
    while (n.back() == '0') n.pop_back();
    if (n.back() == '.') n.pop_back();
  }
  if (n == "-0") n = "0";
  return n;
}

}  // namespace

std::string normalize_number(const std::string& text) {
  size_t b = text.find_first_not_of(" \t\n$+");
  if (b == std::string::npos || !(is_digit(text[b]) || (text[b] == '-' && b + 1 < text.size() && is_digit(text[b + 1]))))
    return "";
  if (text[b] == '-') b++;
  size_t end = 0;
  std::string n = number_at(text, b, &end);
  return text.find_first_not_of(" \t\n.", end) == std::string::npos ? n : "";
}

std::string extract_answer(const std::string& text) {
  std::string lower = text;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t cue = lower.rfind("answer is");
  size_t i = cue == std::string::npos ? 0 : cue;
  std::string last;
  while (i < text.size()) {
    if (!is_digit(text[i])) {
      i++;
      continue;
    }
    size_t end = 0;
    last = number_at(text, i, &end);
    if (cue != std::string::npos) return last;
    i = end;
  }
  return last;
}

PromptSet load_prompt_set(const std::string& path, const std::string& format_in) {
  const std::string format = resolve_format(path, format_in);
  std::string field;
  if (format == "jsonl" || format == "humaneval") field = "prompt";
  else if (format == "mbpp") field = "text";
  else if (format == "gsm8k") field = "question";
  else if (format != "text") throw Error("unknown prompt format '" + format + "' (jsonl, humaneval, mbpp, gsm8k, text, auto)");

  std::istringstream in(read_text_file(path));
  PromptSet set;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    lineno++;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (format == "text") {
      set.prompts.push_back(line);
      continue;
    }
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw Error(path + ":" + std::to_string(lineno) + ": not valid JSON (" + e.what() + ")");
    }
    if (!j.is_object() || !j.contains(field) || !j[field].is_string())
      throw Error(path + ":" + std::to_string(lineno) + ": no string field '" + field + "' (use --format to pick the dataset)");
    set.prompts.push_back(j[field].get<std::string>());
    if (format != "gsm8k") continue;
    const std::string where = path + ":" + std::to_string(lineno) + ": ";
    if (!j.contains("answer") || !j["answer"].is_string()) throw Error(where + "no string field 'answer'");
    const std::string solution = j["answer"].get<std::string>();
    const size_t mark = solution.rfind("####");
    if (mark == std::string::npos) throw Error(where + "the answer has no '#### N' final answer");
    set.answers.push_back(normalize_number(solution.substr(mark + 4)));
    if (set.answers.back().empty()) throw Error(where + "the final answer after '####' is not a number");
  }
  if (set.prompts.empty()) throw Error(path + ": no prompts");
  return set;
}

std::vector<std::string> load_prompts(const std::string& path, const std::string& format) {
  return load_prompt_set(path, format).prompts;
}

}  // namespace jf::cli
