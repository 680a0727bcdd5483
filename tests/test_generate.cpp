// End-to-end generation through the public loader and the AR decoder: the stories260K reference outputs
// byte for byte (greedy and seeded sampling, GGUF and llama2.c files, every instruction set), and the
// stop conditions every decoder shares.
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "base/mapped_file.h"
#include "decode/decoder.h"
#include "kernels/cpu.h"
#include "model/loader.h"
#include "model/random_model.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace jf {
namespace {

std::string trim_newline(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

struct Golden {
  const char* file;
  float temp, top_p;
};

// llama2.c's loop runs pos = 0 .. steps-1 and prints one token per position, so a golden made with
// steps = 200 holds 200 generated tokens after BOS.
constexpr int kGoldenTokens = 200;

class Stories : public ::testing::TestWithParam<std::tuple<std::string, Golden, Isa>> {};

TEST_P(Stories, ReproducesReferenceOutputByteForByte) {
  auto [file, golden, isa] = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << "SKIPPED: CPU lacks " << isa_name(isa);
  JF_SHARED_PATH(model_path, "models/stories260K/" + file);
  JF_SHARED_PATH(golden_path, std::string("models/stories260K/") + golden.file);
  const Isa saved = active_isa();
  set_active_isa(isa);
  LoadedModel lm = load_model(model_path);
  ASSERT_TRUE(lm.tokenizer);
  Session s(*lm.model, 512);
  GenerationConfig cfg;
  cfg.max_new_tokens = kGoldenTokens;
  cfg.sampling.temperature = golden.temp;
  cfg.sampling.top_p = golden.top_p;
  cfg.sampling.seed = 42;
  cfg.eos_ids = {lm.tokenizer->eos()};
  std::vector<int32_t> prompt = lm.tokenizer->encode("", true, false);
  ASSERT_EQ(prompt, std::vector<int32_t>{lm.tokenizer->bos()});
  ArDecoder ar;
  StreamingDecoder stream(*lm.tokenizer);
  std::string text;
  GenerationResult r = ar.generate(s, prompt, cfg, [&](std::span<const int32_t> t) {
    for (int32_t id : t) text += stream.push(id);
  });
  text += stream.finish();
  set_active_isa(saved);
  EXPECT_EQ(r.stop, StopReason::Length);
  EXPECT_EQ(r.stats.n_tokens, kGoldenTokens);
  EXPECT_EQ(r.stats.n_forwards, kGoldenTokens);
  EXPECT_EQ(text, trim_newline(read_text_file(golden_path)));
  EXPECT_EQ(text, lm.tokenizer->decode(r.tokens));
}

INSTANTIATE_TEST_SUITE_P(
    Goldens, Stories,
    ::testing::Combine(::testing::Values("stories260K.gguf", "stories260K.bin"),
                       ::testing::Values(Golden{"golden_greedy_n200.txt", 0.0f, 1.0f},
                                         Golden{"golden_t1_p095_s42_n200.txt", 1.0f, 0.95f},
                                         Golden{"golden_t1_p1_s42_n200.txt", 1.0f, 1.0f}),
                       ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx2Vnni, Isa::Avx512)),
    [](const auto& info) {
      std::string s = std::get<0>(info.param) + "_" + std::get<1>(info.param).file + "_" + isa_name(std::get<2>(info.param));
      for (char& c : s)
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return s;
    });

// The streamed continuation of a prompt is the text as it reads after the prompt: decode(prompt + new)
// minus decode(prompt). SentencePiece drops the dummy-prefix space only at the start of a text, so the
// first generated word keeps its space ("named Max." + " Max loved", as the reference engine prints).
TEST(Continuation, StreamedTextIsWhatFollowsThePrompt) {
  JF_SHARED_PATH(model_path, "models/stories260K/stories260K.gguf");
  LoadedModel lm = load_model(model_path);
  const Tokenizer& tok = *lm.tokenizer;
  struct Case {
    const char* prompt;
    const char* starts;  // the reference engine's continuation, where known
  };
  for (const Case& c : {Case{"Once upon a time, there was a little dog named Max.", " Max loved"},
                        Case{"Once upon a time", ""}, Case{"Lily went to the park", ""},
                        Case{"The sun was", ""}, Case{"One day, Tom", ""}}) {
    Session s(*lm.model, 256);
    GenerationConfig cfg;
    cfg.max_new_tokens = 40;
    cfg.eos_ids = {tok.eos()};
    const std::vector<int32_t> prompt = tok.encode(c.prompt, true, false);
    ArDecoder ar;
    StreamingDecoder stream(tok, prompt);
    std::string text;
    GenerationResult r = ar.generate(s, prompt, cfg, [&](std::span<const int32_t> t) {
      for (int32_t id : t) text += stream.push(id);
    });
    text += stream.finish();
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), r.tokens.begin(), r.tokens.end());
    const std::string whole = tok.decode(all), before = tok.decode(prompt);
    ASSERT_EQ(whole.compare(0, before.size(), before), 0) << c.prompt;
    EXPECT_EQ(text, whole.substr(before.size())) << c.prompt;
    EXPECT_EQ(text.compare(0, strlen(c.starts), c.starts), 0) << c.prompt << " -> " << text;
  }
}

// A context ending inside a multi-byte character: the new bytes complete it and only they are handed out.
TEST(Continuation, CompletesTheContextsUnfinishedCharacter) {
  JF_SHARED_PATH(model_path, "models/stories260K/stories260K.gguf");
  LoadedModel lm = load_model(model_path);
  const Tokenizer& tok = *lm.tokenizer;
  const int32_t e4 = 3 + 0xE4, bd = 3 + 0xBD, a0 = 3 + 0xA0;  // byte tokens of U+4F60
  ASSERT_EQ(tok.token_bytes(e4), "\xE4");
  const std::vector<int32_t> context = {tok.bos(), tok.encode("Hi", false, false)[0], e4};
  StreamingDecoder stream(tok, context);
  EXPECT_EQ(stream.push(bd), "");
  EXPECT_EQ(stream.push(a0), "\xBD\xA0");
  EXPECT_EQ(stream.finish(), "");
  StreamingDecoder alone(tok);  // the same bytes as a text of their own: the first one is invalid
  EXPECT_EQ(alone.push(bd), "\xEF\xBF\xBD");
}

// Stop conditions on a random model, where EOS can be forced by choosing it as the end-of-generation id.
class StopConditions : public ::testing::Test {
 protected:
  std::unique_ptr<Model> model = random_model(preset_config("tiny"), DType::F32, 3);
  ArDecoder ar;
  GenerationConfig cfg;
  std::vector<int32_t> prompt = {1, 2, 3, 4};
};

TEST_F(StopConditions, LengthLimit) {
  Session s(*model, 64);
  cfg.max_new_tokens = 10;
  GenerationResult r = ar.generate(s, prompt, cfg);
  EXPECT_EQ(r.tokens.size(), 10u);
  EXPECT_EQ(r.stop, StopReason::Length);
}

TEST_F(StopConditions, EosEndsGenerationAndIsNotReturned) {
  Session s(*model, 64);
  cfg.max_new_tokens = 30;
  GenerationResult free_run = ar.generate(s, prompt, cfg);
  cfg.eos_ids = {free_run.tokens[5]};
  GenerationResult r = ar.generate(s, prompt, cfg);
  size_t first = std::find(free_run.tokens.begin(), free_run.tokens.end(), free_run.tokens[5]) - free_run.tokens.begin();
  EXPECT_EQ(r.stop, StopReason::Eos);
  EXPECT_EQ(r.tokens, std::vector<int32_t>(free_run.tokens.begin(), free_run.tokens.begin() + first));
  cfg.ignore_eos = true;
  EXPECT_EQ(ar.generate(s, prompt, cfg).tokens, free_run.tokens);
}

TEST_F(StopConditions, ContextFullAfterCapacityPlusOneTokens) {
  Session s(*model, 16);
  cfg.max_new_tokens = 100;
  GenerationResult r = ar.generate(s, prompt, cfg);
  EXPECT_EQ(r.stop, StopReason::ContextFull);
  EXPECT_EQ(prompt.size() + r.tokens.size(), 17u);  // the last token needs no cache slot
}

TEST_F(StopConditions, PromptLongerThanContextIsAnError) {
  Session s(*model, 3);
  EXPECT_THROW(ar.generate(s, prompt, cfg), Error);
  EXPECT_THROW(ar.generate(s, std::vector<int32_t>{}, cfg), Error);
}

TEST_F(StopConditions, BadSamplingValuesAreErrors) {
  Session s(*model, 64);
  cfg.sampling.temperature = -1;
  EXPECT_THROW(ar.generate(s, prompt, cfg), Error);
  cfg.sampling.temperature = 1;
  cfg.sampling.top_p = 0;
  EXPECT_THROW(ar.generate(s, prompt, cfg), Error);
  cfg.sampling.top_p = 1;
  cfg.sampling.min_p = 2;
  EXPECT_THROW(ar.generate(s, prompt, cfg), Error);
}

TEST_F(StopConditions, SeededSamplingIsReproducible) {
  Session s(*model, 64);
  cfg.max_new_tokens = 20;
  cfg.sampling.temperature = 0.9f;
  cfg.sampling.top_k = 40;
  cfg.sampling.min_p = 0.01f;
  cfg.sampling.seed = 7;
  auto a = ar.generate(s, prompt, cfg).tokens;
  EXPECT_EQ(ar.generate(s, prompt, cfg).tokens, a);
  cfg.sampling.seed = 8;
  EXPECT_NE(ar.generate(s, prompt, cfg).tokens, a);
}

}  // namespace
}  // namespace jf
