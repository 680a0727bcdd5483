// Pieces of the chat formats shared by chat.cpp and chat_tools.cpp (not part of the public API).
#pragma once
#include <cstdint>
#include <ctime>
#include <string>

namespace jf {

class Tokenizer;

namespace chat_detail {

// Qwen2.5's default system message, written when a conversation has none (if the template has it).
extern const char* const kQwenSystem;

std::string trim(const std::string& s);
// The token's text, or `fallback` when the vocabulary has no such token (id < 0).
std::string special_text(const Tokenizer& tok, int32_t id, const char* fallback);
// An assistant message as Qwen3's template writes it (chat.cpp).
std::string qwen3_answer(const std::string& content, bool after_last_query, bool last);
// Llama 3.1 / 3.2's opening system turn, dated; `ipython`: with "Environment: ipython" (tools).
std::string llama3_dated_system(const std::string& tmpl, const std::string& system, std::time_t now, bool ipython = false);

}  // namespace chat_detail
}  // namespace jf
