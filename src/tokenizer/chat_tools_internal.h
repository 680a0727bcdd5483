// Pieces shared by the tool renderers (chat_tools.cpp: chatml, llama3; chat_tools_mistral.cpp: Mistral,
// Phi-4-mini). Not part of the public API.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tokenizer/chat.h"

namespace jf::chat_tools_detail {

using OJson = nlohmann::ordered_json;  // keeps the client's key order, as a template renders it

std::string dump(const OJson& v, int indent = -1);
// Python's json.dumps(v, ensure_ascii=False), which Hugging Face's tojson filter runs: ", " and ": " between
// items. `ascii`: json.dumps's default ensure_ascii=True (non-ASCII as \uXXXX escapes).
std::string py_json(const OJson& v, bool ascii = false);
// The request's tools (ChatOptions::tools) as an array, [] when there are none.
OJson tools_array(const std::string& text);
// A call's arguments as an object (jf::Error when they are not one).
OJson arguments_object(const ChatToolCall& c);

std::string render_mistral_tools(ChatFormat f, const std::vector<ChatMessage>& messages, const Tokenizer& tok,
                                 const OJson& tools);
std::string render_phi4_mini_tools(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                   const Tokenizer& tok, const OJson& tools);

}  // namespace jf::chat_tools_detail
