// Tools in the prompts of Mistral's formats and Phi-4-mini, written as their official templates write them:
//   mistral-v3         Mistral-7B-Instruct-v0.3's template
//   mistral-v3-tekken  Mistral-Nemo-Instruct-2407's (llama.cpp's models/templates copy)
//   mistral-v7-tekken  Mistral-Small-3.1-24B-Instruct-2503's (llama.cpp's models/templates copy), without its
//                      dated default system message (model-specific): with no system message, only the
//                      parallel-call instructions
//   mistral-v7         the same with jf's v7 spaces (after [INST], before an answer)
//   phi4-mini          Phi-4-mini-instruct's template and model card: the tools come with the system message
//                      (json.dumps of the functions), calls as the model writes them
#include <cctype>

#include "base/error.h"
#include "tokenizer/chat_internal.h"
#include "tokenizer/chat_tools.h"
#include "tokenizer/chat_tools_internal.h"
#include "tokenizer/tokenizer.h"

namespace jf {

using namespace chat_detail;

std::string mistral_call_id(const std::string& id) {
  std::string out;
  for (auto it = id.rbegin(); it != id.rend() && out.size() < 9; ++it)
    if (std::isalnum(static_cast<unsigned char>(*it))) out.insert(out.begin(), *it);
  return std::string(9 - out.size(), '0') + out;
}

namespace chat_tools_detail {

namespace {

constexpr const char* kParallelCalls =
    "You are a helpful assistant that can call tools. If you call one or more tools, format them in a single JSON "
    "array or objects, where each object is a tool call, not as separate objects outside of an array or multiple "
    "arrays. Use the format [{\"name\": tool call name, \"arguments\": tool call arguments}, additional tool calls] "
    "if you call more than one tool. If you call tools, do not attempt to interpret them or otherwise provide a "
    "response until you receive a tool call result that you can interpret for the user.";

// Where the versions differ: spaces after [INST] and the tool tags, an answer's lead, the system prompt.
struct MistralStyle {
  std::string inst, tag_gap, answer_gap;
  bool trim_answer = false;  // v3: " " + content|trim
  bool system_prompt = false;  // v7: [SYSTEM_PROMPT]; v3: the system message opens the last user message
};

MistralStyle mistral_style(ChatFormat f) {
  switch (f) {
    case ChatFormat::MistralV3: return {"[INST] ", " ", " ", true, false};
    case ChatFormat::MistralV3Tekken: return {"[INST]", "", "", false, false};
    case ChatFormat::MistralV7: return {"[INST] ", " ", " ", false, true};
    default: return {"[INST]", " ", "", false, true};  // v7-tekken
  }
}

// [AVAILABLE_TOOLS] [{"type": "function", "function": {...}}, ...][/AVAILABLE_TOOLS]: each function's keys in
// order, string values written raw (the template does not escape them), others through tojson.
std::string available_tools(const OJson& tools, const std::string& gap) {
  std::string out = "[AVAILABLE_TOOLS]" + gap + "[";
  for (size_t i = 0; i < tools.size(); i++) {
    out += i ? ", {\"type\": \"function\", \"function\": {" : "{\"type\": \"function\", \"function\": {";
    bool first = true;
    for (const auto& [key, val] : tools[i]["function"].items()) {
      if (key == "return") continue;
      out.append(first ? "\"" : ", \"").append(key).append("\": ");
      out += val.is_string() ? std::string("\"").append(val.get_ref<const std::string&>()).append("\"") : py_json(val);
      first = false;
    }
    out += "}}";
  }
  return out + "][/AVAILABLE_TOOLS]";
}

std::string mistral_calls(const std::vector<ChatToolCall>& calls, const std::string& gap, const std::string& eos) {
  std::string out = "[TOOL_CALLS]" + gap + "[";
  for (size_t i = 0; i < calls.size(); i++)
    out += (i ? ", {\"name\": \"" : "{\"name\": \"") + calls[i].name + "\", \"arguments\": " + py_json(arguments_object(calls[i])) +
           ", \"id\": \"" + mistral_call_id(calls[i].id) + "\"}";
  return out + "]" + eos;
}

}  // namespace

std::string render_mistral_tools(ChatFormat f, const std::vector<ChatMessage>& messages, const Tokenizer& tok, const OJson& tools) {
  const MistralStyle style = mistral_style(f);
  const std::string eos = special_text(tok, tok.spec().eos, "</s>");
  std::string out = special_text(tok, tok.spec().bos, "<s>");
  const bool has_system = !messages.empty() && messages[0].role == "system";
  const std::string system = has_system ? messages[0].content : "";
  if (style.system_prompt && (has_system || !tools.empty())) {
    const std::string text = tools.empty() ? system : has_system ? std::string(kParallelCalls) + "\n\n" + system : kParallelCalls;
    out += "[SYSTEM_PROMPT]" + std::string(f == ChatFormat::MistralV7 ? " " : "") + text + "[/SYSTEM_PROMPT]";
  }
  size_t last_user = messages.size();
  for (size_t i = 0; i < messages.size(); i++)
    if (messages[i].role == "user") last_user = i;
  for (size_t i = has_system ? 1 : 0; i < messages.size(); i++) {
    const ChatMessage& m = messages[i];
    if (m.role == "user") {
      if (!tools.empty() && i == last_user) out += available_tools(tools, style.tag_gap);
      // v3 writes the system message into the last user message, when it ends the conversation
      const bool with_system = has_system && !style.system_prompt && i + 1 == messages.size();
      out += style.inst + (with_system ? system + "\n\n" : "") + m.content + "[/INST]";
    } else if (m.role == "assistant" && !m.tool_calls.empty()) {
      out += mistral_calls(m.tool_calls, style.tag_gap, eos);  // (the template leaves the text out)
    } else if (m.role == "assistant") {
      out += style.answer_gap + (style.trim_answer ? trim(m.content) : m.content) + eos;
    } else if (m.role == "tool") {
      out += "[TOOL_RESULTS]" + style.tag_gap + "{\"content\": " + m.content + ", \"call_id\": \"" + mistral_call_id(m.tool_call_id) +
             "\"}[/TOOL_RESULTS]";
    } else {
      throw Error("the " + chat_format_name(f) + " chat format takes a system message only as the first message");
    }
  }
  return out;  // ends with [/INST] or [/TOOL_RESULTS]: the answer follows
}

std::string render_phi4_mini_tools(const std::vector<ChatMessage>& messages, bool add_generation_prompt, const Tokenizer& tok,
                                   const OJson& tools) {
  const VocabSpec& spec = tok.spec();
  std::string out = spec.add_bos && spec.bos >= 0 ? tok.token_text(spec.bos) : "";
  const bool has_system = !messages.empty() && messages[0].role == "system";
  if (!tools.empty()) {  // the model card's system message when there is none
    OJson functions = OJson::array();
    for (const OJson& t : tools) functions.push_back(t["function"]);
    out += "<|system|>" + (has_system ? messages[0].content : "You are a helpful assistant with some tools.") + "<|tool|>" +
           py_json(functions, true) + "<|/tool|><|end|>";
  } else if (has_system) {
    out += "<|system|>" + messages[0].content + "<|end|>";
  }
  for (size_t i = has_system ? 1 : 0; i < messages.size(); i++) {
    const ChatMessage& m = messages[i];
    out += "<|" + m.role + "|>" + m.content;
    if (!m.tool_calls.empty()) {
      out += "<|tool_call|>[";
      for (size_t k = 0; k < m.tool_calls.size(); k++)
        out += (k ? ", {\"name\": \"" : "{\"name\": \"") + m.tool_calls[k].name + "\", \"arguments\": " +
               py_json(arguments_object(m.tool_calls[k])) + "}";
      out += "]<|/tool_call|>";
    }
    out += "<|end|>";
  }
  if (add_generation_prompt) out += "<|assistant|>";
  return out;
}

}  // namespace chat_tools_detail
}  // namespace jf
