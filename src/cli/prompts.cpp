#include "cli/prompts.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "base/mapped_file.h"

namespace jf::cli {

std::vector<std::string> load_prompts(const std::string& path, const std::string& format_in) {
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
  std::string field;
  if (format == "jsonl" || format == "humaneval") field = "prompt";
  else if (format == "mbpp") field = "text";
  else if (format == "gsm8k") field = "question";
  else if (format != "text") throw Error("unknown prompt format '" + format + "' (jsonl, humaneval, mbpp, gsm8k, text, auto)");

  std::istringstream in(read_text_file(path));
  std::vector<std::string> prompts;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    lineno++;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (format == "text") {
      prompts.push_back(line);
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
    prompts.push_back(j[field].get<std::string>());
  }
  if (prompts.empty()) throw Error(path + ": no prompts");
  return prompts;
}

}  // namespace jf::cli
