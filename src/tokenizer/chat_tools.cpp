// Tool calls in chat prompts (chatml and llama3 rendered as Qwen2.5's and Llama 3.1's Jinja templates render
// them through Hugging Face's tojson filter; Mistral and Phi-4-mini in chat_tools_mistral.cpp) and read back
// out of replies.
#include "tokenizer/chat_tools.h"

#include <algorithm>
#include <ctime>

#include "base/error.h"
#include "tokenizer/chat_internal.h"
#include "tokenizer/chat_tools_internal.h"
#include "tokenizer/tokenizer.h"

namespace jf {

using namespace chat_detail;
using namespace chat_tools_detail;

namespace chat_tools_detail {

std::string dump(const OJson& v, int indent) { return v.dump(indent, ' ', false, OJson::error_handler_t::replace); }

std::string py_json(const OJson& v, bool ascii) {
  if (!v.is_structured()) return v.dump(-1, ' ', ascii, OJson::error_handler_t::replace);
  std::string s(1, v.is_object() ? '{' : '[');
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it, first = false) {
    if (!first) s += ", ";
    if (v.is_object()) s += py_json(OJson(it.key()), ascii) + ": ";
    s += py_json(it.value(), ascii);
  }
  return s + (v.is_object() ? '}' : ']');
}

OJson tools_array(const std::string& text) {
  if (text.empty()) return OJson::array();
  OJson t = OJson::parse(text, nullptr, false);
  if (!t.is_array()) throw Error("tools must be a JSON array");
  return t;
}

OJson arguments_object(const ChatToolCall& c) {
  OJson a = OJson::parse(c.arguments, nullptr, false);
  if (!a.is_object()) throw Error("the arguments of tool call '" + c.id + "' are not a JSON object");
  return a;
}

}  // namespace chat_tools_detail

namespace {

constexpr const char* kHermesTools =
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>";
constexpr const char* kHermesToolsEnd =
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
    "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
    "</tool_call><|im_end|>\n";

// Qwen2.5's system turn with tools: the system message (or the template's default one), then the tools.
std::string chatml_system(const std::vector<ChatMessage>& messages, const OJson& tools, const std::string& tmpl) {
  const bool has_system = !messages.empty() && messages[0].role == "system";
  const bool qwen_default = tmpl.find(kQwenSystem) != std::string::npos;
  const std::string system = has_system ? messages[0].content : qwen_default ? kQwenSystem : "";
  if (tools.empty()) return has_system || qwen_default ? "<|im_start|>system\n" + system + "<|im_end|>\n" : "";
  std::string out = "<|im_start|>system\n" + (has_system || qwen_default ? system + "\n\n" : "") + kHermesTools;
  for (const OJson& t : tools) out.append("\n").append(py_json(t));
  return out + kHermesToolsEnd;
}

// An assistant turn with calls: its text, then each call in a <tool_call> block.
std::string chatml_calls(const std::string& content, const std::vector<ChatToolCall>& calls) {
  std::string out = "<|im_start|>assistant" + (content.empty() ? "" : "\n" + content);
  for (const ChatToolCall& c : calls)
    out += "\n<tool_call>\n{\"name\": \"" + c.name + "\", \"arguments\": " + py_json(arguments_object(c)) + "}\n</tool_call>";
  return out + "<|im_end|>\n";
}

std::string render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt, const Tokenizer& tok,
                          const ChatOptions& opts) {
  const VocabSpec& spec = tok.spec();
  std::string out;
  if (spec.add_bos && spec.bos >= 0) out += tok.token_text(spec.bos);
  out += chatml_system(messages, tools_array(opts.tools), spec.chat_template);
  const bool qwen3 = spec.chat_template.find("last_query_index") != std::string::npos;
  size_t last_query = messages.empty() ? 0 : messages.size() - 1;
  for (size_t i = 0; i < messages.size(); i++)
    if (messages[i].role == "user") last_query = i;
  const size_t n = messages.size();
  for (size_t i = !messages.empty() && messages[0].role == "system" ? 1 : 0; i < n; i++) {
    const ChatMessage& m = messages[i];
    if (m.role == "tool") {  // consecutive results share one user turn
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (i + 1 == n || messages[i + 1].role != "tool") out += "<|im_end|>\n";
      continue;
    }
    const std::string content = qwen3 && m.role == "assistant" ? qwen3_answer(m.content, i > last_query, i + 1 == n) : m.content;
    if (m.tool_calls.empty()) out += "<|im_start|>" + m.role + "\n" + content + "<|im_end|>\n";
    else out += chatml_calls(content, m.tool_calls);
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  if (add_generation_prompt && !opts.enable_thinking && spec.chat_template.find("enable_thinking") != std::string::npos)
    out += "<think>\n\n</think>\n\n";
  return out;
}

constexpr const char* kLlamaTools =
    "Given the following functions, please respond with a JSON for a function call with its proper arguments that "
    "best answers the given prompt.\n\nRespond in the format {\"name\": function name, \"parameters\": dictionary of "
    "argument name and its value}.Do not use variables.\n\n";

std::string llama3_turn(const std::string& role, const std::string& text) {
  return "<|start_header_id|>" + role + "<|end_header_id|>\n\n" + text + "<|eot_id|>";
}

std::string llama3_message(const ChatMessage& m) {
  if (m.role == "tool") return llama3_turn("ipython", py_json(OJson(m.content)));  // (a string is iterable: tojson)
  if (m.tool_calls.empty()) return llama3_turn(m.role, trim(m.content));
  if (m.tool_calls.size() != 1) throw Error("the llama3 chat format takes one tool call per assistant message");
  const ChatToolCall& c = m.tool_calls[0];
  return llama3_turn("assistant", "{\"name\": \"" + c.name + "\", \"parameters\": " + py_json(arguments_object(c)) + "}");
}

// Llama 3.1's template with tools_in_user_message (its default): the tools open the first user message.
std::string render_llama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt, const Tokenizer& tok,
                          const ChatOptions& opts) {
  const VocabSpec& spec = tok.spec();
  const OJson tools = tools_array(opts.tools);
  std::string out = special_text(tok, spec.bos, "<|begin_of_text|>");
  size_t i = 0;
  // A template without the dated system turn (Llama 3.0) has no tools: with tools, 3.1's turn is written.
  if (!tools.empty() || spec.chat_template.find("Cutting Knowledge Date: ") != std::string::npos) {
    const bool has_system = !messages.empty() && messages[0].role == "system";
    out += llama3_dated_system(spec.chat_template, has_system ? messages[0].content : "", std::time(nullptr), !tools.empty());
    i = has_system ? 1 : 0;
  }
  if (!tools.empty()) {
    if (i >= messages.size() || messages[i].role != "user")
      throw Error("the llama3 chat format writes the tools into the first user message: it must follow the system message");
    std::string text = kLlamaTools;
    for (const OJson& t : tools) text += dump(t, 4) + "\n\n";
    out += llama3_turn("user", text + trim(messages[i++].content));
  }
  for (; i < messages.size(); i++) out += llama3_message(messages[i]);
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

bool is_mistral_with_tools(ChatFormat f) {
  return f == ChatFormat::MistralV3 || f == ChatFormat::MistralV3Tekken || f == ChatFormat::MistralV7 ||
         f == ChatFormat::MistralV7Tekken;
}

[[noreturn]] void no_tools(ChatFormat f) { throw Error(no_tool_syntax_message(f)); }

// Whether `text` is one control token of the vocabulary (what decoding drops and grammars never allow).
bool is_control_token(const Tokenizer& tok, const std::string& text) {
  if (text.empty()) return false;
  const std::vector<int32_t> ids = tok.encode(text, false, true);
  return ids.size() == 1 && tok.is_control(ids[0]) && tok.token_text(ids[0]) == text;
}

}  // namespace

bool chat_format_has_tools(ChatFormat f) {
  return f == ChatFormat::ChatML || f == ChatFormat::Llama3 || f == ChatFormat::Phi4Mini || is_mistral_with_tools(f);
}

std::string tool_chat_format_names() {
  std::string s;
  for (ChatFormat f : {ChatFormat::ChatML, ChatFormat::Llama3, ChatFormat::Phi4Mini, ChatFormat::MistralV3,
                       ChatFormat::MistralV3Tekken, ChatFormat::MistralV7, ChatFormat::MistralV7Tekken})
    s += (s.empty() ? "" : ", ") + chat_format_name(f);
  return s;
}

std::string no_tool_syntax_message(ChatFormat f) {
  return "the chat format '" + chat_format_name(f) + "' has no tool syntax (its template defines none; tools work with " +
         tool_chat_format_names() + ")";
}

bool has_tool_turns(const std::vector<ChatMessage>& messages) {
  return std::any_of(messages.begin(), messages.end(), [](const ChatMessage& m) { return m.role == "tool" || !m.tool_calls.empty(); });
}

std::string render_chat_tools(ChatFormat f, const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                              const Tokenizer& tok, const ChatOptions& opts) {
  if (f == ChatFormat::ChatML) return render_chatml(messages, add_generation_prompt, tok, opts);
  if (f == ChatFormat::Llama3) return render_llama3(messages, add_generation_prompt, tok, opts);
  if (f == ChatFormat::Phi4Mini) return render_phi4_mini_tools(messages, add_generation_prompt, tok, tools_array(opts.tools));
  if (is_mistral_with_tools(f)) return render_mistral_tools(f, messages, tok, tools_array(opts.tools));
  no_tools(f);
}

ToolCallSyntax tool_call_syntax(ChatFormat f) {
  if (f == ChatFormat::ChatML) return {"<tool_call>\n", "\n</tool_call>", "\n", "arguments", true, false, false, false, "<tool_call>", ""};
  if (f == ChatFormat::Llama3) return {"", "", "", "parameters", false, true, false, false, "", ""};
  if (f == ChatFormat::Phi4Mini) return {"<|tool_call|>", "<|/tool_call|>", ", ", "arguments", true, false, true, false, "<|tool_call|>", ""};
  // (the templates: "[TOOL_CALLS] [" but Nemo's "[TOOL_CALLS][")
  if (is_mistral_with_tools(f))
    return {f == ChatFormat::MistralV3Tekken ? "[TOOL_CALLS]" : "[TOOL_CALLS] ", "", ", ", "arguments", true, false, true, true, "[TOOL_CALLS]", ""};
  no_tools(f);
}

ToolCallSyntax tool_call_syntax(ChatFormat f, const Tokenizer& tok) {
  ToolCallSyntax s = tool_call_syntax(f);
  if (!s.array) return s;
  if (is_control_token(tok, s.marker)) {
    s.open.erase(0, s.marker.size());
    s.hidden_marker = s.marker;
  }
  const std::string end = trim(s.close);
  if (is_control_token(tok, end)) s.close.erase(s.close.rfind(end), end.size());
  return s;
}

}  // namespace jf
