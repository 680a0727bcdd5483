// The OpenAI-style request bodies of /v1/completions and /v1/chat/completions, parsed and validated into
// what the scheduler needs. Anything that would change the output and is not supported is refused by name
// (ApiError, 400), never silently ignored (../shared/SERVING.md, docs/SERVING.md).
#pragma once
#include <nlohmann/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "base/error.h"
#include "decode/decoder.h"
#include "decode/options.h"
#include "grammar/token_grammar.h"
#include "serve/tools.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace jf {

// An error answered with an OpenAI error body: {"error": {"message", "type", "param", "code"}}.
struct ApiError : Error {
  ApiError(int status, const std::string& message, std::string param = {}, std::string type = {}, std::string code = {})
      : Error(message), status(status), param(std::move(param)), type(std::move(type)), code(std::move(code)) {}
  int status;
  std::string param;
  std::string type;  // empty: derived from the status
  std::string code;  // OpenAI's string code ("context_length_exceeded"); empty: derived from the status
};

// Reading a request body (request.cpp, tools.cpp): a 400 naming the field, and whether a field is given.
namespace api {
[[noreturn]] inline void bad(const std::string& param, const std::string& message, const std::string& code = {}) {
  throw ApiError(400, message, param, {}, code);
}
template <class J>
bool present(const J& j, const char* key) {
  return j.is_object() && j.contains(key) && !j[key].is_null();
}
}  // namespace api

nlohmann::json error_body(int status, const std::string& message, const std::string& param = {}, std::string type = {},
                          std::string code = {});

// What the server knows that requests are checked against.
struct ApiContext {
  const Tokenizer* tokenizer = nullptr;  // null: a model without vocabulary (prompts must be token ids)
  ChatFormat chat_format = ChatFormat::None;
  int context = 0;                        // KV slots per sequence
  int vocab_size = 0;
  std::vector<int32_t> eos_ids;
  DecoderOptions default_decoder;
  int default_max_tokens = 256;
  bool parse_special = false;  // special-token text in a completions prompt becomes those tokens (llama-server's way)
  // A prompt (or the messages' text) longer than this in bytes cannot fit the context: refused before it is
  // tokenized, so a huge prompt costs no tokenizer time or memory.
  size_t max_prompt_bytes = SIZE_MAX;
  // Grammars of recent requests (a schema sent again starts with its masks); null: each compiles its own.
  std::shared_ptr<GrammarCache> grammars;
};

struct CompletionRequest {
  bool chat = false;
  std::vector<int32_t> prompt;
  GenerationConfig gen;
  DecoderOptions decoder;
  std::vector<std::string> stop;  // up to 4, none empty
  bool stream = false;
  bool include_usage = false;
  bool prediction = false;        // the decoder drafts from a predicted text (pld over it)
  bool cache_prompt = true;       // llama-server's field: may start from a sequence's kept keys and values
  bool seed_given = false;        // else gen.sampling.seed is fresh and random (reported in the response)
  int n = 1;                      // choices; the others start from the first one's prompt keys and values
  int logprobs = -1;              // >= 0: logprobs with that many alternatives per token (chat: top_logprobs)
  bool echo = false;              // completions: the prompt comes back before the text (and in logprobs)
  std::string echo_text;          // the prompt as text, for echo
  ToolsRequest tools;             // chat: the tools the reply may call (serve/tools.h)
};

// Throws ApiError (400) naming the field and the problem. `raw`: the body's text, when there is one (a JSON
// schema's properties keep their order from it).
CompletionRequest parse_completion_request(const nlohmann::json& body, bool chat, const ApiContext& ctx,
                                           const std::string* raw = nullptr);

}  // namespace jf
