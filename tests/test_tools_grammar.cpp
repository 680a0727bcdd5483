// The grammars of tool calls: "text without a marker" against std::string::find, tool_choice "auto"'s
// grammar (text, then calls by their schemas) per format, the array formats' calls, and vocabularies whose
// call marker is a control token (Mistral's [TOOL_CALLS], Phi-4-mini's <|tool_call|>), where a required call
// is produced under the grammar token by token after the marker the prompt ends with.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <random>

#include "base/error.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "model/loader.h"
#include "serve/request.h"
#include "serve/tool_grammar.h"
#include "serve/tools.h"
#include "test_support.h"
#include "tokenizer/chat_tools.h"
#include "tokenizer/tokenizer.h"

namespace jf {
namespace {

// Random strings over the marker's characters and one more: the grammar accepts exactly those without it.
TEST(ToolsGrammar, TextWithoutMarkerIsFindNpos) {
  std::mt19937 rng(7);
  for (const std::string marker : {"<tool_call>", "[TOOL_CALLS]", "aab", "abab", "aaa", "x", "é€é"}) {
    const Grammar g = Grammar::parse("root ::= t-0\n" + text_without_gbnf(marker, "t-", ""));
    GrammarMatcher m(g);
    std::vector<std::string> alphabet = {"?"};
    for (size_t i = 0; i < marker.size(); i++) {  // (its code points, whole)
      size_t len = 1;
      while (i + len < marker.size() && (static_cast<unsigned char>(marker[i + len]) & 0xC0) == 0x80) len++;
      alphabet.push_back(marker.substr(i, len));
      i += len - 1;
    }
    const std::string near = marker.substr(0, marker.size() - alphabet.back().size());  // all but its last character
    int with = 0;
    for (int n = 0; n < 3000; n++) {
      std::vector<std::string> units;
      for (int k = static_cast<int>(rng() % 16); k > 0; k--) units.push_back(alphabet[rng() % alphabet.size()]);
      if (rng() % 3 == 0) units.insert(units.begin() + static_cast<long>(rng() % (units.size() + 1)), rng() % 2 ? marker : near);
      std::string text;
      for (const std::string& u : units) text += u;
      const bool free = text.find(marker) == std::string::npos;
      with += !free;
      EXPECT_EQ(m.accepts(text), free) << marker << ": " << text;
    }
    EXPECT_GT(with, 0) << marker;  // (both kinds were drawn)
  }
}

ToolGrammars weather_tools() {
  return {{"get_weather", json_schema_to_gbnf(nlohmann::json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}},
              "required": ["city"], "additionalProperties": false})"))},
          {"now", json_schema_to_gbnf(nlohmann::json::parse(R"({"type": "object", "properties": {}, "additionalProperties": false})"))}};
}

struct AutoCase {
  ChatFormat format;
  std::vector<std::string> accepted, refused;
};

// "auto": any text without the marker; text, the marker and valid calls; never invalid arguments after it.
TEST(ToolsGrammar, AutoIsTextThenValidCalls) {
  const std::vector<AutoCase> cases = {
      {ChatFormat::ChatML,
       {"", "Sure, it is sunny.", "<tool_ call>, </tool_call>, <tool_cal",
        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"},
       {"Text <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
        "Text <tool_call>\n{\"name\": \"now\", \"arguments\": {\"x\": 1}}\n</tool_call>", "Text <tool_call> and more text",
        "<tool_call>\n{\"name\": \"rm\", \"arguments\": {}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call> then text"}},
      {ChatFormat::MistralV3,
       {"Hi [1]", "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}, \"id\": \"abc123XYZ\"}]",
        "Ok. [TOOL_CALLS] [{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"A\"}}]"},
       {"Ok. [TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Oslo\"}}]", "[TOOL_CALLS]",
        "[TOOL_CALLS] [{\"name\": \"now\", \"arguments\": {}, \"id\": \"short\"}]"}},
      {ChatFormat::MistralV3Tekken, {"[TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}}]"}, {"[TOOL_CALLS] [{\"name\": \"now\", \"arguments\": {}}]"}},
      {ChatFormat::Phi4Mini,
       {"Sure.", "Sure.<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}]<|/tool_call|>"},
       {"<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {}}]<|/tool_call|>",
        "<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}]", "<|tool_call|>[{\"name\": \"now\", \"arguments\": {}, \"id\": \"abc123XYZ\"}]<|/tool_call|>"}},
      {ChatFormat::Llama3,
       {"", "It is sunny {today}.", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", "<|py", "<b>"},
       {"{\"name\": \"get_weather\", \"parameters\": {}}", "{\"a\": 1}", " \n{\"name\": \"now\", \"parameters\": {}}",
        "<|python_tag|>{\"name\": \"now\", \"parameters\": {}}"}}};
  for (const AutoCase& c : cases) {
    const std::string gbnf = auto_tool_calls_gbnf(tool_call_syntax(c.format), weather_tools(), true);
    const Grammar g = Grammar::parse(gbnf);
    GrammarMatcher m(g);
    for (const std::string& text : c.accepted) {
      EXPECT_TRUE(m.accepts(text)) << chat_format_name(c.format) << ": " << text;
      // Every accepted reply's calls are read back (text-only ones read as text).
      const ParsedReply p = parse_tool_calls(c.format, text, {"get_weather", "now"});
      EXPECT_EQ(p.calls.empty(), text.find("\"name\"") == std::string::npos) << text;
    }
    for (const std::string& text : c.refused) EXPECT_FALSE(m.accepts(text)) << chat_format_name(c.format) << ": " << text;
  }
  // One call only without parallel calls.
  const Grammar single = Grammar::parse(auto_tool_calls_gbnf(tool_call_syntax(ChatFormat::Phi4Mini), weather_tools(), false));
  GrammarMatcher one(single);
  EXPECT_TRUE(one.accepts("<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}]<|/tool_call|>"));
  EXPECT_FALSE(one.accepts("<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"now\", \"arguments\": {}}]<|/tool_call|>"));
  // A grammar cannot allow a control token: a hidden marker has no "auto" grammar.
  ToolCallSyntax hidden = tool_call_syntax(ChatFormat::MistralV3);
  hidden.open = " ", hidden.hidden_marker = "[TOOL_CALLS]";
  EXPECT_THROW(auto_tool_calls_gbnf(hidden, weather_tools(), true), Error);
}

TEST(ToolsGrammar, ArrayCallsAsTheTemplatesWriteThem) {
  const Grammar v3_grammar = Grammar::parse(tool_calls_gbnf(tool_call_syntax(ChatFormat::MistralV3), weather_tools(), true));
  GrammarMatcher v3(v3_grammar);
  EXPECT_TRUE(v3.accepts("[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"pqrstuvwx\"}, "
                         "{\"name\": \"now\", \"arguments\": {}, \"id\": \"PQRSTUVWX\"}]"));
  EXPECT_FALSE(v3.accepts("Sure. [TOOL_CALLS] [{\"name\": \"now\", \"arguments\": {}}]"));
  const Grammar phi_grammar = Grammar::parse(tool_calls_gbnf(tool_call_syntax(ChatFormat::Phi4Mini), weather_tools(), false));
  GrammarMatcher phi(phi_grammar);
  EXPECT_TRUE(phi.accepts("<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]<|/tool_call|>"));
  // Either the client's grammar or calls.
  const Grammar either_grammar =
      Grammar::parse(either_gbnf("root ::= \"yes\" | \"no\"\n", tool_calls_gbnf(tool_call_syntax(ChatFormat::Phi4Mini), weather_tools(), false)));
  GrammarMatcher either(either_grammar);
  EXPECT_TRUE(either.accepts("no"));
  EXPECT_TRUE(either.accepts("<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}]<|/tool_call|>"));
  EXPECT_FALSE(either.accepts("maybe"));
}

// A real vocabulary with the format's markers added as control tokens (as Mistral's and Phi-4-mini's GGUFs
// have them).
std::unique_ptr<Tokenizer> with_control_tokens(const std::string& path, const std::vector<std::string>& markers) {
  VocabSpec s = load_tokenizer(path)->spec();
  for (const std::string& m : markers) {
    s.tokens.push_back(m);
    s.types.push_back(TokenKind::Control);
    if (!s.scores.empty()) s.scores.push_back(0.0f);
  }
  return std::make_unique<Tokenizer>(std::move(s));
}

int32_t id_of(const Tokenizer& tok, const std::string& text) {
  const std::vector<int32_t> ids = tok.encode(text, false, true);
  return ids.size() == 1 ? ids[0] : -1;
}

// Spells `target` under the grammar with the longest allowed token at each step; then the end must be allowed.
bool produce(TokenGrammar& g, const Tokenizer& tok, const std::string& target, std::vector<int32_t>& ids) {
  TokenGrammar::State s = g.start();
  for (size_t at = 0; at < target.size();) {
    const TokenMask& mask = g.allowed(s);
    int32_t best = -1;
    size_t best_len = 0;
    for (int32_t t = 0; t < tok.n_vocab(); t++) {
      if (!((mask[static_cast<size_t>(t) >> 6] >> (t & 63)) & 1)) continue;
      const std::string b = tok.token_bytes(t);
      if (b.size() > best_len && at + b.size() <= target.size() && target.compare(at, b.size(), b) == 0) best = t, best_len = b.size();
    }
    if (best < 0) return false;
    s = g.advance(s, best);
    ids.push_back(best);
    at += best_len;
  }
  const TokenMask& end = g.allowed(s);
  return g.complete(s) && ((end[static_cast<size_t>(tok.eos()) >> 6] >> (tok.eos() & 63)) & 1);
}

class ControlMarkers : public ::testing::Test {
 protected:
  CompletionRequest request(const Tokenizer& tok, ChatFormat f, const std::string& choice) {
    ApiContext ctx;
    ctx.tokenizer = &tok, ctx.chat_format = f, ctx.context = 8192, ctx.vocab_size = tok.n_vocab();
    const std::string body = R"({"messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": [{"type": "function",
        "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"]}}}, {"type": "function", "function": {"name": "now"}}], "tool_choice": )" + choice + "}";
    return parse_completion_request(nlohmann::json::parse(body), true, ctx, &body);
  }
  // The reply as the server's text shows it: control tokens dropped.
  static std::string text_of(const Tokenizer& tok, const std::vector<int32_t>& prompt, const std::vector<int32_t>& ids) {
    StreamingDecoder d(tok, prompt);
    std::string text;
    for (int32_t t : ids) text += d.push(t);
    return text + d.finish();
  }
};

// Mistral v3 on a Llama-2 SentencePiece vocabulary with Mistral's control tokens: the prompt holds them as
// single tokens; a required call's prompt ends with [TOOL_CALLS] and the grammar starts after it.
TEST_F(ControlMarkers, MistralRequiredCallAfterThePromptsMarker) {
  JF_SHARED_PATH(path, "models/tokenizers/ggml-vocab-llama-spm.gguf");
  const auto tok = with_control_tokens(path, {"[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                                              "[TOOL_RESULTS]", "[/TOOL_RESULTS]"});
  const ToolCallSyntax syn = tool_call_syntax(ChatFormat::MistralV3, *tok);
  EXPECT_EQ(syn.hidden_marker, "[TOOL_CALLS]");
  EXPECT_EQ(syn.open, " ");
  const int32_t calls = id_of(*tok, "[TOOL_CALLS]"), listed = id_of(*tok, "[AVAILABLE_TOOLS]");
  ASSERT_GE(calls, 0);
  const CompletionRequest r = request(*tok, ChatFormat::MistralV3, "\"required\"");
  EXPECT_EQ(std::count(r.prompt.begin(), r.prompt.end(), listed), 1);
  EXPECT_EQ(r.prompt.back(), calls);
  ASSERT_TRUE(r.gen.rules.grammar);
  std::vector<int32_t> ids;
  ASSERT_TRUE(produce(*r.gen.rules.grammar, *tok, " [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}, \"id\": \"abc123XYZ\"}]", ids));
  const ParsedReply p = read_tool_calls(r.tools, text_of(*tok, r.prompt, ids));
  ASSERT_EQ(p.calls.size(), 1u) << text_of(*tok, r.prompt, ids);
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Oslo"})");

  // "auto": no grammar (it could not let the model write [TOOL_CALLS]); calls read from the bare array are
  // kept only when their arguments match their schema.
  const CompletionRequest a = request(*tok, ChatFormat::MistralV3, "\"auto\"");
  EXPECT_FALSE(a.gen.rules.grammar);
  EXPECT_NE(a.prompt.back(), calls);
  EXPECT_EQ(read_tool_calls(a.tools, " [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]").calls.size(), 1u);
  const std::string bad = " [{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Oslo\"}}]";
  EXPECT_TRUE(read_tool_calls(a.tools, bad).calls.empty());
  EXPECT_EQ(read_tool_calls(a.tools, bad).content, bad);
}

// Phi-4-mini's markers as control tokens (on Phi-3's vocabulary): both hidden, the call is the bare array.
TEST_F(ControlMarkers, Phi4MiniRequiredCall) {
  JF_SHARED_PATH(path, "models/tokenizers/ggml-vocab-phi-3.gguf");
  const auto tok = with_control_tokens(path, {"<|tool|>", "<|/tool|>", "<|tool_call|>", "<|/tool_call|>"});
  const ToolCallSyntax syn = tool_call_syntax(ChatFormat::Phi4Mini, *tok);
  EXPECT_EQ(syn.open, "");
  EXPECT_EQ(syn.close, "");
  const CompletionRequest r = request(*tok, ChatFormat::Phi4Mini, R"({"type": "function", "function": {"name": "now"}})");
  EXPECT_EQ(r.prompt.back(), id_of(*tok, "<|tool_call|>"));
  std::vector<int32_t> ids;
  ASSERT_TRUE(produce(*r.gen.rules.grammar, *tok, "[{\"name\": \"now\", \"arguments\": {}}]", ids));
  const ParsedReply p = read_tool_calls(r.tools, text_of(*tok, r.prompt, ids));
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "now");
}

// Where the markers are text (the plain vocabulary), "auto" is a grammar, and the prompt is left as it is.
TEST_F(ControlMarkers, TextMarkersGetTheAutoGrammar) {
  JF_SHARED_PATH(path, "models/tokenizers/ggml-vocab-llama-spm.gguf");
  const auto tok = load_tokenizer(path);
  const CompletionRequest a = request(*tok, ChatFormat::MistralV3, "\"auto\"");
  EXPECT_TRUE(a.gen.rules.grammar);
  EXPECT_TRUE(a.tools.prompt_suffix.empty());
  std::vector<int32_t> ids;
  EXPECT_TRUE(produce(*a.gen.rules.grammar, *tok, "Let me see. [TOOL_CALLS] [{\"name\": \"now\", \"arguments\": {}}]", ids));
  ids.clear();
  EXPECT_FALSE(produce(*a.gen.rules.grammar, *tok, "Let me see. [TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {}}]", ids));
}

}  // namespace
}  // namespace jf
