// OpenAI tools: prompts rendered as the models' Jinja templates render them (expected strings from the
// templates in ../shared/models/chat-templates, rendered with jinja2 and Hugging Face's tojson), calls read
// out of replies whole and streamed, rule prefixes in composed grammars, the grammar of calls, and the
// request fields' checks.
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "base/error.h"
#include "grammar/gbnf_compose.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "model/loader.h"
#include "serve/request.h"
#include "serve/tools.h"
#include "test_support.h"
#include "tools_test_support.h"
#include "tokenizer/chat_tools.h"
#include "tokenizer/tokenizer.h"

namespace jf {
namespace {

using namespace tools_test;

// Tools and calls in Qwen2.5's template (its rendering with jinja2 of the same conversation).
TEST(ToolsRender, Qwen25Template) {
  JF_SHARED_PATH(path, "models/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja");
  VocabSpec s = chat_vocab(test::read_file(path));
  s.add_bos = false;
  Tokenizer tok(s);
  ChatOptions opts;
  opts.tools = kTools;
  const std::vector<ChatMessage> conversation = {
      {"system", "Be brief."},
      {"user", "Weather in Paris, and the time?"},
      assistant_calls("Let me check.", {{"c1", "get_weather", R"({"city":"Paris","days":2})"}, {"c2", "now", "{}"}}),
      tool_result("c1", R"({"temp": 21})"),
      tool_result("c2", "12:00"),
      {"assistant", "Sunny, 21; noon."},
      {"user", "Thanks"}};
  EXPECT_EQ(render_chat(ChatFormat::ChatML, conversation, true, tok, opts),
            "<|im_start|>system\nBe brief.\n\n# Tools\n\n"
            "You may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
            "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \"Météo d'une ville\", "
            "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": "
            "\"integer\", \"minimum\": 1}}, \"required\": [\"city\"]}}}\n"
            "{\"type\": \"function\", \"function\": {\"name\": \"now\", \"parameters\": {\"type\": \"object\", \"properties\": {}}}}\n"
            "</tools>\n\n"
            "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n"
            "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nWeather in Paris, and the time?<|im_end|>\n"
            "<|im_start|>assistant\nLet me check.\n"
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n"
            "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n{\"temp\": 21}\n</tool_response>\n<tool_response>\n12:00\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\nSunny, 21; noon.<|im_end|>\n"
            "<|im_start|>user\nThanks<|im_end|>\n"
            "<|im_start|>assistant\n");

  // No system message: the template's default one, then the tools.
  opts.tools = kNowTool;
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "Time?"}}, true, tok, opts),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\n\n# Tools\n\n"
            "You may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
            "{\"type\": \"function\", \"function\": {\"name\": \"now\", \"parameters\": {\"type\": \"object\", \"properties\": {}}}}\n"
            "</tools>\n\n"
            "For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n"
            "<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\nTime?<|im_end|>\n<|im_start|>assistant\n");

  // Calls and results without tools (tool_choice "none"): the plain system turn.
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "Time?"}, assistant_calls("", {{"c2", "now", "{}"}}), tool_result("c2", "12:00")}, true, tok),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nTime?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n12:00\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ToolsRender, PlainChatMLHasNoDefaultSystem) {
  Tokenizer tok(chat_vocab(""));
  ChatOptions opts;
  opts.tools = kNowTool;
  const std::string text = render_chat(ChatFormat::ChatML, {{"user", "Time?"}}, true, tok, opts);
  const std::string head = "<s><|im_start|>system\n# Tools\n\nYou ";
  const std::string tail = "</tool_call><|im_end|>\n<|im_start|>user\nTime?<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_EQ(text.substr(0, head.size()), head);
  EXPECT_EQ(text.substr(text.size() - tail.size()), tail);
}

// Llama 3.1's template: tools in the first user message (indented by 4), one call per message, results as
// ipython turns holding the text as a JSON string.
TEST(ToolsRender, Llama31Template) {
  JF_SHARED_PATH(path, "models/chat-templates/meta-llama-Llama-3.1-8B-Instruct.jinja");
  VocabSpec s = chat_vocab(test::read_file(path));
  s.bos = 6;  // <|begin_of_text|>
  Tokenizer tok(s);
  ChatOptions opts;
  opts.tools = kTools;
  const std::vector<ChatMessage> conversation = {
      {"system", " Be brief. "},
      {"user", " Weather in Paris? "},
      assistant_calls("", {{"c1", "get_weather", R"({"city": "Paris", "days": 2})"}}),
      tool_result("c1", R"({"temp": 21})")};
  const std::string dated = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n";
  const std::string knowledge = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
  EXPECT_EQ(render_chat(ChatFormat::Llama3, conversation, true, tok, opts),
            dated + "Environment: ipython\n" + knowledge + "Be brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
            "Given the following functions, please respond with a JSON for a function call with its proper arguments "
            "that best answers the given prompt.\n\n"
            "Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}."
            "Do not use variables.\n\n"
            "{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",\n"
            "        \"description\": \"Météo d'une ville\",\n        \"parameters\": {\n            \"type\": \"object\",\n"
            "            \"properties\": {\n                \"city\": {\n                    \"type\": \"string\"\n"
            "                },\n                \"days\": {\n                    \"type\": \"integer\",\n"
            "                    \"minimum\": 1\n                }\n            },\n            \"required\": [\n"
            "                \"city\"\n            ]\n        }\n    }\n}\n\n"
            "{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"now\",\n        \"parameters\": {\n"
            "            \"type\": \"object\",\n            \"properties\": {}\n        }\n    }\n}\n\n"
            "Weather in Paris?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 2}}<|eot_id|>"
            "<|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temp\\\": 21}\"<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");

  EXPECT_EQ(render_chat(ChatFormat::Llama3, {{"user", "Time?"}, assistant_calls("", {{"c2", "now", "{}"}}), tool_result("c2", "12:00")}, true, tok),
            dated + knowledge + "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nTime?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"now\", \"parameters\": {}}<|eot_id|>"
            "<|start_header_id|>ipython<|end_header_id|>\n\n\"12:00\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");

  // What the template refuses: two calls in one message; tools without a user message to hold them.
  EXPECT_THROW(render_chat(ChatFormat::Llama3, {{"user", "x"}, assistant_calls("", {{"a", "now", "{}"}, {"b", "now", "{}"}})}, true, tok), Error);
  EXPECT_THROW(render_chat(ChatFormat::Llama3, {{"system", "x"}}, true, tok, opts), Error);
}

TEST(ToolsRender, FormatsWithoutToolSyntaxRefuse) {
  Tokenizer tok(chat_vocab(""));
  ChatOptions opts;
  opts.tools = kNowTool;
  for (ChatFormat f : {ChatFormat::Gemma, ChatFormat::Llama2, ChatFormat::Phi3, ChatFormat::DeepSeekR1, ChatFormat::MistralV1}) {
    EXPECT_FALSE(chat_format_has_tools(f));
    try {
      render_chat(f, {{"user", "x"}}, true, tok, opts);
      ADD_FAILURE() << chat_format_name(f);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("has no tool syntax"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(render_chat(ChatFormat::Gemma, {{"user", "x"}}, true, tok));  // no tools: as before
}

const std::vector<std::string> kNames = {"get_weather", "now"};

TEST(ToolsParse, ChatMLBlocks) {
  const ParsedReply p = parse_tool_calls(ChatFormat::ChatML,
                                         "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n"
                                         "</tool_call>\n<tool_call>{\"name\":\"now\",\"arguments\":{}}</tool_call>\n",
                                         kNames);
  EXPECT_EQ(p.content, "Let me check.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris","days":2})");  // compact, in the model's key order
  EXPECT_EQ(p.calls[1].name, "now");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  const ParsedReply only = parse_tool_calls(ChatFormat::ChatML, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>", kNames);
  EXPECT_EQ(only.content, "");
  EXPECT_EQ(only.calls.size(), 1u);
  // Anything but well-formed calls of known tools after the text: the whole reply is text.
  for (const std::string reply :
       {"Just text.", "<tool_call>\n{\"name\": \"rm\", \"arguments\": {}}\n</tool_call>",
        "<tool_call>\n{\"name\": \"now\", \"arguments\": {}\n</tool_call>", "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}",
        "<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call> and more", "<tool_call>{\"name\": \"now\", \"arguments\": 3}</tool_call>",
        "<tool_call>{\"name\": \"now\", \"arguments\": {}, \"x\": 1}</tool_call>"}) {
    const ParsedReply r = parse_tool_calls(ChatFormat::ChatML, reply, kNames);
    EXPECT_EQ(r.content, reply);
    EXPECT_TRUE(r.calls.empty()) << reply;
  }
}

TEST(ToolsParse, Llama3WholeReply) {
  for (const std::string reply : {"{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}",
                                  "\n<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}} ",
                                  "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"}) {
    const ParsedReply p = parse_tool_calls(ChatFormat::Llama3, reply, kNames);
    EXPECT_EQ(p.content, "") << reply;
    ASSERT_EQ(p.calls.size(), 1u) << reply;
    EXPECT_EQ(p.calls[0].name, "get_weather");
    EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris"})");
  }
  for (const std::string reply : {"It is sunny.", "{\"name\": \"get_weather\"}", "{\"a\": 1}", "Call: {\"name\": \"now\", \"parameters\": {}}"}) {
    const ParsedReply p = parse_tool_calls(ChatFormat::Llama3, reply, kNames);
    EXPECT_EQ(p.content, reply);
    EXPECT_TRUE(p.calls.empty()) << reply;
  }
  EXPECT_THROW(parse_tool_calls(ChatFormat::Gemma, "x", kNames), Error);
}

// Streamed in pieces of every size, a reply gives the text and calls the whole reply gives.
TEST(ToolsParse, StreamedEqualsWhole) {
  const std::vector<std::pair<ChatFormat, std::string>> replies = {
      {ChatFormat::ChatML, "Let me check. \n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"},
      {ChatFormat::ChatML, "No <tool_ call here < tool_call>, <tool_call"},
      {ChatFormat::ChatML, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", "
                           "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"},
      {ChatFormat::ChatML, "Broken <tool_call>{\"name\": \"now\"}</tool_call>  "},
      {ChatFormat::Llama3, " {\"name\": \"now\", \"parameters\": {}}"},
      {ChatFormat::Llama3, "<|python_tag|>{\"name\": \"now\", \"parameters\": {}}"},
      {ChatFormat::Llama3, "<|python_tag|> not a call"},
      {ChatFormat::Llama3, "  Sunny {\"name\": \"now\", \"parameters\": {}}"},
      {ChatFormat::Llama3, "   "}};
  for (const auto& [format, reply] : replies) {
    ToolsRequest tools;
    tools.format = format, tools.names = kNames, tools.choice = ToolsRequest::Choice::Auto;
    const ParsedReply whole = parse_tool_calls(format, reply, kNames);
    for (size_t step = 1; step <= 4; step++) {
      ToolCallFilter filter(tools);
      std::string sent;
      int tokens = 0;
      for (size_t at = 0; at < reply.size(); at += step) {
        const ToolCallFilter::Out o = filter.feed(reply.substr(at, step), 1);
        sent += o.text, tokens += o.tokens;
        EXPECT_LE(sent.size(), whole.content.size()) << reply;
      }
      std::vector<ChatToolCall> calls;
      const ToolCallFilter::Out o = filter.finish(calls);
      sent += o.text, tokens += o.tokens;
      EXPECT_EQ(sent, whole.content) << reply << " in pieces of " << step;
      EXPECT_EQ(tokens, static_cast<int>((reply.size() + step - 1) / step)) << reply;
      ASSERT_EQ(calls.size(), whole.calls.size()) << reply;
      for (size_t i = 0; i < calls.size(); i++) {
        EXPECT_EQ(calls[i].name, whole.calls[i].name);
        EXPECT_EQ(calls[i].arguments, whole.calls[i].arguments);
        EXPECT_EQ(calls[i].id.substr(0, 5), "call_");
        EXPECT_EQ(calls[i].id.size(), 29u);
      }
    }
  }
}

TEST(ToolsGrammar, PrefixRenamesRulesOnly) {
  const std::string gbnf =
      "root ::= item (\",\" ws item)*  # a comment naming root\n"
      "item ::= \"root item\" | [a-z_-]{2,3} | \"\\\"ws\\\"\" | [\\]ws] ws\n"
      "ws ::= [ ]?\n";
  const std::string prefixed = prefix_gbnf_rules(gbnf, "t0-");
  EXPECT_EQ(prefixed,
            "t0-root ::= t0-item (\",\" t0-ws t0-item)*  # a comment naming root\n"
            "t0-item ::= \"root item\" | [a-z_-]{2,3} | \"\\\"ws\\\"\" | [\\]ws] t0-ws\n"
            "t0-ws ::= [ ]?\n");
  // A generated grammar keeps its language under the prefix.
  nlohmann::ordered_json schema = nlohmann::ordered_json::parse(R"({"type": "object", "properties": {"when": {"type": "string",
      "format": "date"}, "n": {"type": "integer", "minimum": 0, "maximum": 50}}, "required": ["when", "n"]})");
  const std::string original = json_schema_to_gbnf(schema);
  const Grammar a = Grammar::parse(original), b = Grammar::parse(prefix_gbnf_rules(original, "p-"), "p-root");
  GrammarMatcher ma(a), mb(b);
  for (const std::string text : {R"({"when": "2024-02-29", "n": 7})", R"({"when": "2023-02-29", "n": 7})", R"({"n": 7})", R"({"when":"2000-01-01","n":50})"})
    EXPECT_EQ(ma.accepts(text), mb.accepts(text)) << text;
  EXPECT_TRUE(mb.accepts(R"({"when": "2024-02-29", "n": 7})"));
}

TEST(ToolsGrammar, RepliesAreCallsOfTheTools) {
  const std::vector<std::pair<std::string, std::string>> tools = {
      {"get_weather", json_schema_to_gbnf(nlohmann::json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}},
          "required": ["city"], "additionalProperties": false})"))},
      {"now", json_schema_to_gbnf(nlohmann::json::parse(R"({"type": "object", "properties": {}, "additionalProperties": false})"))}};
  const std::string call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  const std::string now = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
  const Grammar several = Grammar::parse(tool_calls_gbnf(tool_call_syntax(ChatFormat::ChatML), tools, true));
  const Grammar one = Grammar::parse(tool_calls_gbnf(tool_call_syntax(ChatFormat::ChatML), tools, false));
  GrammarMatcher ms(several), m1(one);
  EXPECT_TRUE(ms.accepts(call));
  EXPECT_TRUE(ms.accepts(call + "\n" + now));
  EXPECT_TRUE(m1.accepts(now));
  EXPECT_FALSE(m1.accepts(call + "\n" + now));
  for (const std::string& bad : std::vector<std::string>{"Sure. " + call, "<tool_call>\n{\"name\": \"rm\", \"arguments\": {}}\n</tool_call>",
                                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
                                "<tool_call>\n{\"name\": \"now\", \"arguments\": {\"x\": 1}}\n</tool_call>", call + "\n"})
    EXPECT_FALSE(ms.accepts(bad)) << bad;
  const Grammar llama = Grammar::parse(tool_calls_gbnf(tool_call_syntax(ChatFormat::Llama3), tools, false));
  GrammarMatcher ml(llama);
  EXPECT_TRUE(ml.accepts("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}"));
  EXPECT_FALSE(ml.accepts("{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}"));
}

class ToolsRequests : public ::testing::Test {
 protected:
  void SetUp() override {
    JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
    tok = load_tokenizer(path);
    ctx.tokenizer = tok.get();
    ctx.chat_format = ChatFormat::ChatML;
    ctx.context = 4096;
    ctx.vocab_size = tok->n_vocab();
  }
  CompletionRequest parse(const std::string& body) { return parse_completion_request(nlohmann::json::parse(body), true, ctx, &body); }
  void refused(const std::string& body, const std::string& param, const std::string& needle, bool chat = true) {
    try {
      parse_completion_request(nlohmann::json::parse(body), chat, ctx, &body);
      ADD_FAILURE() << body << " was accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status, 400) << body;
      EXPECT_EQ(e.param, param) << body << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << body << ": " << e.what();
    }
  }
  std::unique_ptr<Tokenizer> tok;
  ApiContext ctx;
};

const std::string kHi = R"("messages": [{"role": "user", "content": "Hi"}])";
const std::string kWeather = R"("tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"]}}}, {"type": "function", "function": {"name": "now"}}])";

TEST_F(ToolsRequests, ChoicesSetTheGrammarAndTheParsing) {
  const CompletionRequest automatic = parse("{" + kHi + ", " + kWeather + "}");
  EXPECT_EQ(automatic.tools.choice, ToolsRequest::Choice::Auto);
  EXPECT_EQ(automatic.tools.names, (std::vector<std::string>{"get_weather", "now"}));
  EXPECT_TRUE(automatic.tools.parse());
  EXPECT_TRUE(automatic.gen.rules.grammar);  // text, then optionally calls by their schemas
  // "auto" with the client's response_format: either its JSON or calls; "required" takes none.
  EXPECT_TRUE(parse("{" + kHi + ", " + kWeather + R"(, "response_format": {"type": "json_object"}})").gen.rules.grammar);
  const CompletionRequest required = parse("{" + kHi + ", " + kWeather + R"(, "tool_choice": "required", "parallel_tool_calls": false})");
  EXPECT_TRUE(required.gen.rules.grammar);
  EXPECT_FALSE(required.tools.parallel);
  const CompletionRequest named = parse("{" + kHi + ", " + kWeather + R"(, "tool_choice": {"type": "function", "function": {"name": "now"}}})");
  EXPECT_EQ(named.tools.choice, ToolsRequest::Choice::Named);
  EXPECT_TRUE(named.gen.rules.grammar);
  const CompletionRequest none = parse("{" + kHi + ", " + kWeather + R"(, "tool_choice": "none"})");
  EXPECT_FALSE(none.tools.parse());
  EXPECT_LT(none.prompt.size(), automatic.prompt.size());  // no tools in the prompt
  // A conversation with a call and its result (content null beside tool_calls).
  const CompletionRequest round = parse(R"({"messages": [{"role": "user", "content": "Time?"}, {"role": "assistant", "content": null,
      "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "12:00"}], )" + kWeather + "}");
  EXPECT_GT(round.prompt.size(), automatic.prompt.size());
}

TEST_F(ToolsRequests, BadFieldsAreNamed) {
  const std::string head = "{" + kHi + ", ";
  refused(head + R"("tools": {"a": 1}})", "tools", "array");
  refused(head + R"("tools": [{"type": "retrieval"}]})", "tools[0].type", "function");
  refused(head + R"("tools": [{"type": "function", "function": {"name": "a b"}}]})", "tools[0].function.name", "letters");
  refused(head + R"("tools": [{"type": "function", "function": {"name": "f", "parameters": "x"}}]})", "tools[0].function.parameters", "object");
  refused(head + R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}]})", "tools[0].function.parameters", "type \"object\"");
  refused(head + R"("tools": [{"type": "function", "function": {"name": "f"}}, {"type": "function", "function": {"name": "f"}}]})", "tools", "two tools");
  refused(head + kWeather + R"(, "tool_choice": {"type": "function", "function": {"name": "nope"}}})", "tool_choice", "not among the tools");
  refused(head + kWeather + R"(, "tool_choice": "sometimes"})", "tool_choice", "must be");
  refused(head + R"("tool_choice": "required"})", "tool_choice", "needs 'tools'");
  refused(head + kWeather + R"(, "parallel_tool_calls": "yes"})", "parallel_tool_calls", "true or false");
  refused(head + R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "patternProperties": {}}}}],
      "tool_choice": "required"})", "tools[0].function.parameters", "unsupported keyword 'patternProperties'");
  refused(head + kWeather + R"(, "tool_choice": "required", "response_format": {"type": "json_object"}})", "tool_choice", "response_format");
  refused(head + R"("functions": [{"name": "f"}]})", "functions", "'tools'");
  refused(head + R"("function_call": "auto"})", "function_call", "'tools'");
  refused(R"({"prompt": "x", "tools": [{"type": "function", "function": {"name": "f"}}]})", "tools", "chat/completions", false);
  // Messages: a tool message answers a call just made; calls belong to assistants and carry JSON arguments.
  refused(R"({"messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "1"}]})", "messages[1].tool_call_id", "tool_call_id");
  refused(R"({"messages": [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c", "content": "1"}]})", "messages[1]", "follow");
  refused(R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "b", "content": "1"}]})", "messages[1].tool_call_id", "no call");
  refused(R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{x"}}]}]})",
          "messages[0].tool_calls[0].function.arguments", "JSON object");
  refused(R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})", "messages[0].tool_calls", "assistant");
  refused(R"({"messages": [{"role": "assistant", "content": null}]})", "messages[0].content", "required");
  // A format without tool syntax.
  ctx.chat_format = ChatFormat::Gemma;
  refused(head + kWeather + "}", "tools", "has no tool syntax");
  refused(R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]}]})", "messages[0]", "has no tool syntax");
  EXPECT_FALSE(parse(head + kWeather + R"(, "tool_choice": "none"})").tools.parse());
}

}  // namespace
}  // namespace jf
