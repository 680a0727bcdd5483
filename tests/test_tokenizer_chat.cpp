// Chat formats: detection from real templates and vocabularies; rendered prompts against hand-written strings.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "formats/gguf.h"
#include "test_support.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace jf {
namespace {


// A small SentencePiece vocabulary holding the special tokens of all three formats.
VocabSpec chat_vocab(const std::string& chat_template, bool with_chat_tokens = true) {
  VocabSpec s;
  s.kind = VocabKind::Spm;
  s.tokens = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "H", "i", "\xE2\x96\x81Hi"};
  s.types = {TokenKind::Unknown, TokenKind::Control, TokenKind::Control, TokenKind::Normal,
             TokenKind::Normal,  TokenKind::Normal,  TokenKind::Normal};
  if (with_chat_tokens) {
    for (const char* t : {"<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|start_header_id|>",
                          "<|end_header_id|>", "<|eot_id|>"}) {
      s.tokens.push_back(t);
      s.types.push_back(TokenKind::Control);
    }
  }
  s.unk = 0, s.bos = 1, s.eos = 2;
  s.chat_template = chat_template;
  return s;
}

const std::vector<ChatMessage> kDialog = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}};

TEST(Chat, Names) {
  for (ChatFormat f : {ChatFormat::ChatML, ChatFormat::Llama3, ChatFormat::Llama2, ChatFormat::Gemma, ChatFormat::Phi3,
                       ChatFormat::Phi4Mini, ChatFormat::DeepSeekR1, ChatFormat::None}) {
    ChatFormat back = ChatFormat::None;
    EXPECT_TRUE(chat_format_from_name(chat_format_name(f), &back));
    EXPECT_EQ(back, f);
  }
  EXPECT_EQ(chat_format_name(ChatFormat::ChatML), "chatml");
  EXPECT_EQ(chat_format_name(ChatFormat::Llama3), "llama3");
  EXPECT_EQ(chat_format_name(ChatFormat::Llama2), "llama2");
  ChatFormat f;
  EXPECT_FALSE(chat_format_from_name("vicuna", &f));
}

TEST(Chat, QwenTemplateIsChatML) {
  JF_SHARED_PATH(path, "models/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja");
  VocabSpec s = chat_vocab(test::read_file(path));
  s.add_bos = false;  // as Qwen2.5's GGUF says
  Tokenizer tok(s);
  EXPECT_EQ(detect_chat_format(tok), ChatFormat::ChatML);

  // No system message: the template's default one is used.
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "Hi"}}, true, tok),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, kDialog, true, tok),
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n"
            "<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "Hi"}, {"assistant", "Yo"}}, false, tok).substr(0, 22),
            "<|im_start|>system\nYou");

  // The rendered text encodes its markers as control tokens.
  std::vector<int32_t> ids = tok.encode(render_chat(ChatFormat::ChatML, {{"user", "Hi"}}, true, tok), false, true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(tok.token_text(ids.front()), "<|im_start|>");
}

TEST(Chat, PlainChatMLHasNoDefaultSystem) {
  Tokenizer tok(chat_vocab("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"));
  EXPECT_EQ(detect_chat_format(tok), ChatFormat::ChatML);
  // This vocabulary asks for BOS, so the prompt starts with it.
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "Hi"}}, true, tok),
            "<s><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(Chat, Llama31TemplateIsLlama3) {
  JF_SHARED_PATH(path, "models/chat-templates/meta-llama-Llama-3.1-8B-Instruct.jinja");
  VocabSpec s = chat_vocab(test::read_file(path));
  s.bos = 9;  // <|begin_of_text|>
  Tokenizer tok(s);
  EXPECT_EQ(detect_chat_format(tok), ChatFormat::Llama3);
  // The template's own rendering: a dated system turn always comes first, holding the system message.
  const std::string dated = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                            "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
  EXPECT_EQ(render_chat(ChatFormat::Llama3, {{"system", " Be brief. "}, {"user", " Hi \n"}}, true, tok),
            dated + "Be brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(render_chat(ChatFormat::Llama3, kDialog, false, tok),
            dated + "Be brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>");
  EXPECT_EQ(render_chat(ChatFormat::Llama3, {{"user", "Hi"}}, true, tok),
            dated + "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(Chat, Llama32TemplateDatesTheConversationToday) {
  // Llama 3.2's template takes the date from strftime_now("%d %b %Y") (llama.cpp: today, local time).
  JF_SHARED_PATH(path, "models/chat-templates/meta-llama-Llama-3.1-8B-Instruct.jinja");
  std::string tmpl = test::read_file(path);
  const std::string fixed = "{%- set date_string = \"26 Jul 2024\" %}";
  ASSERT_NE(tmpl.find(fixed), std::string::npos);
  tmpl.replace(tmpl.find(fixed), fixed.size(),
               "{%- if strftime_now is defined %}{%- set date_string = strftime_now(\"%d %b %Y\") %}{%- else %}"
               "{%- set date_string = \"26 Jul 2024\" %}{%- endif %}");
  VocabSpec s = chat_vocab(tmpl);
  s.bos = 9;
  Tokenizer tok(s);
  auto today = [] {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char b[32];
    std::strftime(b, sizeof b, "%d %b %Y", &local);
    return std::string(b);
  };
  const std::string before = today();
  const std::string got = render_chat(ChatFormat::Llama3, {{"user", "Hi"}}, true, tok);
  const std::string after = today();
  EXPECT_TRUE(got.find("Today Date: " + before + "\n\n") != std::string::npos ||
              got.find("Today Date: " + after + "\n\n") != std::string::npos)
      << got;
  EXPECT_EQ(got.find("26 Jul 2024"), std::string::npos);
}

// DeepSeek-R1 and its Qwen / Llama distills: BOS, the system text, <｜User｜> / <｜Assistant｜> turns, an answer's
// reasoning left out of the history, and "<think>\n" opening the reply when the template has it. Its
// template is found before the ChatML tokens a Qwen vocabulary also has.
TEST(Chat, DeepSeekR1Format) {
  const std::string tmpl =
      "{{bos_token}}{{ns.system_prompt}}{%- for message in messages -%}{%- if message['role'] == 'user' -%}"
      "{{'<｜User｜>' + message['content']}}{%- endif -%}{%- endfor -%}"
      "{%- if add_generation_prompt and not ns.is_tool -%}{{'<｜Assistant｜><think>\\n'}}{%- endif %}";
  VocabSpec v = chat_vocab(tmpl);  // has <|im_start|> / <|im_end|> too
  for (const char* t : {"<｜User｜>", "<｜Assistant｜>", "<｜end▁of▁sentence｜>"}) {
    v.tokens.push_back(t);
    v.types.push_back(TokenKind::Control);
  }
  Tokenizer tok(v);
  EXPECT_EQ(detect_chat_format(tok), ChatFormat::DeepSeekR1);
  std::vector<ChatMessage> dialog = kDialog;
  dialog[2].content = "<think>\nThe user greets.\n</think>\n\nHello!";
  EXPECT_EQ(render_chat(ChatFormat::DeepSeekR1, dialog, true, tok),
            "<s>Be brief.<｜User｜>Hi<｜Assistant｜>\n\nHello!<｜end▁of▁sentence｜><｜User｜>Bye<｜Assistant｜><think>\n");
  // No template: the vocabulary's tokens decide, and the reply is not opened with <think>.
  VocabSpec bare = v;
  bare.chat_template.clear();
  Tokenizer tok2(bare);
  EXPECT_EQ(detect_chat_format(tok2), ChatFormat::DeepSeekR1);
  EXPECT_EQ(render_chat(ChatFormat::DeepSeekR1, {{"user", "Hi"}}, true, tok2), "<s><｜User｜>Hi<｜Assistant｜>");
}

// Mistral's versions, on a whole dialog (system, user, answer, user): the strings llama.cpp's built-in
// mistral-v1 / v3 / v3-tekken / v7 / v7-tekken templates give for it, after BOS. Detection from the markers of
// Mistral's official templates; any other [INST] template stays Llama 2's.
TEST(Chat, MistralFormats) {
  Tokenizer tok(chat_vocab(""));
  const std::pair<ChatFormat, std::string> want[] = {
      {ChatFormat::MistralV1, " [INST] Be brief.\n\nHi [/INST] Hello!</s> [INST] Bye [/INST]"},
      {ChatFormat::MistralV3, "[INST] Be brief.\n\nHi[/INST] Hello!</s>[INST] Bye[/INST]"},
      {ChatFormat::MistralV3Tekken, "[INST]Be brief.\n\nHi[/INST]Hello!</s>[INST]Bye[/INST]"},
      {ChatFormat::MistralV7, "[SYSTEM_PROMPT] Be brief.[/SYSTEM_PROMPT][INST] Hi[/INST] Hello!</s>[INST] Bye[/INST]"},
      {ChatFormat::MistralV7Tekken, "[SYSTEM_PROMPT]Be brief.[/SYSTEM_PROMPT][INST]Hi[/INST]Hello!</s>[INST]Bye[/INST]"},
  };
  for (const auto& [format, text] : want) {
    EXPECT_EQ(render_chat(format, kDialog, true, tok), "<s>" + text) << chat_format_name(format);
    ChatFormat back = ChatFormat::None;
    EXPECT_TRUE(chat_format_from_name(chat_format_name(format), &back));
    EXPECT_EQ(back, format);
  }
  auto detect = [](const std::string& tmpl) { return detect_chat_format(Tokenizer(chat_vocab(tmpl))); };
  EXPECT_EQ(detect("{{ '[SYSTEM_PROMPT]' + m + '[/SYSTEM_PROMPT]' }}{{ '[INST] ' + c + '[/INST]' }}"), ChatFormat::MistralV7);
  // Mistral-Small-3.1's (llama.cpp's models/templates copy): no space after [INST], and a list's '[INST]' alone
  EXPECT_EQ(detect("{{- '[SYSTEM_PROMPT]' + system_message + '[/SYSTEM_PROMPT]' }}{{- '[INST]' + message['content'] + "
                   "'[/INST]' }}{{- '[INST]' }}"),
            ChatFormat::MistralV7Tekken);
  EXPECT_EQ(detect("{{ bos_token }}{{ ' [INST] ' + system_message + '\\n\\n' + c + ' [/INST]' }}"), ChatFormat::MistralV1);
  EXPECT_EQ(detect("{{ '[AVAILABLE_TOOLS]' }}{{ '[INST] ' + c + '[/INST]' }}"), ChatFormat::MistralV3);
  EXPECT_EQ(detect("{{ '[AVAILABLE_TOOLS]' }}{{ \"[INST]\" + c + \"[/INST]\" }}"), ChatFormat::MistralV3Tekken);
  EXPECT_EQ(detect("{{ bos_token + '[INST] ' + c + ' [/INST]' }}"), ChatFormat::Llama2);
}

// Qwen3's template (ChatML with its "last_query_index"): answers before the last user message lose their
// reasoning; an answer after it keeps it in a <think> block (an empty one when it is the last message).
TEST(Chat, Qwen3DropsEarlierReasoning) {
  Tokenizer tok(chat_vocab("{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}<|im_start|>"));
  std::vector<ChatMessage> dialog = kDialog;
  dialog[2].content = "<think>\nThe user greets.\n</think>\n\nHello!";
  EXPECT_EQ(render_chat(ChatFormat::ChatML, dialog, true, tok),
            "<s><|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "Hi"}, {"assistant", "<think>\n\nr\n</think>\n\nA"}}, false, tok),
            "<s><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nr\n</think>\n\nA<|im_end|>\n");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "Hi"}, {"assistant", "A"}}, false, tok),
            "<s><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nA<|im_end|>\n");
  // enable_thinking = false (llama-server's chat_template_kwargs, jf --no-thinking): an empty think block
  // opens the reply when the template has that switch, and changes nothing otherwise.
  Tokenizer switchable(chat_vocab("last_query_index ... {%- if enable_thinking is defined and enable_thinking is false %}"));
  ChatOptions off;
  off.enable_thinking = false;
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "Hi"}}, true, switchable, off),
            "<s><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "Hi"}}, true, switchable),
            "<s><|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_chat(ChatFormat::ChatML, {{"user", "Hi"}}, true, tok, off), render_chat(ChatFormat::ChatML, {{"user", "Hi"}}, true, tok));
  // Plain ChatML (Qwen2.5) keeps an answer as it was sent.
  Tokenizer plain(chat_vocab("<|im_start|>"));
  EXPECT_NE(render_chat(ChatFormat::ChatML, dialog, true, plain).find("<think>\nThe user greets."), std::string::npos);
}

TEST(Chat, Llama2Format) {
  const std::string tmpl =
      "{% for message in messages %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + "
      "message['content'] + ' [/INST]' }}{% endif %}{% endfor %}";
  Tokenizer tok(chat_vocab(tmpl, false));
  EXPECT_EQ(detect_chat_format(tok), ChatFormat::Llama2);
  EXPECT_EQ(render_chat(ChatFormat::Llama2, kDialog, true, tok),
            "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] Bye [/INST]");
  EXPECT_EQ(render_chat(ChatFormat::Llama2, {{"user", " Hi "}}, true, tok), "<s>[INST] Hi [/INST]");
  std::vector<int32_t> ids = tok.encode(render_chat(ChatFormat::Llama2, kDialog, true, tok), false, true);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), 1);
}

TEST(Chat, DetectionFallsBackToVocabulary) {
  EXPECT_EQ(detect_chat_format(Tokenizer(chat_vocab(""))), ChatFormat::ChatML);
  EXPECT_EQ(detect_chat_format(Tokenizer(chat_vocab("", false))), ChatFormat::None);
  VocabSpec l3 = chat_vocab("");
  l3.tokens[7] = "<|im_start_x|>";  // no ChatML markers left, Llama-3 ones remain
  EXPECT_EQ(detect_chat_format(Tokenizer(l3)), ChatFormat::Llama3);
  EXPECT_THROW(render_chat(ChatFormat::None, kDialog, true, Tokenizer(chat_vocab(""))), Error);
}

// A vocabulary with only the given special tokens besides the basic ones.
VocabSpec vocab_with(const std::string& chat_template, std::initializer_list<const char*> specials) {
  VocabSpec s = chat_vocab(chat_template, false);
  for (const char* t : specials) {
    s.tokens.push_back(t);
    s.types.push_back(TokenKind::Control);
  }
  return s;
}

TEST(Chat, GemmaFormat) {
  const std::string tmpl = "{{ bos_token }}{% for message in messages %}<start_of_turn>{{ role }}\n"
                           "{{ message['content'] | trim }}<end_of_turn>\n{% endfor %}";
  Tokenizer tok(vocab_with(tmpl, {"<start_of_turn>", "<end_of_turn>"}));
  EXPECT_EQ(detect_chat_format(tok), ChatFormat::Gemma);
  EXPECT_EQ(detect_chat_format(Tokenizer(vocab_with("", {"<start_of_turn>", "<end_of_turn>"}))), ChatFormat::Gemma);
  // No system turn: the system text opens the first user turn; the assistant is "model"; contents trimmed.
  EXPECT_EQ(render_chat(ChatFormat::Gemma, kDialog, true, tok),
            "<s><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
            "<start_of_turn>model\nHello!<end_of_turn>\n"
            "<start_of_turn>user\nBye<end_of_turn>\n"
            "<start_of_turn>model\n");
  EXPECT_EQ(render_chat(ChatFormat::Gemma, {{"user", " Hi \n"}}, false, tok), "<s><start_of_turn>user\nHi<end_of_turn>\n");
  std::vector<int32_t> ids = tok.encode(render_chat(ChatFormat::Gemma, {{"user", "Hi"}}, true, tok), false, true);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(tok.token_text(ids[1]), "<start_of_turn>");
}

TEST(Chat, Phi3Format) {
  VocabSpec s = vocab_with("", {"<|system|>", "<|user|>", "<|assistant|>", "<|end|>"});
  s.add_bos = false;
  Tokenizer tok(s);
  EXPECT_EQ(detect_chat_format(tok), ChatFormat::Phi3);
  EXPECT_EQ(render_chat(ChatFormat::Phi3, kDialog, true, tok),
            "<|system|>\nBe brief.<|end|>\n<|user|>\nHi<|end|>\n<|assistant|>\nHello!<|end|>\n"
            "<|user|>\nBye<|end|>\n<|assistant|>\n");
}

// Phi-4-mini-instruct's template (tool branch included): the role tag is built from the role, so the template has
// no literal <|user|>, and no newline follows a tag.
const char* kPhi4MiniTemplate =
    "{% for message in messages %}{% if message['role'] == 'system' and 'tools' in message and message['tools'] is "
    "not none %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|tool|>' + message['tools'] + '<|/tool|>' "
    "+ '<|end|>' }}{% else %}{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>' }}{% else %}{{ eos_token }}{% endif %}";

TEST(Chat, Phi4MiniFormat) {
  VocabSpec s = vocab_with(kPhi4MiniTemplate, {"<|system|>", "<|user|>", "<|assistant|>", "<|end|>"});
  s.add_bos = false;
  Tokenizer tok(s);
  EXPECT_EQ(detect_chat_format(tok), ChatFormat::Phi4Mini);
  EXPECT_EQ(render_chat(ChatFormat::Phi4Mini, kDialog, true, tok),
            "<|system|>Be brief.<|end|><|user|>Hi<|end|><|assistant|>Hello!<|end|><|user|>Bye<|end|><|assistant|>");
  EXPECT_EQ(render_chat(ChatFormat::Phi4Mini, {{"user", "Hi"}}, false, tok), "<|user|>Hi<|end|>");
  ChatFormat f = ChatFormat::None;
  ASSERT_TRUE(chat_format_from_name("phi4-mini", &f));
  EXPECT_EQ(f, ChatFormat::Phi4Mini);
}

TEST(Chat, RealVocabularies) {
  JF_SHARED_PATH(phi_path, "models/tokenizers/ggml-vocab-phi-3.gguf");
  auto phi = Tokenizer::from_gguf(GgufFile::open(phi_path)->meta());
  EXPECT_EQ(detect_chat_format(*phi), ChatFormat::Phi3);  // from its template's <|user|> ... <|end|>
  // What Phi-3-mini's template renders for one user message.
  const std::string want = std::string(phi->spec().add_bos ? "<s>" : "") + "<|user|>\nHi<|end|>\n<|assistant|>\n";
  EXPECT_EQ(render_chat(ChatFormat::Phi3, {{"user", "Hi"}}, true, *phi), want);
  const std::vector<int32_t> ids = phi->encode(want, false, true);
  EXPECT_EQ(std::count_if(ids.begin(), ids.end(), [&](int32_t id) { return phi->token_text(id) == "<|user|>"; }), 1);
  bool saw_end = false;  // <|end|> is one token, and generation stops on it
  for (int32_t id : ids) {
    if (phi->token_text(id) != "<|end|>") continue;
    saw_end = true;
    EXPECT_TRUE(phi->is_eog(id));
  }
  EXPECT_TRUE(saw_end);
  JF_SHARED_PATH(gpt2_path, "models/tokenizers/ggml-vocab-gpt-2.gguf");
  auto gpt2 = Tokenizer::from_gguf(GgufFile::open(gpt2_path)->meta());
  EXPECT_EQ(detect_chat_format(*gpt2), ChatFormat::None);
}

}  // namespace
}  // namespace jf
