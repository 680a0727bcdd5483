// A conversation with a model on one KV cache: each answer re-renders the whole conversation with the chat
// template and prefills only what the cache does not already hold (its common prefix with the last turn),
// drops the oldest turns when the context fills up, and saves / loads itself as JSON. What `jf chat` runs
// in the terminal; no terminal code here.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "decode/decoder.h"
#include "decode/options.h"
#include "tokenizer/chat.h"

namespace jf {
class Tokenizer;
}

namespace jf::chat {

struct ConversationOptions {
  ChatFormat format = ChatFormat::None;  // None: completion mode, the turns are one text the model continues
  ChatOptions chat;
  GenerationConfig gen;                  // eos_ids filled from the tokenizer by the constructor
  bool fixed_seed = false;               // false: every answer draws a fresh seed (reported in its stats)
};

// What one answer did, for `/stats`.
struct TurnStats {
  int prompt_tokens = 0;     // the rendered conversation, in tokens
  int reused_tokens = 0;     // of those, already in the cache from earlier turns
  int prefilled_tokens = 0;  // pushed through the model before decoding (the rest, less the pending last token)
  int dropped_messages = 0;  // oldest messages removed so the conversation fits the context
  bool interrupted = false;
  uint64_t seed = 0;
  std::string decoder;
  GenerationResult result;
};

class Conversation {
 public:
  // The model (its forward pass) and tokenizer must outlive the conversation; context_size <= 0: the model's own.
  Conversation(ForwardPass& model, const Tokenizer& tok, int context_size, DType kv_type, ConversationOptions opts,
               const DecoderOptions& decoder);
  // The same on the CPU forward of `model`.
  Conversation(const Model& model, const Tokenizer& tok, int context_size, DType kv_type, ConversationOptions opts,
               const DecoderOptions& decoder);

  // Appends `user` and answers it: text pieces go to `on_text` as they are decoded, `stop` is polled
  // between forwards (an interrupted answer is kept as far as it got). Throws jf::Error, with the
  // conversation unchanged, when the message alone does not fit the context.
  TurnStats answer(const std::string& user, const std::function<void(const std::string&)>& on_text,
                   const std::atomic<bool>* stop = nullptr);

  const std::vector<ChatMessage>& messages() const { return messages_; }
  const std::string& system() const { return system_; }
  void set_system(const std::string& text) { system_ = text; }
  void reset() { messages_.clear(); }  // the turns go; the cache stays for whatever prefix the next turn shares
  void set_decoder(const DecoderOptions& decoder);  // validated for this conversation's sampling
  const std::string& decoder_name() const { return decoder_name_; }
  const ConversationOptions& options() const { return opts_; }
  Session& session() { return session_; }
  int context_size() const { return session_.context_size(); }

  // The prompt the next answer would start from for these messages: template, generation prompt, tokens.
  std::vector<int32_t> render(const std::vector<ChatMessage>& messages) const;

  // {"format", "system", "messages": [{"role", "content"}]}; save writes atomically (temp file + rename);
  // load replaces system and messages and throws jf::Error naming the problem for a malformed file.
  void save(const std::string& path) const;
  void load(const std::string& path);

 private:
  void start(const DecoderOptions& decoder);
  int fit_to_context(std::vector<int32_t>* prompt);
  void keep_cache(Generation& g);

  const Tokenizer& tok_;
  ConversationOptions opts_;
  Session session_;
  std::unique_ptr<Decoder> decoder_;
  std::string decoder_name_;
  std::string system_;
  std::vector<ChatMessage> messages_;  // user and assistant turns, oldest first (the system text apart)
  std::vector<int32_t> cached_;        // what the cache's first cached_.size() slots hold
};

// A conversation file: `/save`'s object, or a bare list of {role, content} (a leading system message is
// taken as the system text). Throws jf::Error naming the file and the problem.
struct ConversationFile {
  std::string system;
  std::vector<ChatMessage> messages;  // user and assistant turns
};
ConversationFile read_conversation(const std::string& path);

}  // namespace jf::chat
