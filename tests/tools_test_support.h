// What the tool tests share: a small vocabulary with chat special tokens, tools, calls and results.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace jf::tools_test {

// A small vocabulary with the special tokens of ChatML and Llama 3.
inline VocabSpec chat_vocab(const std::string& chat_template) {
  VocabSpec s;
  s.kind = VocabKind::Spm;
  s.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>",
              "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
  s.types = {TokenKind::Unknown, TokenKind::Control, TokenKind::Control, TokenKind::Normal, TokenKind::Control,
             TokenKind::Control, TokenKind::Control, TokenKind::Control, TokenKind::Control, TokenKind::Control};
  s.unk = 0, s.bos = 1, s.eos = 2;
  s.chat_template = chat_template;
  return s;
}

inline const char* const kTools =
    R"([{"type": "function", "function": {"name": "get_weather", "description": "Météo d'une ville", "parameters":)"
    R"( {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},)"
    R"( "required": ["city"]}}}, {"type": "function", "function": {"name": "now", "parameters": {"type": "object",)"
    R"( "properties": {}}}}])";
inline const char* const kNowTool = R"([{"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}])";

inline ChatMessage assistant_calls(std::string content, std::vector<ChatToolCall> calls) {
  return {"assistant", std::move(content), std::move(calls)};
}
inline ChatMessage tool_result(std::string id, std::string content) { return {"tool", std::move(content), {}, std::move(id)}; }

}  // namespace jf::tools_test
