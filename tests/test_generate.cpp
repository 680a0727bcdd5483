// End-to-end generation through the public loader and the AR decoder: the stories260K reference outputs
// byte for byte (greedy and seeded sampling, GGUF and llama2.c files, every instruction set), and the
// stop conditions every decoder shares.
#include <cstdio>
#include <cstring>

#include "base/error.h"
#include "base/mapped_file.h"
#include "decode/decoder.h"
#include "decode/generation_batch.h"
#include "kernels/cpu.h"
#include "model/loader.h"
#include "model/random_model.h"
#include "model_helpers.h"
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

// Generations batched into one forward give each one the same tokens as generating it alone, whatever
// the number in flight; and they really share forwards.
TEST_F(StopConditions, BatchedGenerationsMatchEachGeneratedAlone) {
  constexpr int kCount = 7;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<GenerationConfig> configs(kCount);
  for (int i = 0; i < kCount; i++) {
    prompts.push_back(test::random_tokens(1 + 3 * i, model->config().vocab_size, 100 + i));
    configs[i].max_new_tokens = 5 + 4 * i;  // generations end at different steps
    configs[i].sampling.temperature = 1.0f;
    configs[i].sampling.seed = 9 + i;
  }
  std::vector<std::vector<int32_t>> alone(kCount);
  for (int i = 0; i < kCount; i++) {
    Session s(*model, 128);
    alone[i] = ar.generate(s, prompts[i], configs[i]).tokens;
  }
  int all_alone_forwards = 0;
  for (int parallel : {1, 3, 16}) {
    test::CountingForward fwd(*model);
    std::vector<std::vector<int32_t>> batched(kCount);
    std::vector<int> finished;
    run_generation_batch(
        fwd, kCount, parallel, 128, DType::F32,
        [&](int i, Session& s) { return std::make_unique<Generation>(ar, s, prompts[i], configs[i]); },
        [&](int i, GenerationResult&& r) {
          batched[i] = std::move(r.tokens);
          finished.push_back(i);
        });
    EXPECT_EQ(batched, alone) << parallel << " in flight";
    EXPECT_EQ(finished.size(), static_cast<size_t>(kCount));
    EXPECT_EQ(fwd.most_sequences, std::min(parallel, kCount));
    if (parallel == 1) all_alone_forwards = fwd.forwards;
    else EXPECT_LT(fwd.forwards, all_alone_forwards / 2) << parallel << " in flight";
  }
  test::CountingForward fwd(*model);
  EXPECT_THROW(run_generation_batch(fwd, 1, 0, 128, DType::F32, nullptr, nullptr), Error);
}

}  // namespace
}  // namespace jf
