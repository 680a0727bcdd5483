#include "serve/response.h"

namespace jf {

using nlohmann::json;

std::string openai_finish_reason(FinishReason r) {
  return r == FinishReason::Length || r == FinishReason::ContextFull ? "length" : "stop";
}

namespace {

json base(const CompletionRequest& req, const ResponseIds& ids, bool chunk) {
  const char* object = req.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return json{{"id", ids.id}, {"object", object}, {"created", ids.created}, {"model", ids.model}};
}

std::string token_text(const TextStream& out, int32_t id) {
  return out.tokenizer() ? out.tokenizer()->token_bytes(id) : std::to_string(id);
}

json bytes_of(const std::string& text) {
  json b = json::array();
  for (unsigned char c : text) b.push_back(static_cast<int>(c));
  return b;
}

// Chat: {"content": [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]}.
json chat_logprobs(const TextStream& out) {
  json content = json::array();
  for (const TokenLogprob& t : out.logprobs()) {
    json top = json::array();
    for (const auto& [id, lp] : t.top) top.push_back({{"token", token_text(out, id)}, {"logprob", lp}, {"bytes", bytes_of(token_text(out, id))}});
    const std::string text = token_text(out, t.token);
    content.push_back({{"token", text}, {"logprob", t.logprob}, {"bytes", bytes_of(text)}, {"top_logprobs", top}});
  }
  return json{{"content", content}};
}

// Completions: {tokens, token_logprobs, top_logprobs, text_offset}; with echo the prompt's first token
// leads with null (nothing came before it).
json completion_logprobs(const CompletionRequest& req, const TextStream& out) {
  json tokens = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  size_t offset = 0;
  auto add = [&](int32_t id, const json& lp, const json& top) {
    const std::string text = token_text(out, id);
    tokens.push_back(text), lps.push_back(lp), tops.push_back(top), offsets.push_back(offset);
    offset += text.size();
  };
  if (req.echo && !req.prompt.empty()) add(req.prompt[0], nullptr, nullptr);
  for (const TokenLogprob& t : out.logprobs()) {
    json top = json::object();
    for (const auto& [id, lp] : t.top) top[token_text(out, id)] = lp;
    add(t.token, t.logprob, top);
  }
  return json{{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

}  // namespace

json logprobs_json(const CompletionRequest& req, const TextStream& out) {
  if (req.logprobs < 0) return nullptr;
  return req.chat ? chat_logprobs(out) : completion_logprobs(req, out);
}

json usage_json(const CompletionRequest& req, const Choices& outs) {
  int64_t completion = 0, accepted = 0, drafted = 0;
  for (const auto& out : outs) {
    const GenerationResult& r = out->result();
    completion += static_cast<int64_t>(r.tokens.size());
    accepted += r.stats.counter("corpus_accepted_tokens");
    drafted += r.stats.counter("corpus_draft_tokens");
  }
  json u = {{"prompt_tokens", req.prompt.size()}, {"completion_tokens", completion},
            {"total_tokens", static_cast<int64_t>(req.prompt.size()) + completion},
            {"prompt_tokens_details", {{"cached_tokens", outs.front()->result().stats.counter("prompt_tokens_reused")}}}};
  if (req.prediction)
    u["completion_tokens_details"] = {{"accepted_prediction_tokens", accepted}, {"rejected_prediction_tokens", drafted - accepted}};
  return u;
}

json jf_stats_json(const CompletionRequest& req, const TextStream& out) {
  const GenerationResult& r = out.result();
  return json{{"decoder", req.decoder.name},
              {"forwards", r.stats.n_forwards},
              {"forward_rows", r.stats.n_forward_rows},
              {"tokens_per_forward", r.stats.tpf()},
              {"tokens_per_second", r.stats.tps()},
              {"accepted_histogram", r.stats.accepted_histogram},
              {"counters", r.stats.counters},
              {"tokens", r.tokens},
              {"seed", static_cast<int64_t>(req.gen.sampling.seed)},
              {"finish", finish_reason_name(out.reason())}};
}

namespace {

// A whole chat answer; with tools read for calls: the text before them (null when none) and message.tool_calls,
// finish_reason "tool_calls".
json chat_message(const CompletionRequest& req, const TextStream& out, json& choice) {
  const std::string text = out.text();
  if (!req.tools.parse()) return {{"role", "assistant"}, {"content", text}};
  const ParsedReply reply = read_tool_calls(req.tools, text);
  if (reply.calls.empty()) return {{"role", "assistant"}, {"content", text}};
  choice["finish_reason"] = "tool_calls";
  return {{"role", "assistant"}, {"content", reply.content.empty() ? json(nullptr) : json(reply.content)},
          {"tool_calls", tool_calls_json(reply.calls, false)}};
}

}  // namespace

json completion_response(const CompletionRequest& req, const ResponseIds& ids, const Choices& outs) {
  json j = base(req, ids, false);
  j["choices"] = json::array();
  for (size_t i = 0; i < outs.size(); i++) {
    const TextStream& out = *outs[i];
    json choice = {{"index", i}, {"finish_reason", openai_finish_reason(out.reason())}};
    if (req.chat) choice["message"] = chat_message(req, out, choice);
    else choice["text"] = req.echo ? req.echo_text + out.text() : out.text();
    choice["logprobs"] = logprobs_json(req, out);
    j["choices"].push_back(choice);
  }
  j["usage"] = usage_json(req, outs);
  j["jf"] = jf_stats_json(req, *outs.front());
  return j;
}

json stream_chunk(const CompletionRequest& req, const ResponseIds& ids, const std::string& text, bool role, int tokens, int index) {
  json j = base(req, ids, true);
  json choice = {{"index", index}, {"finish_reason", nullptr}};
  if (req.chat) {
    choice["delta"] = json::object();
    if (role) choice["delta"]["role"] = "assistant";
    choice["delta"]["content"] = text;
  } else {
    choice["text"] = text;
    choice["logprobs"] = nullptr;
  }
  j["choices"] = json::array({choice});
  if (tokens > 0) j["jf"] = {{"n_tokens", tokens}};
  return j;
}

json tool_calls_chunk(const CompletionRequest& req, const ResponseIds& ids, const std::vector<ChatToolCall>& calls, int tokens,
                      int index) {
  json j = stream_chunk(req, ids, "", false, tokens, index);
  j["choices"][0]["delta"] = {{"tool_calls", tool_calls_json(calls, true)}};
  return j;
}

json final_chunk(const CompletionRequest& req, const ResponseIds& ids, const TextStream& out, int index, const std::string& finish) {
  json j = stream_chunk(req, ids, "", false, 0, index);
  if (req.chat) j["choices"][0]["delta"] = json::object();
  j["choices"][0]["finish_reason"] = finish.empty() ? openai_finish_reason(out.reason()) : finish;
  if (req.logprobs >= 0) j["choices"][0]["logprobs"] = logprobs_json(req, out);  // scored once the text is complete
  j["jf"] = jf_stats_json(req, out);
  return j;
}

json usage_chunk(const CompletionRequest& req, const ResponseIds& ids, const Choices& outs) {
  json j = base(req, ids, true);
  j["choices"] = json::array();
  j["usage"] = usage_json(req, outs);
  j["jf"] = jf_stats_json(req, *outs.front());
  return j;
}

}  // namespace jf
