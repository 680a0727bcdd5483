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

// An assistant's call of a tool (OpenAI's tool_calls[i]): `arguments` is the text of a JSON object.
struct ChatToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", "tool" (a tool's result)
  std::string content;
  std::vector<ChatToolCall> tool_calls = {};  // an assistant's calls (chat_tools.h)
  std::string tool_call_id = {};              // a tool message: the call it answers
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
  // The JSON text of an array of OpenAI tools ({"type": "function", "function": {...}}), written into the prompt
  // as the format's template writes them (chat_tools.h); empty: no tools.
  std::string tools;
};

// Prompt text ready for encode(..., add_special=false, parse_special=true); BOS included when the format has it.
// With tools, tool calls or tool messages: render_chat_tools (chat_tools.h), which throws for a format without
// a tool syntax.
std::string render_chat(ChatFormat f, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        const Tokenizer& tok, const ChatOptions& opts = {});

}  // namespace jf
