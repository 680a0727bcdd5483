// The JSON the OpenAI clients expect back (../shared/SERVING.md): whole responses, streamed chunks, usage,
// and jf's own statistics object.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "serve/request.h"
#include "serve/text_stream.h"

namespace jf {

// What every response and chunk of one request shares.
struct ResponseIds {
  std::string id;       // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

// One TextStream per choice (n > 1: several), choice i at index i.
using Choices = std::vector<std::shared_ptr<TextStream>>;

// OpenAI's finish_reason: "stop" (EOS or a stop string) or "length" (max_tokens or the context).
std::string openai_finish_reason(FinishReason r);
// The choice's logprobs in the endpoint's shape (null when not asked for).
nlohmann::json logprobs_json(const CompletionRequest& req, const TextStream& out);
// The prompt counted once, the completions of every choice added up.
nlohmann::json usage_json(const CompletionRequest& req, const Choices& outs);
// {decoder, forwards, forward_rows, tokens_per_forward, accepted_histogram, counters, tokens, finish}
nlohmann::json jf_stats_json(const CompletionRequest& req, const TextStream& out);
// `jf` holds the first choice's statistics.
nlohmann::json completion_response(const CompletionRequest& req, const ResponseIds& ids, const Choices& outs);
// One streamed chunk carrying `text` (chat: as delta.content; `role`: also delta.role). tokens > 0: also
// {"jf": {"n_tokens": n}}, the number of tokens behind this text (one forward's).
nlohmann::json stream_chunk(const CompletionRequest& req, const ResponseIds& ids, const std::string& text, bool role = false,
                            int tokens = 0, int index = 0);
// A streamed chat choice's tool calls: delta.tool_calls, each with its index, id, name and whole arguments.
nlohmann::json tool_calls_chunk(const CompletionRequest& req, const ResponseIds& ids, const std::vector<ChatToolCall>& calls,
                                int tokens = 0, int index = 0);
// The last content chunk: empty delta/text, finish_reason (`finish` when given, as "tool_calls"), and the jf
// statistics.
nlohmann::json final_chunk(const CompletionRequest& req, const ResponseIds& ids, const TextStream& out, int index = 0,
                           const std::string& finish = {});
// With stream_options.include_usage: choices [] and the usage.
nlohmann::json usage_chunk(const CompletionRequest& req, const ResponseIds& ids, const Choices& outs);

}  // namespace jf
