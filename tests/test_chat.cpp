// A conversation on one kept KV cache (src/chat): every answer equals a generation from scratch on the
// re-rendered conversation, while only the new text is prefilled; full contexts drop the oldest turns;
// interrupted answers are kept; conversations save and load.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "chat/conversation.h"
#include "model/loader.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace jf {
namespace {

using chat::Conversation;
using chat::ConversationOptions;
using chat::TurnStats;

struct Stories {
  LoadedModel lm;
  explicit Stories(const std::string& path) : lm(load_model(path)) {}
};

ConversationOptions sampled_options(int max_new, uint64_t seed) {
  ConversationOptions o;
  o.format = ChatFormat::ChatML;  // stories260K has no template: ChatML's markers are spelled out as text
  o.gen.max_new_tokens = max_new;
  o.gen.sampling.temperature = 0.8f;
  o.gen.sampling.top_k = 40;
  o.gen.sampling.top_p = 0.95f;
  o.gen.sampling.min_p = 0.05f;
  o.gen.sampling.seed = seed;
  o.fixed_seed = true;
  return o;
}

DecoderOptions decoder(const std::string& spec) { return parse_decoder_spec(spec, DecoderOptions{}); }

// What `jf generate --chat` computes for the same conversation: a fresh session, plain AR decoding.
std::vector<int32_t> from_scratch(const Stories& s, const Conversation& conv, const std::vector<ChatMessage>& msgs) {
  Session fresh(*s.lm.model, conv.context_size());
  ArDecoder ar;
  GenerationConfig cfg = conv.options().gen;
  return ar.generate(fresh, conv.render(msgs), cfg).tokens;
}

std::vector<ChatMessage> without_last(const std::vector<ChatMessage>& m) { return {m.begin(), m.end() - 1}; }

std::string collect(Conversation& conv, const std::string& user, TurnStats* st) {
  std::string text;
  *st = conv.answer(user, [&](const std::string& piece) { text += piece; });
  return text;
}

TEST(Chat, NextTurnPrefillsOnlyTheNewTextAndEqualsAGenerationFromScratch) {
  JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
  Stories s(path);
  for (const std::string spec : {"ar", "pld", "lookahead:W=2:N=3:G=2"}) {
    SCOPED_TRACE(spec);
    Conversation conv(*s.lm.model, *s.lm.tokenizer, 512, DType::F32, sampled_options(40, 7), decoder(spec));
    conv.set_system("You tell stories.");
    TurnStats t1, t2;
    const std::string a1 = collect(conv, "Once upon a time there was a cat", &t1);
    EXPECT_EQ(t1.reused_tokens, 0);
    EXPECT_EQ(t1.prefilled_tokens, t1.prompt_tokens - 1);
    EXPECT_EQ(t1.result.tokens, from_scratch(s, conv, without_last(conv.messages())));
    EXPECT_EQ(conv.messages().back().content, a1);

    collect(conv, "What did the cat do next?", &t2);
    // Everything before the new message came from the cache: at least the whole first prompt.
    EXPECT_GE(t2.reused_tokens, t1.prompt_tokens - 1);
    EXPECT_EQ(t2.prefilled_tokens, t2.prompt_tokens - 1 - t2.reused_tokens);
    EXPECT_LT(t2.prefilled_tokens, t2.prompt_tokens - t1.prompt_tokens);
    EXPECT_GT(t2.result.stats.counters["prompt_tokens_reused"], 0);
    EXPECT_EQ(t2.result.tokens, from_scratch(s, conv, without_last(conv.messages())));
  }
}

TEST(Chat, AFreshSeedPerAnswerUnlessOneIsGiven) {
  JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
  Stories s(path);
  ConversationOptions o = sampled_options(30, 7);
  o.fixed_seed = false;
  Conversation conv(*s.lm.model, *s.lm.tokenizer, 512, DType::F32, o, decoder("ar"));
  TurnStats a, b;
  collect(conv, "Tell me a story", &a);
  conv.reset();
  collect(conv, "Tell me a story", &b);
  EXPECT_NE(a.seed, b.seed);
  EXPECT_NE(a.result.tokens, b.result.tokens);  // 30 sampled tokens at T=0.8 from different seeds
  // The reported seed reproduces the answer.
  ConversationOptions fixed = sampled_options(30, b.seed);
  Conversation again(*s.lm.model, *s.lm.tokenizer, 512, DType::F32, fixed, decoder("pld"));
  TurnStats c;
  collect(again, "Tell me a story", &c);
  EXPECT_EQ(c.result.tokens, b.result.tokens);
}

TEST(Chat, AFullContextDropsTheOldestTurnsAndKeepsTheSystemText) {
  JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
  Stories s(path);
  Conversation conv(*s.lm.model, *s.lm.tokenizer, 160, DType::F32, sampled_options(40, 3), decoder("pld"));
  conv.set_system("Stories about Lily.");
  int dropped = 0;
  for (int turn = 0; turn < 6; turn++) {
    TurnStats t;
    collect(conv, "Tell me what happened after that, please.", &t);
    dropped += t.dropped_messages;
    EXPECT_LE(t.prompt_tokens + 40, 160);  // the prompt left room for an answer (reserve: min(-n, ctx/2))
    EXPECT_EQ(t.result.tokens, from_scratch(s, conv, without_last(conv.messages())));
  }
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(conv.messages().front().role, "user");
  EXPECT_EQ(conv.system(), "Stories about Lily.");
  const std::string rendered = s.lm.tokenizer->decode(conv.render(conv.messages()));
  EXPECT_NE(rendered.find("Stories about Lily."), std::string::npos);

  // A message that cannot fit even alone is refused, and the conversation is left as it was.
  const auto before = conv.messages();
  std::string huge;
  for (int i = 0; i < 100; i++) huge += "a long message ";
  test::expect_error([&] { conv.answer(huge, {}); }, "context holds 160");
  EXPECT_EQ(conv.messages().size(), before.size());
}

TEST(Chat, AnInterruptedAnswerIsKeptAndTheNextTurnIsStillExact) {
  JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
  Stories s(path);
  ConversationOptions o = sampled_options(200, 11);
  o.gen.ignore_eos = true;
  Conversation conv(*s.lm.model, *s.lm.tokenizer, 512, DType::F32, o, decoder("pld"));
  std::atomic<bool> stop{false};
  std::string partial;
  const TurnStats t = conv.answer("Once upon a time", [&](const std::string& piece) {
    partial += piece;
    if (partial.size() > 20) stop = true;
  }, &stop);
  EXPECT_TRUE(t.interrupted);
  EXPECT_LT(t.result.stats.n_tokens, 200);
  EXPECT_GT(t.result.stats.n_tokens, 0);
  EXPECT_EQ(t.result.stats.n_tokens, static_cast<int>(t.result.tokens.size()));  // the statistics are final
  EXPECT_EQ(conv.messages().back().content, partial);
  TurnStats t2;
  collect(conv, "And then?", &t2);
  EXPECT_GT(t2.reused_tokens, t.prompt_tokens - 1);
  EXPECT_EQ(t2.result.tokens, from_scratch(s, conv, without_last(conv.messages())));
}

TEST(Chat, CompletionModeContinuesOneText) {
  JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
  Stories s(path);
  ConversationOptions o = sampled_options(20, 5);
  o.format = ChatFormat::None;
  Conversation conv(*s.lm.model, *s.lm.tokenizer, 512, DType::F32, o, decoder("pld"));
  TurnStats t1, t2;
  const std::string a1 = collect(conv, "Lily went to the park.", &t1);
  collect(conv, "Then she saw a dog.", &t2);
  const std::string text = "Lily went to the park." + a1 + (a1.ends_with("\n") ? "" : "\n") + "Then she saw a dog.";
  EXPECT_EQ(conv.render(without_last(conv.messages())), s.lm.tokenizer->encode(text, true, false));
  EXPECT_GT(t2.reused_tokens, 5);
  EXPECT_EQ(t2.result.tokens, from_scratch(s, conv, without_last(conv.messages())));
}

TEST(Chat, GreedyParallelDecodersAnswerAsAr) {
  JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
  Stories s(path);
  ConversationOptions o = sampled_options(40, 1);
  o.gen.sampling.temperature = 0.0f;
  std::vector<std::vector<int32_t>> answers;
  for (const std::string spec : {"ar", "jacobi:block=4", "multiblock:block=4", "lookahead", "pld"}) {
    Conversation conv(*s.lm.model, *s.lm.tokenizer, 512, DType::F32, o, decoder(spec));
    TurnStats t1, t2;
    collect(conv, "Once upon a time", &t1);
    collect(conv, "What next?", &t2);
    answers.push_back(t1.result.tokens);
    answers.back().insert(answers.back().end(), t2.result.tokens.begin(), t2.result.tokens.end());
    EXPECT_EQ(answers.back(), answers.front()) << spec;
  }
}

TEST(Chat, SaveAndLoadRoundTripAtomically) {
  JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
  Stories s(path);
  test::TempDir dir("chat");
  Conversation conv(*s.lm.model, *s.lm.tokenizer, 512, DType::F32, sampled_options(20, 2), decoder("pld"));
  conv.set_system("Be brief.");
  TurnStats t;
  collect(conv, "Hello \"there\"\n", &t);
  conv.save(dir / "conv.json");
  for (const auto& e : std::filesystem::directory_iterator(dir.path))
    EXPECT_EQ(e.path().filename(), "conv.json");  // no temp file left behind

  Conversation other(*s.lm.model, *s.lm.tokenizer, 512, DType::F32, sampled_options(20, 2), decoder("ar"));
  other.load(dir / "conv.json");
  EXPECT_EQ(other.system(), "Be brief.");
  ASSERT_EQ(other.messages().size(), 2u);
  EXPECT_EQ(other.messages()[0].content, "Hello \"there\"\n");
  EXPECT_EQ(other.messages()[1].content, conv.messages()[1].content);
  EXPECT_EQ(other.render(other.messages()), conv.render(conv.messages()));

  // Loaded into the same conversation, the next turn reuses the cache of the saved one.
  conv.reset();
  conv.load(dir / "conv.json");
  TurnStats t2;
  collect(conv, "More", &t2);
  EXPECT_GE(t2.reused_tokens, t.prompt_tokens - 1);

  auto write = [&](const std::string& text) {
    std::ofstream(dir / "bad.json") << text;
    return dir / "bad.json";
  };
  test::expect_error([&] { other.load(write("{not json")); }, "not valid JSON");
  test::expect_error([&] { other.load(write("{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}]}")); },
                     "unknown role 'robot'");
  test::expect_error([&] { other.load(write("{\"messages\": [{\"role\": \"user\"}]}")); }, "'role' and 'content'");
  test::expect_error([&] { other.load(write("{\"system\": 3, \"messages\": []}")); }, "'system' must be a string");
  test::expect_error([&] { other.load(dir / "missing.json"); }, "missing.json");
  EXPECT_EQ(other.messages().size(), 2u);  // a failed load changes nothing
}

}  // namespace
}  // namespace jf
