// Chat prompt formats (ChatML / Qwen2.5 / Qwen3, Llama-3, Llama-2, Gemma, Phi-3, Phi-4-mini, DeepSeek-R1 and its
// distills), detected from the model's chat template.
#pragma once
#include <string>
#include <vector>

namespace jf {

class Tokenizer;

enum class ChatFormat {
  None, ChatML, Llama3, Llama2, Gemma, Phi3, Phi4Mini, DeepSeekR1,
  MistralV1, MistralV3, MistralV3Tekken, MistralV7, MistralV7Tekken,  // Mistral's [INST] formats by version
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

std::string chat_format_name(ChatFormat f);
bool chat_format_from_name(const std::string& name, ChatFormat* out);
// The names chat_format_from_name takes, for help texts and errors: "chatml, llama3, ..., deepseek-r1".
std::string chat_format_names();
// From tokenizer.chat_template text (and the vocabulary's special tokens when the template is missing).
ChatFormat detect_chat_format(const Tokenizer& tok);
struct ChatOptions {
  // false: a template with an enable_thinking switch (Qwen3) opens the reply with an empty <think></think>
  // block, so the model answers without reasoning first.
  bool enable_thinking = true;
};

// Prompt text ready for encode(..., add_special=false, parse_special=true); BOS included when the format has it.
std::string render_chat(ChatFormat f, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        const Tokenizer& tok, const ChatOptions& opts = {});

}  // namespace jf
