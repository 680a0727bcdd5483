// Tools in the Mistral and Phi-4-mini formats: prompts as their official templates render them (expected
// strings written by hand from the templates: Mistral-7B-Instruct-v0.3's, Mistral-Nemo-Instruct-2407's and
// Mistral-Small-3.1-24B-Instruct-2503's as llama.cpp's models/templates keep them, Phi-4-mini-instruct's with
// its model card's tools), the calls those prompts hold read back, and streamed replies.
#include "base/error.h"
#include "serve/tools.h"
#include "test_support.h"
#include "tokenizer/chat_tools.h"
#include "tools_test_support.h"

namespace jf {
namespace {

using namespace tools_test;

const std::string kWeatherId = "call_abcdefghijklmnopqrstuvwx", kNowId = "call_ABCDEFGHIJKLMNOPQRSTUVWX";

// A call of each tool, then their results: the conversation ends with a result (the model answers next).
std::vector<ChatMessage> calls_conversation() {
  return {{"system", "Be brief."},
          {"user", "Weather in Paris, and the time?"},
          assistant_calls("Let me check.", {{kWeatherId, "get_weather", R"({"city":"Paris","days":2})"}, {kNowId, "now", "{}"}}),
          tool_result(kWeatherId, R"({"temp": 21})"),
          tool_result(kNowId, "12:00")};
}

// A plain exchange, then a user message that ends the conversation.
std::vector<ChatMessage> user_last_conversation() {
  return {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", " Hello!  "}, {"user", "Time?"}};
}

std::string render(ChatFormat f, const std::vector<ChatMessage>& messages, const char* tools) {
  Tokenizer tok(chat_vocab(""));
  ChatOptions opts;
  opts.tools = tools;
  return render_chat(f, messages, true, tok, opts);
}

// The tools as Mistral's templates list them: {"type": "function", "function": {...}}, strings raw.
const std::string kMistralTools =
    "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Météo d'une ville\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": "
    "\"integer\", \"minimum\": 1}}, \"required\": [\"city\"]}}}, {\"type\": \"function\", \"function\": {\"name\": \"now\", "
    "\"parameters\": {\"type\": \"object\", \"properties\": {}}}}";
const std::string kMistralNow =
    "{\"type\": \"function\", \"function\": {\"name\": \"now\", \"parameters\": {\"type\": \"object\", \"properties\": {}}}}";
// The calls with the ids' last 9 characters.
const std::string kMistralCalls =
    "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}, \"id\": \"pqrstuvwx\"}, "
    "{\"name\": \"now\", \"arguments\": {}, \"id\": \"PQRSTUVWX\"}]</s>";

// Mistral-7B-Instruct-v0.3: spaces after the tags; the system message opens the last user message only when
// that message ends the conversation (so after a tool result it is not written at all).
TEST(ToolsRender, MistralV3Template) {
  EXPECT_EQ(render(ChatFormat::MistralV3, calls_conversation(), kTools),
            "<s>[AVAILABLE_TOOLS] [" + kMistralTools + "][/AVAILABLE_TOOLS][INST] Weather in Paris, and the time?[/INST]"
            "[TOOL_CALLS] [" + kMistralCalls +
            "[TOOL_RESULTS] {\"content\": {\"temp\": 21}, \"call_id\": \"pqrstuvwx\"}[/TOOL_RESULTS]"
            "[TOOL_RESULTS] {\"content\": 12:00, \"call_id\": \"PQRSTUVWX\"}[/TOOL_RESULTS]");
  EXPECT_EQ(render(ChatFormat::MistralV3, user_last_conversation(), kNowTool),
            "<s>[INST] Hi[/INST] Hello!</s>[AVAILABLE_TOOLS] [" + kMistralNow + "][/AVAILABLE_TOOLS][INST] Be brief.\n\nTime?[/INST]");
  // A system message later on is what the template refuses.
  EXPECT_THROW(render(ChatFormat::MistralV3, {{"user", "x"}, {"system", "y"}}, kNowTool), Error);
}

// Mistral-Nemo (v3 tekken): no spaces after the tags, answers as they are.
TEST(ToolsRender, MistralV3TekkenTemplate) {
  EXPECT_EQ(render(ChatFormat::MistralV3Tekken, calls_conversation(), kTools),
            "<s>[AVAILABLE_TOOLS][" + kMistralTools + "][/AVAILABLE_TOOLS][INST]Weather in Paris, and the time?[/INST]"
            "[TOOL_CALLS][" + kMistralCalls +
            "[TOOL_RESULTS]{\"content\": {\"temp\": 21}, \"call_id\": \"pqrstuvwx\"}[/TOOL_RESULTS]"
            "[TOOL_RESULTS]{\"content\": 12:00, \"call_id\": \"PQRSTUVWX\"}[/TOOL_RESULTS]");
  EXPECT_EQ(render(ChatFormat::MistralV3Tekken, user_last_conversation(), kNowTool),
            "<s>[INST]Hi[/INST] Hello!  </s>[AVAILABLE_TOOLS][" + kMistralNow + "][/AVAILABLE_TOOLS][INST]Be brief.\n\nTime?[/INST]");
}

const std::string kParallel =
    "You are a helpful assistant that can call tools. If you call one or more tools, format them in a single JSON "
    "array or objects, where each object is a tool call, not as separate objects outside of an array or multiple "
    "arrays. Use the format [{\"name\": tool call name, \"arguments\": tool call arguments}, additional tool calls] "
    "if you call more than one tool. If you call tools, do not attempt to interpret them or otherwise provide a "
    "response until you receive a tool call result that you can interpret for the user.";

// Mistral-Small-3.1 (v7 tekken): the system prompt's tag with the parallel-call instructions first, spaces
// after the tool tags only.
TEST(ToolsRender, MistralV7TekkenTemplate) {
  EXPECT_EQ(render(ChatFormat::MistralV7Tekken, calls_conversation(), kTools),
            "<s>[SYSTEM_PROMPT]" + kParallel + "\n\nBe brief.[/SYSTEM_PROMPT][AVAILABLE_TOOLS] [" + kMistralTools +
            "][/AVAILABLE_TOOLS][INST]Weather in Paris, and the time?[/INST][TOOL_CALLS] [" + kMistralCalls +
            "[TOOL_RESULTS] {\"content\": {\"temp\": 21}, \"call_id\": \"pqrstuvwx\"}[/TOOL_RESULTS]"
            "[TOOL_RESULTS] {\"content\": 12:00, \"call_id\": \"PQRSTUVWX\"}[/TOOL_RESULTS]");
  EXPECT_EQ(render(ChatFormat::MistralV7Tekken, {{"user", "Time?"}}, kNowTool),
            "<s>[SYSTEM_PROMPT]" + kParallel + "[/SYSTEM_PROMPT][AVAILABLE_TOOLS] [" + kMistralNow +
            "][/AVAILABLE_TOOLS][INST]Time?[/INST]");
  // v7 (not tekken): jf's v7 spaces after [INST] and the system tag, and before answers.
  EXPECT_EQ(render(ChatFormat::MistralV7, user_last_conversation(), kNowTool),
            "<s>[SYSTEM_PROMPT] " + kParallel + "\n\nBe brief.[/SYSTEM_PROMPT][INST] Hi[/INST]  Hello!  </s>[AVAILABLE_TOOLS] [" +
            kMistralNow + "][/AVAILABLE_TOOLS][INST] Time?[/INST]");
}

TEST(ToolsRender, MistralCallIds) {
  EXPECT_EQ(mistral_call_id(kWeatherId), "pqrstuvwx");
  EXPECT_EQ(mistral_call_id("abc123XYZ"), "abc123XYZ");
  EXPECT_EQ(mistral_call_id("c-2"), "0000000c2");
}

// Phi-4-mini: the functions (json.dumps: ASCII escapes) between <|tool|> and <|/tool|> in the system turn,
// the calls as the model writes them after the text, results as the template's <|tool|> turns.
TEST(ToolsRender, Phi4MiniTemplate) {
  VocabSpec s = chat_vocab("");
  s.add_bos = false;
  Tokenizer tok(s);
  ChatOptions opts;
  opts.tools = kTools;
  EXPECT_EQ(render_chat(ChatFormat::Phi4Mini, calls_conversation(), true, tok, opts),
            "<|system|>Be brief.<|tool|>[{\"name\": \"get_weather\", \"description\": \"M\\u00e9t\\u00e9o d'une ville\", "
            "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": "
            "\"integer\", \"minimum\": 1}}, \"required\": [\"city\"]}}, {\"name\": \"now\", \"parameters\": {\"type\": \"object\", "
            "\"properties\": {}}}]<|/tool|><|end|><|user|>Weather in Paris, and the time?<|end|>"
            "<|assistant|>Let me check.<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}, "
            "{\"name\": \"now\", \"arguments\": {}}]<|/tool_call|><|end|><|tool|>{\"temp\": 21}<|end|><|tool|>12:00<|end|><|assistant|>");
  // No system message: the model card's.
  opts.tools = kNowTool;
  EXPECT_EQ(render_chat(ChatFormat::Phi4Mini, {{"user", "Time?"}}, true, tok, opts),
            "<|system|>You are a helpful assistant with some tools.<|tool|>[{\"name\": \"now\", \"parameters\": {\"type\": "
            "\"object\", \"properties\": {}}}]<|/tool|><|end|><|user|>Time?<|end|><|assistant|>");
}

const std::vector<std::string> kNames = {"get_weather", "now"};

// What a template writes as an assistant's calls reads back as those calls.
TEST(ToolsParse, RenderedCallsReadBack) {
  const std::vector<ChatMessage> conversation = calls_conversation();
  for (ChatFormat f : {ChatFormat::MistralV3, ChatFormat::MistralV3Tekken, ChatFormat::MistralV7, ChatFormat::Phi4Mini}) {
    const std::string prompt = render(f, {conversation[0], conversation[1], conversation[2]}, kTools);
    const bool phi = f == ChatFormat::Phi4Mini;
    const size_t at = prompt.rfind(phi ? "<|tool_call|>" : "[TOOL_CALLS]");
    const size_t end = phi ? prompt.rfind("<|/tool_call|>") + 14 : prompt.rfind("]") + 1;
    ASSERT_NE(at, std::string::npos);
    const std::string reply = "I will look. " + prompt.substr(at, end - at);
    const ParsedReply p = parse_tool_calls(f, reply, kNames);
    EXPECT_EQ(p.content, "I will look.") << chat_format_name(f);
    ASSERT_EQ(p.calls.size(), 2u) << reply;
    EXPECT_EQ(p.calls[0].name, "get_weather");
    EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris","days":2})");
    EXPECT_EQ(p.calls[1].name, "now");
  }
  // Not calls: an unknown tool, an id where the format has none, a missing bracket, text after the calls.
  for (const auto& [f, reply] : std::vector<std::pair<ChatFormat, std::string>>{
           {ChatFormat::MistralV3, "[TOOL_CALLS] [{\"name\": \"rm\", \"arguments\": {}}]"},
           {ChatFormat::Phi4Mini, "<|tool_call|>[{\"name\": \"now\", \"arguments\": {}, \"id\": \"abcdefghi\"}]<|/tool_call|>"},
           {ChatFormat::Phi4Mini, "<|tool_call|>[{\"name\": \"now\", \"arguments\": {}}]"},
           {ChatFormat::MistralV3Tekken, "[TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}}] and then"}}) {
    const ParsedReply p = parse_tool_calls(f, reply, kNames);
    EXPECT_EQ(p.content, reply);
    EXPECT_TRUE(p.calls.empty()) << reply;
  }
}

// With the marker a control token, the text shows the bare array: the calls are the first "[" after which
// everything is calls.
TEST(ToolsParse, HiddenMarkerArrays) {
  ToolCallSyntax syn = tool_call_syntax(ChatFormat::MistralV3);
  syn.open = " ", syn.hidden_marker = "[TOOL_CALLS]";
  const ParsedReply p = parse_tool_calls(syn, "See [1] and [2]. [{\"name\": \"now\", \"arguments\": {}, \"id\": \"abcdefghi\"}]", kNames);
  EXPECT_EQ(p.content, "See [1] and [2].");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "now");
  EXPECT_EQ(tool_call_free_length(syn, "See [1] and"), 3u);
  EXPECT_EQ(parse_tool_calls(syn, "Just [text].", kNames).content, "Just [text].");
}

// Streamed in pieces of every size, a reply gives the text and calls the whole reply gives.
TEST(ToolsParse, ArrayFormatsStreamedEqualWhole) {
  ToolCallSyntax hidden = tool_call_syntax(ChatFormat::Phi4Mini);
  hidden.open = "", hidden.close = "", hidden.hidden_marker = "<|tool_call|>";
  const std::vector<std::pair<ToolCallSyntax, std::string>> replies = {
      {tool_call_syntax(ChatFormat::MistralV3), "Sure. [TOOL_CALLS] [{\"name\": \"now\", \"arguments\": {}, \"id\": \"abcdefghi\"}]"},
      {tool_call_syntax(ChatFormat::MistralV3Tekken), "[TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"get_weather\", "
                                                      "\"arguments\": {\"city\": \"Oslo\"}}]"},
      {tool_call_syntax(ChatFormat::MistralV3), "No [TOOL_ CALLS] here [TOOL"},
      {tool_call_syntax(ChatFormat::Phi4Mini), "Hm <|tool_call|>[{\"name\": \"now\", \"arguments\": {}}]<|/tool_call|>"},
      {tool_call_syntax(ChatFormat::Phi4Mini), "<|tool_call|>[{\"name\": \"now\"}]<|/tool_call|> "},
      {hidden, "A [b] c [{\"name\": \"now\", \"arguments\": {}}]"},
      {hidden, "A [b] c [{\"name\": \"now\""}};
  for (const auto& [syntax, reply] : replies) {
    ToolsRequest tools;
    tools.syntax = syntax, tools.names = kNames, tools.choice = ToolsRequest::Choice::Auto;
    const ParsedReply whole = parse_tool_calls(syntax, reply, kNames);
    for (size_t step = 1; step <= 3; step++) {
      ToolCallFilter filter(tools);
      std::string sent;
      for (size_t at = 0; at < reply.size(); at += step) {
        sent += filter.feed(reply.substr(at, step), 1).text;
        EXPECT_LE(sent.size(), whole.content.size()) << reply;
      }
      std::vector<ChatToolCall> calls;
      sent += filter.finish(calls).text;
      EXPECT_EQ(sent, whole.content) << reply << " in pieces of " << step;
      ASSERT_EQ(calls.size(), whole.calls.size()) << reply;
      for (size_t i = 0; i < calls.size(); i++) EXPECT_EQ(calls[i].arguments, whole.calls[i].arguments);
    }
  }
}

}  // namespace
}  // namespace jf
