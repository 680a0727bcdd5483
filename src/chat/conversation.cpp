#include "chat/conversation.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "tokenizer/tokenizer.h"

namespace jf::chat {

namespace {

uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// Leading tokens `cached` (what the cache holds) shares with `prompt`, leaving the prompt's last token to
// be decoded (a generation starts from a pending token).
int shared_prefix(const std::vector<int32_t>& cached, const std::vector<int32_t>& prompt) {
  const size_t limit = std::min(cached.size(), prompt.size() - 1);
  size_t n = 0;
  while (n < limit && cached[n] == prompt[n]) n++;
  return static_cast<int>(n);
}

bool known_role(const std::string& r) { return r == "system" || r == "user" || r == "assistant"; }

}  // namespace

Conversation::Conversation(ForwardPass& model, const Tokenizer& tok, int context_size, DType kv_type,
                           ConversationOptions opts, const DecoderOptions& decoder)
    : tok_(tok), opts_(std::move(opts)), session_(model, context_size, kv_type) {
  start(decoder);
}

Conversation::Conversation(const Model& model, const Tokenizer& tok, int context_size, DType kv_type,
                           ConversationOptions opts, const DecoderOptions& decoder)
    : tok_(tok), opts_(std::move(opts)), session_(model, context_size, kv_type) {
  start(decoder);
}

void Conversation::start(const DecoderOptions& decoder) {
  opts_.gen.sampling.validate();
  opts_.gen.eos_ids = tok_.eog_ids();
  set_decoder(decoder);
}

void Conversation::set_decoder(const DecoderOptions& decoder) {
  decoder.validate(opts_.gen.sampling.greedy());
  decoder_ = make_decoder(decoder);
  decoder_name_ = decoder_->name();
}

std::vector<int32_t> Conversation::render(const std::vector<ChatMessage>& messages) const {
  if (opts_.format == ChatFormat::None) {
    // Completion mode: the system text and the turns are one document; a message the user adds starts on
    // a new line.
    std::string text = system_;
    for (const ChatMessage& m : messages) {
      if (m.role == "user" && !text.empty() && text.back() != '\n') text += '\n';
      text += m.content;
    }
    std::vector<int32_t> ids = tok_.encode(text, /*add_special=*/true, /*parse_special=*/false);
    if (ids.empty() && tok_.bos() >= 0) ids.push_back(tok_.bos());
    if (ids.empty()) throw Error("nothing to continue: the conversation is empty and the vocabulary has no BOS");
    return ids;
  }
  std::vector<ChatMessage> all;
  if (!system_.empty()) all.push_back({"system", system_});
  all.insert(all.end(), messages.begin(), messages.end());
  const std::string text = render_chat(opts_.format, all, /*add_generation_prompt=*/true, tok_, opts_.chat);
  return tok_.encode(text, /*add_special=*/false, /*parse_special=*/true);
}

// Renders the conversation, dropping its oldest turns (never the system text or the newest message) until
// the prompt leaves room for an answer: up to -n tokens, at most half the context.
int Conversation::fit_to_context(std::vector<int32_t>* prompt) {
  const int ctx = session_.context_size();
  const int reserve = std::clamp(opts_.gen.max_new_tokens, 1, std::max(1, ctx / 2));
  int dropped = 0;
  *prompt = render(messages_);
  while (static_cast<int>(prompt->size()) + reserve > ctx && messages_.size() > 1) {
    const size_t n = messages_.size() > 2 && messages_[1].role == "assistant" ? 2 : 1;  // a question and its answer
    messages_.erase(messages_.begin(), messages_.begin() + static_cast<std::ptrdiff_t>(n));
    dropped += static_cast<int>(n);
    *prompt = render(messages_);
  }
  if (static_cast<int>(prompt->size()) >= ctx)
    throw Error("the message is " + std::to_string(prompt->size()) + " tokens with the system text and template; the " +
                "context holds " + std::to_string(ctx) + " (start with a larger -c, or send a shorter message)");
  return dropped;
}

void Conversation::keep_cache(Generation& g) {
  const int keep = g.reusable_cache_prefix();
  const std::vector<int32_t>& text = g.context().history();
  cached_.assign(text.begin(), text.begin() + keep);
  session_.cache().truncate(keep);
}

TurnStats Conversation::answer(const std::string& user, const std::function<void(const std::string&)>& on_text,
                               const std::atomic<bool>* stop) {
  TurnStats st;
  const std::vector<ChatMessage> before = messages_;
  messages_.push_back({"user", user});
  std::vector<int32_t> prompt;
  try {
    st.dropped_messages = fit_to_context(&prompt);
  } catch (...) {
    messages_ = before;
    throw;
  }
  const int reuse = std::min(shared_prefix(cached_, prompt), session_.cache().size());
  st.prompt_tokens = static_cast<int>(prompt.size());
  st.reused_tokens = reuse;
  st.prefilled_tokens = static_cast<int>(prompt.size()) - 1 - reuse;
  st.decoder = decoder_name_;

  GenerationConfig cfg = opts_.gen;
  cfg.sampling.seed = opts_.fixed_seed ? opts_.gen.sampling.seed : fresh_seed();
  st.seed = cfg.sampling.seed;
  StreamingDecoder stream(tok_, prompt);  // the answer's text exactly as it reads after the prompt
  std::string text;
  auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    text += piece;
    if (on_text) on_text(piece);
  };
  TokenSink sink = [&](std::span<const int32_t> toks) {
    std::string piece;
    for (int32_t t : toks) piece += stream.push(t);
    emit(piece);
  };
  try {
    Generation g(*decoder_, session_, prompt, cfg, sink, kPrefillChunk, reuse);
    while (SequenceInput* in = g.next_input()) {
      if (stop && stop->load()) {
        st.interrupted = true;
        g.stop();
        break;
      }
      const double t0 = now_seconds();
      const ForwardResult result = session_.forward_pass().forward(*in);
      g.consume(result, now_seconds() - t0);
    }
    keep_cache(g);
    st.result = g.take_result();
  } catch (...) {  // the cache's state is unknown: start the next turn from scratch
    cached_.clear();
    session_.cache().truncate(0);
    messages_ = before;
    throw;
  }
  emit(stream.finish());
  messages_.push_back({"assistant", text});
  return st;
}

void Conversation::save(const std::string& path) const {
  nlohmann::json j;
  j["format"] = chat_format_name(opts_.format);
  j["system"] = system_;
  j["messages"] = nlohmann::json::array();
  for (const ChatMessage& m : messages_) j["messages"].push_back({{"role", m.role}, {"content", m.content}});
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  write_file_atomic(path, text.data(), text.size());
}

void Conversation::load(const std::string& path) {
  ConversationFile f = read_conversation(path);
  system_ = std::move(f.system);
  messages_ = std::move(f.messages);
}

ConversationFile read_conversation(const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  ConversationFile f;
  const nlohmann::json* list = &j;
  if (j.is_object()) {
    if (j.contains("system")) {
      if (!j["system"].is_string()) throw Error(path + ": 'system' must be a string");
      f.system = j["system"].get<std::string>();
    }
    if (!j.contains("messages")) throw Error(path + ": no 'messages' list");
    list = &j["messages"];
  }
  if (!list->is_array()) throw Error(path + ": expected a list of messages or an object with 'messages'");
  for (size_t i = 0; i < list->size(); i++) {
    const nlohmann::json& m = (*list)[i];
    const std::string where = path + ": message " + std::to_string(i) + ": ";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string())
      throw Error(where + "needs string fields 'role' and 'content'");
    const std::string role = m["role"].get<std::string>();
    if (!known_role(role)) throw Error(where + "unknown role '" + role + "' (system, user, assistant)");
    if (role == "system" && i == 0 && f.system.empty()) {
      f.system = m["content"].get<std::string>();
      continue;
    }
    if (role == "system") throw Error(where + "a system message must come first");
    f.messages.push_back({role, m["content"].get<std::string>()});
  }
  return f;
}

}  // namespace jf::chat
