// BPE training: hand-computed merges, lossless round trips (VocabSpec and GGUF), determinism, corpus reading,
// and speed/compression on the Python standard library.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/timer.h"
#include "formats/gguf.h"
#include "test_support.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace jf {
namespace {

namespace fs = std::filesystem;

const char* const kPythonLib = "/usr/lib/python3.11";

BpeTrainOptions toy_options(int32_t n_merges, const std::string& pre = "llama-bpe") {
  BpeTrainOptions o;
  o.pre = pre;
  o.min_frequency = 1;
  o.vocab_size = 256 + n_merges + static_cast<int32_t>(o.special_tokens.size());
  return o;
}

std::vector<std::string> mixed_corpus() {
  return {
      "def hello(name):\n    return f\"Hello, {name}!\"\n\n\nprint(hello('world'))\n",
      "class Foo:\r\n\tdef __init__(self, x=1234567):\r\n\t\tself.x = x  # comment\r\n",
      "Ünïcödé tëxt — with dashes, “quotes”, 日本語のテキスト and emoji 😀🎉 too.\n",
      "   leading spaces, trailing spaces   \n\n\n   \t \n",
      "numbers 0 12 345 6789 3.14159 1e-10 0xDEADBEEF\n",
      "it's they're we've I'm you'll he'd IT'S\n",
      "<|endoftext|> and <|im_start|> written as plain text\n",
      std::string("control \x01\x02\x7f bytes\n"),
      "",
      "x",
  };
}

std::vector<std::string> repeat(const std::vector<std::string>& docs, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; i++) out.insert(out.end(), docs.begin(), docs.end());
  return out;
}

void expect_round_trip(const Tokenizer& tok, const std::vector<std::string>& docs) {
  for (const auto& d : docs) {
    std::vector<int32_t> ids = tok.encode(d, false, false);
    EXPECT_EQ(tok.decode(ids), d) << "document: " << d;
  }
}

std::string temp_dir(const std::string& tag) {
  fs::path p = fs::temp_directory_path() / ("jf_bpe_train_" + tag + "_" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

void write_file(const fs::path& p, const std::string& data) {
  std::ofstream f(p, std::ios::binary);
  f << data;
}

TEST(BpeTrain, ClassicExampleMerges) {
  // "aaabdaaabac": aa=4 -> "a a"; then aa a=2 and a b=2 tie, "a b" is smaller; then "aa ab"=2; then all
  // pairs occur once and "a c" is the smallest of "a c", "aaab a", "aaab d", "d aaab".
  VocabSpec s = train_bpe(toy_options(4), {"aaabdaaabac"});
  EXPECT_EQ(s.merges, (std::vector<std::string>{"a a", "a b", "aa ab", "a c"}));
  EXPECT_EQ(s.tokens[256], "aa");
  EXPECT_EQ(s.tokens[257], "ab");
  EXPECT_EQ(s.tokens[258], "aaab");
  EXPECT_EQ(s.tokens[259], "ac");
}

TEST(BpeTrain, SpacesUseTheByteAlphabetAndTiesAreLexicographic) {
  // GPT-2 split: "ab", " ab", " ab": a b=3, then Ġ ab=2.
  VocabSpec s = train_bpe(toy_options(2, "gpt-2"), {"ab ab ab"});
  EXPECT_EQ(s.merges, (std::vector<std::string>{"a b", "\xC4\xA0 ab"}));
  // All counts 1: "a b" < "x y" < "Ġ ab" bytewise.
  s = train_bpe(toy_options(3, "gpt-2"), {"xy ab"});
  EXPECT_EQ(s.merges, (std::vector<std::string>{"a b", "x y", "\xC4\xA0 ab"}));
}

TEST(BpeTrain, ByteTokensComeFirstInGpt2Order) {
  VocabSpec s = train_bpe(toy_options(0), {});
  ASSERT_EQ(s.tokens.size(), 259u);
  EXPECT_EQ(s.tokens[0], "!");
  EXPECT_EQ(s.tokens[93], "~");
  EXPECT_EQ(s.tokens[94], "\xC2\xA1");   // ¡ (byte 0xA1)
  EXPECT_EQ(s.tokens[188], "\xC4\x80");  // Ā (byte 0x00)
  EXPECT_EQ(s.tokens[220], "\xC4\xA0");  // Ġ (byte 0x20, space)
  EXPECT_EQ(s.tokens[255], "\xC5\x83");  // Ń (byte 0xAD)
  EXPECT_TRUE(s.merges.empty());
}

TEST(BpeTrain, SizeAndSpecialTokensAsRequested) {
  BpeTrainOptions o;
  o.vocab_size = 400;
  VocabSpec s = train_bpe(o, repeat(mixed_corpus(), 3));
  ASSERT_EQ(s.tokens.size(), 400u);
  EXPECT_EQ(s.tokens[397], "<|endoftext|>");
  EXPECT_EQ(s.tokens[398], "<|im_start|>");
  EXPECT_EQ(s.tokens[399], "<|im_end|>");
  for (int i = 397; i < 400; i++) EXPECT_EQ(s.types[i], TokenKind::Control);
  for (int i = 0; i < 397; i++) ASSERT_EQ(s.types[i], TokenKind::Normal);
  EXPECT_EQ(s.bos, 397);
  EXPECT_EQ(s.eos, 397);
  EXPECT_EQ(s.pre, "llama-bpe");

  Tokenizer tok(s);
  EXPECT_EQ(tok.n_vocab(), 400);
  EXPECT_TRUE(tok.is_eog(397));
  EXPECT_TRUE(tok.is_eog(399));
  EXPECT_EQ(tok.encode("def", true, false).front(), 397);  // BOS
  std::vector<int32_t> ids = tok.encode("<|im_start|>user\nhi<|im_end|>", false, true);
  EXPECT_EQ(ids.front(), 398);
  EXPECT_EQ(ids.back(), 399);
  EXPECT_EQ(detect_chat_format(tok), ChatFormat::ChatML);
  // Without parse_special the text is spelled out, and still decodes back.
  EXPECT_EQ(tok.decode(tok.encode("<|im_end|>", false, false)), "<|im_end|>");
}

TEST(BpeTrain, RoundTripsEveryDocument) {
  const auto docs = repeat(mixed_corpus(), 4);
  for (const char* pre : {"llama-bpe", "gpt-2", "qwen2"}) {
    SCOPED_TRACE(pre);
    BpeTrainOptions o;
    o.pre = pre;
    o.vocab_size = 600;
    o.min_frequency = 1;
    VocabSpec s = train_bpe(o, docs);
    EXPECT_GT(s.merges.size(), 200u);
    Tokenizer tok(s);
    expect_round_trip(tok, docs);
    // Merged tokens really are used.
    EXPECT_LT(tok.encode(docs[0], false, false).size(), docs[0].size() / 2);
  }
}

TEST(BpeTrain, GgufRoundTrip) {
  const auto docs = repeat(mixed_corpus(), 2);
  BpeTrainOptions o;
  o.vocab_size = 500;
  o.min_frequency = 1;
  Tokenizer trained(train_bpe(o, docs));
  const std::string dir = temp_dir("gguf");
  const std::string path = dir + "/vocab.gguf";
  GgufWriter w;
  w.meta().set("general.architecture", GgufValue::of_string("llama"));
  trained.to_gguf(w.meta());
  w.write(path);
  auto f = GgufFile::open(path);
  EXPECT_TRUE(f->tensors().empty());
  auto loaded = Tokenizer::from_gguf(f->meta());
  EXPECT_EQ(loaded->spec().tokens, trained.spec().tokens);
  EXPECT_EQ(loaded->spec().merges, trained.spec().merges);
  EXPECT_EQ(loaded->bos(), trained.bos());
  EXPECT_EQ(loaded->spec().add_bos, trained.spec().add_bos);
  EXPECT_EQ(loaded->spec().eog, trained.spec().eog);
  expect_round_trip(*loaded, docs);
  for (const auto& d : docs) EXPECT_EQ(loaded->encode(d, true, true), trained.encode(d, true, true));
  fs::remove_all(dir);
}

TEST(BpeTrain, Deterministic) {
  BpeTrainOptions o;
  o.vocab_size = 700;
  o.min_frequency = 1;
  const auto docs = repeat(mixed_corpus(), 3);
  VocabSpec a = train_bpe(o, docs);
  VocabSpec b = train_bpe(o, docs);
  EXPECT_EQ(a.merges, b.merges);
  EXPECT_EQ(a.tokens, b.tokens);
}

TEST(BpeTrain, MinFrequencyStopsEarlyAndProgressIsReported) {
  BpeTrainOptions o;
  o.vocab_size = 4096;
  o.min_frequency = 3;
  std::vector<BpeTrainProgress> seen;
  o.progress = [&](const BpeTrainProgress& p) { seen.push_back(p); };
  VocabSpec s = train_bpe(o, {"abab abab abab xyz"});
  EXPECT_LT(s.tokens.size(), 300u);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().stage, BpeTrainProgress::Stage::Count);
  EXPECT_EQ(seen.back().stage, BpeTrainProgress::Stage::Done);
  EXPECT_EQ(seen.back().done, s.merges.size());
  EXPECT_EQ(seen.back().bytes, 18u);
  EXPECT_LT(seen.back().tokens, 18u);
}

TEST(BpeTrain, BadOptionsAreErrors) {
  BpeTrainOptions o;
  o.vocab_size = 200;
  EXPECT_THROW(train_bpe(o, {"x"}), Error);
  o = BpeTrainOptions{};
  o.pre = "no-such-pre";
  EXPECT_THROW(train_bpe(o, {"x"}), Error);
  o = BpeTrainOptions{};
  o.special_tokens = {"<a>", "<a>"};
  o.bos_token = o.eos_token = "";
  EXPECT_THROW(train_bpe(o, {"x"}), Error);
  o = BpeTrainOptions{};
  o.bos_token = "<s>";
  EXPECT_THROW(train_bpe(o, {"x"}), Error);
  o = BpeTrainOptions{};
  o.min_frequency = 0;
  EXPECT_THROW(train_bpe(o, {"x"}), Error);
}

TEST(BpeTrain, NeverMergesIntoASpecialToken) {
  // "a b" is the most frequent pair but would spell the special token "ab": it is passed over. (GPT-2 split:
  // with llama-bpe's whole-word lookup, encode() would take a plain-text word "ab" as the control token.)
  BpeTrainOptions o;
  o.pre = "gpt-2";
  o.special_tokens = {"ab"};
  o.bos_token = o.eos_token = "";
  o.min_frequency = 1;
  o.vocab_size = 256 + 2 + 1;
  VocabSpec s = train_bpe(o, {"ab ab ab"});
  EXPECT_EQ(s.merges, (std::vector<std::string>{"\xC4\xA0 a", "\xC4\xA0" "a b"}));
  Tokenizer tok(s);
  EXPECT_EQ(tok.decode(tok.encode("ab ab", false, false)), "ab ab");
  EXPECT_EQ(tok.encode("ab", false, true), (std::vector<int32_t>{258}));
}

TEST(BpeTrainCorpus, SortedWalkWithSkips) {
  const std::string dir = temp_dir("corpus");
  fs::create_directories(fs::path(dir) / "sub");
  write_file(fs::path(dir) / "b.py", "b = 2\n");
  write_file(fs::path(dir) / "a.py", "a = 1\n");
  write_file(fs::path(dir) / "sub" / "c.py", "c = 3\n");
  write_file(fs::path(dir) / "z.py", "zzzzzzzzzzzzzzzzzzzz\n");
  write_file(fs::path(dir) / "d.txt", "not python\n");
  write_file(fs::path(dir) / "bin.py", std::string("x\0y", 3));
  write_file(fs::path(dir) / "bad.py", "caf\xE9\n");
  fs::create_symlink(fs::path(dir) / "a.py", fs::path(dir) / "link.py");

  CorpusStats st;
  auto docs = read_corpus({dir}, ".py", 0, &st);
  EXPECT_EQ(docs, (std::vector<std::string>{"a = 1\n", "b = 2\n", "c = 3\n", "zzzzzzzzzzzzzzzzzzzz\n"}));
  EXPECT_EQ(st.files, 4u);
  EXPECT_EQ(st.bytes, 39u);
  EXPECT_EQ(st.skipped_binary, 1u);
  EXPECT_EQ(st.skipped_invalid_utf8, 1u);

  // Budget 15, in sorted order: a.py (6) and b.py (6) fit, bad.py (5) does not, bin.py (3) fits but is
  // binary, sub/c.py and z.py do not fit.
  docs = read_corpus({dir}, "py", 15, &st);
  EXPECT_EQ(docs, (std::vector<std::string>{"a = 1\n", "b = 2\n"}));
  EXPECT_EQ(st.skipped_budget, 3u);
  EXPECT_EQ(st.skipped_binary, 1u);

  docs = read_corpus({dir + "/d.txt", dir + "/sub"}, ".py", 0);  // a file root is read whatever its name
  EXPECT_EQ(docs, (std::vector<std::string>{"not python\n", "c = 3\n"}));
  EXPECT_THROW(read_corpus({dir + "/missing"}, ".py", 0), Error);
  fs::remove_all(dir);
}

TEST(BpeTrainCorpus, PythonStdlibTrainsFastAndCompresses) {
  if (!fs::is_directory(kPythonLib)) GTEST_SKIP() << "SKIPPED: " << kPythonLib << " not found";
  CorpusStats st;
  auto docs = read_corpus({kPythonLib}, ".py", 2 << 20, &st);
  ASSERT_GT(st.bytes, 1u << 20);
  BpeTrainOptions o;
  o.vocab_size = 1280;
  const double t0 = now_seconds();
  VocabSpec s = train_bpe(o, docs);
  const double secs = now_seconds() - t0;
  EXPECT_GE(s.merges.size(), 1000u);
  EXPECT_EQ(s.tokens.size(), 1280u);
  EXPECT_LT(secs, 20.0) << "training took " << secs << " s";

  Tokenizer tok(s);
  size_t n_tokens = 0, n_bytes = 0;
  for (const auto& d : docs) {
    auto ids = tok.encode(d, false, false);
    n_tokens += ids.size();
    n_bytes += d.size();
    ASSERT_EQ(tok.decode(ids), d);
  }
  const double per_byte = static_cast<double>(n_tokens) / static_cast<double>(n_bytes);
  std::printf("[ info ] %zu files, %zu bytes: %zu merges in %.2f s, %.3f tokens/byte\n", st.files, n_bytes,
              s.merges.size(), secs, per_byte);
  EXPECT_LT(per_byte, 0.4);
}

}  // namespace
}  // namespace jf
