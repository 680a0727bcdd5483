// Chat prompt formats: detection from the model's chat template / vocabulary, and rendering of messages.
#include "tokenizer/chat.h"

#include <algorithm>
#include <ctime>

#include "base/error.h"
#include "tokenizer/chat_internal.h"
#include "tokenizer/chat_tools.h"
#include "tokenizer/tokenizer.h"

namespace jf {

namespace {

// True when `text` is a single (special) token of the vocabulary.
bool has_token(const Tokenizer& tok, const std::string& text) {
  std::vector<int32_t> ids = tok.encode(text, false, true);
  return ids.size() == 1 && tok.token_text(ids[0]) == text;
}

// An answer without its reasoning: what follows the last "</think>" (all of it when there is none).
std::string after_reasoning(const std::string& answer) {
  const size_t end = answer.rfind("</think>");
  return end == std::string::npos ? answer : answer.substr(end + 8);
}

std::string strip_newlines(std::string s, bool front, bool back) {
  if (front) s.erase(0, std::min(s.size(), s.find_first_not_of('\n')));
  if (back) s.erase(s.find_last_not_of('\n') + 1);
  return s;
}

// The string literal that follows `key` in a Jinja template (up to its closing quote or a "\n" escape), or
// `fallback` when the template does not have it.
std::string literal_after(const std::string& tmpl, const std::string& key, const std::string& fallback) {
  const size_t at = tmpl.find(key);
  if (at == std::string::npos) return fallback;
  const size_t b = at + key.size();
  const size_t e = tmpl.find_first_of("\"'\\", b);
  return e == std::string::npos ? fallback : tmpl.substr(b, e - b);
}

}  // namespace

namespace chat_detail {

const char* const kQwenSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

std::string trim(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::string special_text(const Tokenizer& tok, int32_t id, const char* fallback) {
  return id >= 0 ? tok.token_text(id) : std::string(fallback);
}

// Reasoning (between <think> and the first </think>) and answer (after the last </think>) split; before the
// last user message only the answer is kept.
std::string qwen3_answer(const std::string& content, bool after_last_query, bool last) {
  std::string answer = content, reasoning;
  const size_t close = content.find("</think>");
  if (close != std::string::npos) {
    reasoning = strip_newlines(content.substr(0, close), false, true);
    const size_t open = reasoning.rfind("<think>");
    if (open != std::string::npos) reasoning = reasoning.substr(open + 7);
    reasoning = strip_newlines(reasoning, true, false);
    answer = strip_newlines(after_reasoning(content), true, false);
  }
  if (after_last_query && (last || !reasoning.empty()))
    return "<think>\n" + strip_newlines(reasoning, true, true) + "\n</think>\n\n" + strip_newlines(answer, true, false);
  return answer;
}

// Llama 3.1 / 3.2 templates open every prompt with a system turn that dates the model's knowledge and the
// conversation ("Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"), then the system
// message. 3.1 has a fixed date_string; 3.2 asks strftime_now, which llama.cpp answers with today's date.
std::string llama3_dated_system(const std::string& tmpl, const std::string& system, std::time_t now, bool ipython) {
  const std::string knowledge = literal_after(tmpl, "Cutting Knowledge Date: ", "December 2023");
  std::string today = literal_after(tmpl, "set date_string = \"", "26 Jul 2024");
  if (tmpl.find("strftime_now") != std::string::npos) {
    char b[32];
    std::tm local{};
    localtime_r(&now, &local);
    std::strftime(b, sizeof b, "%d %b %Y", &local);
    today = b;
  }
  return std::string("<|start_header_id|>system<|end_header_id|>\n\n") + (ipython ? "Environment: ipython\n" : "") +
         "Cutting Knowledge Date: " + knowledge + "\nToday Date: " + today + "\n\n" + trim(system) + "<|eot_id|>";
}

}  // namespace chat_detail

using namespace chat_detail;

std::string chat_format_name(ChatFormat f) {
  switch (f) {
    case ChatFormat::ChatML: return "chatml";
    case ChatFormat::Llama3: return "llama3";
    case ChatFormat::Llama2: return "llama2";
    case ChatFormat::Gemma: return "gemma";
    case ChatFormat::Phi3: return "phi3";
    case ChatFormat::Phi4Mini: return "phi4-mini";
    case ChatFormat::DeepSeekR1: return "deepseek-r1";
    case ChatFormat::MistralV1: return "mistral-v1";
    case ChatFormat::MistralV3: return "mistral-v3";
    case ChatFormat::MistralV3Tekken: return "mistral-v3-tekken";
    case ChatFormat::MistralV7: return "mistral-v7";
    case ChatFormat::MistralV7Tekken: return "mistral-v7-tekken";
    case ChatFormat::None: break;
  }
  return "none";
}

namespace {

constexpr ChatFormat kNamedFormats[] = {
    ChatFormat::ChatML,    ChatFormat::Llama3,    ChatFormat::Llama2,          ChatFormat::Gemma,
    ChatFormat::Phi3,      ChatFormat::Phi4Mini,  ChatFormat::DeepSeekR1,      ChatFormat::MistralV1,
    ChatFormat::MistralV3, ChatFormat::MistralV3Tekken, ChatFormat::MistralV7, ChatFormat::MistralV7Tekken};

// Mistral's [INST] formats differ in their spaces and in where the system message goes (tested against
// llama.cpp's renderings in tests/llamacpp):
//   v1:  BOS [INST] {system}\n\n{user} [/INST] {answer}</s> [INST] ...   (a space before each [INST])
//   v3:  BOS[INST] {system}\n\n{user}[/INST] {answer}</s>[INST] ...
//   v7:  BOS[SYSTEM_PROMPT] {system}[/SYSTEM_PROMPT][INST] {user}[/INST] {answer}</s>...
//   the Tekken variants of v3 / v7: no space after the opening tags or before an answer.
std::string render_mistral(ChatFormat f, const std::vector<ChatMessage>& messages, const std::string& bos) {
  const bool v1 = f == ChatFormat::MistralV1;
  const bool v7 = f == ChatFormat::MistralV7 || f == ChatFormat::MistralV7Tekken;
  const bool tekken = f == ChatFormat::MistralV3Tekken || f == ChatFormat::MistralV7Tekken;
  const std::string gap = tekken ? "" : " ";
  std::string out = bos;
  std::string system;
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      if (v7) {
        out += "[SYSTEM_PROMPT]" + gap + m.content + "[/SYSTEM_PROMPT]";
      } else {
        system = m.content;
      }
    } else if (m.role == "assistant") {
      out += gap + m.content + "</s>";
    } else {
      const std::string content = system.empty() ? m.content : system + "\n\n" + m.content;
      system.clear();
      out += (v1 ? " [INST] " : "[INST]" + gap) + content + (v1 ? " [/INST]" : "[/INST]");
    }
  }
  return out;  // ends with "[/INST]" when the last message is the user's: the answer follows
}

}  // namespace

bool chat_format_from_name(const std::string& name, ChatFormat* out) {
  for (ChatFormat f : kNamedFormats) {
    if (name == chat_format_name(f)) {
      if (out) *out = f;
      return true;
    }
  }
  if (name == chat_format_name(ChatFormat::None)) {
    if (out) *out = ChatFormat::None;
    return true;
  }
  return false;
}

std::string chat_format_names() {
  std::string s;
  for (ChatFormat f : kNamedFormats) s += (s.empty() ? "" : ", ") + chat_format_name(f);
  return s;
}

ChatFormat detect_chat_format(const Tokenizer& tok) {
  const std::string& t = tok.spec().chat_template;
  if (t.find("<|im_start|>") != std::string::npos) return ChatFormat::ChatML;
  if (t.find("<|start_header_id|>") != std::string::npos) return ChatFormat::Llama3;
  if (t.find("<start_of_turn>") != std::string::npos) return ChatFormat::Gemma;
  if (t.find("<|user|>") != std::string::npos && t.find("<|end|>") != std::string::npos) return ChatFormat::Phi3;
  // Phi-4-mini's template builds the role tag from the role and puts the content right after it.
  if (t.find("'|>' + message['content']") != std::string::npos && t.find("<|end|>") != std::string::npos)
    return ChatFormat::Phi4Mini;
  if (t.find("[INST]") != std::string::npos) {
    // Mistral's official templates: v7 has a system-prompt tag (tekken, Mistral-Small-3.1's: no space after
    // [INST]); v1 / v3 / v3-tekken join the system message to the first user turn or list tools, and differ in
    // the spaces around [INST].
    if (t.find("[SYSTEM_PROMPT]") != std::string::npos)
      return t.find("[INST] '") != std::string::npos || t.find("[INST] \"") != std::string::npos ? ChatFormat::MistralV7
                                                                                                : ChatFormat::MistralV7Tekken;
    if (t.find("' [INST] ' + system_message") != std::string::npos || t.find("[AVAILABLE_TOOLS]") != std::string::npos) {
      if (t.find(" [INST]") != std::string::npos) return ChatFormat::MistralV1;
      if (t.find("\"[INST]\"") != std::string::npos) return ChatFormat::MistralV3Tekken;
      return ChatFormat::MistralV3;
    }
    return ChatFormat::Llama2;
  }
  if (t.find("<｜User｜>") != std::string::npos) return ChatFormat::DeepSeekR1;  // before the vocabulary's ChatML tokens
  // No (recognised) template: go by the special tokens the vocabulary has.
  if (has_token(tok, "<｜User｜>") && has_token(tok, "<｜Assistant｜>")) return ChatFormat::DeepSeekR1;
  if (has_token(tok, "<|im_start|>") && has_token(tok, "<|im_end|>")) return ChatFormat::ChatML;
  if (has_token(tok, "<|start_header_id|>") && has_token(tok, "<|eot_id|>")) return ChatFormat::Llama3;
  if (has_token(tok, "<start_of_turn>") && has_token(tok, "<end_of_turn>")) return ChatFormat::Gemma;
  if (has_token(tok, "<|user|>") && has_token(tok, "<|assistant|>") && has_token(tok, "<|end|>")) return ChatFormat::Phi3;
  return ChatFormat::None;
}

std::string render_chat(ChatFormat f, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                        const Tokenizer& tok, const ChatOptions& opts) {
  if (!opts.tools.empty() || has_tool_turns(messages)) return render_chat_tools(f, messages, add_generation_prompt, tok, opts);
  const VocabSpec& spec = tok.spec();
  std::string out;
  switch (f) {
    case ChatFormat::ChatML: {
      if (spec.add_bos && spec.bos >= 0) out += tok.token_text(spec.bos);
      bool has_system = !messages.empty() && messages[0].role == "system";
      if (!has_system && spec.chat_template.find(kQwenSystem) != std::string::npos)
        out += std::string("<|im_start|>system\n") + kQwenSystem + "<|im_end|>\n";
      // Qwen3's template drops the reasoning of answers given before the last user message (and writes the
      // ones after it as <think>\n...\n</think>\n\n + answer).
      const bool qwen3 = spec.chat_template.find("last_query_index") != std::string::npos;
      size_t last_query = messages.empty() ? 0 : messages.size() - 1;
      for (size_t i = 0; i < messages.size(); i++)
        if (messages[i].role == "user") last_query = i;
      for (size_t i = 0; i < messages.size(); i++) {
        const ChatMessage& m = messages[i];
        out += "<|im_start|>" + m.role + "\n";
        if (qwen3 && m.role == "assistant")
          out += qwen3_answer(m.content, i > last_query, i + 1 == messages.size());
        else
          out += m.content;
        out += "<|im_end|>\n";
      }
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      if (add_generation_prompt && !opts.enable_thinking && spec.chat_template.find("enable_thinking") != std::string::npos)
        out += "<think>\n\n</think>\n\n";
      return out;
    }
    case ChatFormat::Llama3: {
      out += special_text(tok, spec.bos, "<|begin_of_text|>");
      size_t first = 0;
      if (spec.chat_template.find("Cutting Knowledge Date: ") != std::string::npos) {
        const bool has_system = !messages.empty() && messages[0].role == "system";
        out += llama3_dated_system(spec.chat_template, has_system ? messages[0].content : "", std::time(nullptr));
        first = has_system ? 1 : 0;
      }
      for (size_t i = first; i < messages.size(); i++)
        out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" + trim(messages[i].content) + "<|eot_id|>";
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    }
    case ChatFormat::Llama2: {
      // Meta's format: <s>[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {answer} </s><s>[INST] ...
      const std::string bos = special_text(tok, spec.bos, "<s>");
      const std::string eos = special_text(tok, spec.eos, "</s>");
      std::string system;
      for (const ChatMessage& m : messages) {
        if (m.role == "system") {
          if (!system.empty()) system += '\n';
          system += m.content;
        } else if (m.role == "assistant") {
          out += ' ';
          out += trim(m.content);
          out += ' ';
          out += eos;
        } else {
          std::string content = m.content;
          if (!system.empty()) content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
          system.clear();
          out += bos + "[INST] " + trim(content) + " [/INST]";
        }
      }
      return out;  // the prompt already ends with "[/INST]" when the last message is the user's
    }
    case ChatFormat::Gemma: {
      // <start_of_turn>user\n...<end_of_turn>\n, the assistant's role named "model"; Gemma has no system turn:
      // the system text opens the first user turn, followed by a blank line (Gemma 3's template).
      out += special_text(tok, spec.bos, "<bos>");
      std::string system;
      for (const ChatMessage& m : messages) {
        if (m.role == "system") {
          if (!system.empty()) system += '\n';
          system += trim(m.content);
          continue;
        }
        const bool user = m.role != "assistant";
        std::string content = trim(m.content);
        if (user && !system.empty()) content = system + "\n\n" + content, system.clear();
        out += std::string("<start_of_turn>") + (user ? "user" : "model") + "\n" + content + "<end_of_turn>\n";
      }
      if (add_generation_prompt) out += "<start_of_turn>model\n";
      return out;
    }
    case ChatFormat::Phi3: {
      // <|role|>\n...<|end|>\n per message (Phi-3 / 3.5-mini's template).
      if (spec.add_bos && spec.bos >= 0) out += tok.token_text(spec.bos);
      for (const ChatMessage& m : messages) out += "<|" + m.role + "|>\n" + m.content + "<|end|>\n";
      if (add_generation_prompt) out += "<|assistant|>\n";
      return out;
    }
    case ChatFormat::Phi4Mini: {
      // Phi-3's tags without the newlines: <|role|>...<|end|> per message.
      if (spec.add_bos && spec.bos >= 0) out += tok.token_text(spec.bos);
      for (const ChatMessage& m : messages) out += "<|" + m.role + "|>" + m.content + "<|end|>";
      if (add_generation_prompt) out += "<|assistant|>";
      return out;
    }
    case ChatFormat::DeepSeekR1: {
      // BOS, the (last) system message as plain text, <｜User｜>message, <｜Assistant｜>answer<｜end▁of▁sentence｜>
      // with an answer's reasoning (up to </think>) left out; newer templates open the reply with "<think>\n".
      out += special_text(tok, spec.bos, "<｜begin▁of▁sentence｜>");
      std::string system;
      for (const ChatMessage& m : messages)
        if (m.role == "system") system = m.content;
      out += system;
      for (const ChatMessage& m : messages) {
        if (m.role == "user") out += "<｜User｜>" + m.content;
        if (m.role == "assistant") out += "<｜Assistant｜>" + after_reasoning(m.content) + "<｜end▁of▁sentence｜>";
      }
      if (add_generation_prompt) {
        out += "<｜Assistant｜>";
        if (spec.chat_template.find("<｜Assistant｜><think>") != std::string::npos) out += "<think>\n";
      }
      return out;
    }
    case ChatFormat::MistralV1:
    case ChatFormat::MistralV3:
    case ChatFormat::MistralV3Tekken:
    case ChatFormat::MistralV7:
    case ChatFormat::MistralV7Tekken:
      return render_mistral(f, messages, special_text(tok, spec.bos, "<s>"));
    case ChatFormat::None:
      break;
  }
  throw Error("no chat format: the model has no recognised chat template (use " + chat_format_names() + ")");
}

}  // namespace jf
