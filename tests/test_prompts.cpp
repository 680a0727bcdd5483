// Prompt sets and answer scoring for `jf bench` (src/cli/prompts.cpp).
#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "cli/prompts.h"
#include "test_support.h"

namespace jf::cli {
namespace {

TEST(ExtractAnswer, TakesTheNumberAfterTheLastAnswerCue) {
  EXPECT_EQ(extract_answer("3+4=7, 7+5=12.\nThe answer is 12."), "12");
  EXPECT_EQ(extract_answer("the answer is 5. No wait, the Answer is 6, not 7"), "6");
  EXPECT_EQ(extract_answer("So the answer is $1,234.50 in total"), "1234.5");
  EXPECT_EQ(extract_answer("answer is -3"), "-3");
  EXPECT_EQ(extract_answer("answer is 12.0"), "12");
}

TEST(ExtractAnswer, FallsBackToTheLastNumber) {
  EXPECT_EQ(extract_answer("She had 3 apples and 4 pears, 7 in all."), "7");
  EXPECT_EQ(extract_answer("1,000 people came; 25 left"), "25");
  EXPECT_EQ(extract_answer("no digits at all"), "");
  EXPECT_EQ(extract_answer("The answer is unknown, maybe 8"), "8");  // the first number after the cue
  EXPECT_EQ(extract_answer(""), "");
}

TEST(NormalizeNumber, AcceptsOnlyANumber) {
  EXPECT_EQ(normalize_number(" 72"), "72");
  EXPECT_EQ(normalize_number(" 1,234\n"), "1234");
  EXPECT_EQ(normalize_number("$5.00"), "5");
  EXPECT_EQ(normalize_number("-0"), "0");
  EXPECT_EQ(normalize_number("-12"), "-12");
  EXPECT_EQ(normalize_number("12 apples"), "");
  EXPECT_EQ(normalize_number("twelve"), "");
  EXPECT_EQ(normalize_number(""), "");
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = test::temp_path(name);
  std::ofstream(path) << text;
  return path;
}

TEST(PromptSet, Gsm8kKeepsTheFinalAnswers) {
  const std::string p = write_temp("set_gsm8k.jsonl",
                                   "{\"question\": \"Q: 1+2\\nA:\", \"answer\": \"1+2=3.\\n#### 3\"}\n\n"
                                   "{\"question\": \"How many?\", \"answer\": \"a #### b #### 1,200\"}\n");
  PromptSet s = load_prompt_set(p, "gsm8k");
  ASSERT_EQ(s.prompts.size(), 2u);
  EXPECT_EQ(s.prompts[0], "Q: 1+2\nA:");
  EXPECT_EQ(s.answers, (std::vector<std::string>{"3", "1200"}));
}

TEST(PromptSet, OtherFormatsHaveNoAnswers) {
  const std::string p = write_temp("set_plain.jsonl", "{\"prompt\": \"hello\"}\n");
  PromptSet s = load_prompt_set(p, "jsonl");
  EXPECT_EQ(s.prompts, std::vector<std::string>{"hello"});
  EXPECT_TRUE(s.answers.empty());
}

TEST(PromptSet, Gsm8kErrorsNameTheLine) {
  auto message = [](const std::string& text) {
    try {
      load_prompt_set(write_temp("set_bad_gsm8k.jsonl", text), "gsm8k");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("{\"question\": \"q\"}\n").find(":1: no string field 'answer'"), std::string::npos);
  EXPECT_NE(message("{\"question\": \"q\", \"answer\": \"7\"}\n").find("no '#### N'"), std::string::npos);
  EXPECT_NE(message("{\"question\": \"q\", \"answer\": \"#### 7\"}\n{\"question\": \"q\", \"answer\": \"#### seven\"}\n")
                .find(":2: the final answer after '####' is not a number"),
            std::string::npos);
}

TEST(PromptSet, TheSharedGsm8kTestSetLoads) {
  JF_SHARED_PATH(path, "data/gsm8k/test.jsonl");
  PromptSet s = load_prompt_set(path, "auto");
  ASSERT_EQ(s.prompts.size(), s.answers.size());
  EXPECT_GT(s.prompts.size(), 1000u);
  for (const std::string& a : s.answers) EXPECT_FALSE(a.empty());
}

}  // namespace
}  // namespace jf::cli
