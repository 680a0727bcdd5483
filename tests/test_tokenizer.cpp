// Tokenizer tests: llama.cpp vocab fixtures, llama2.c/HF/GGUF loaders and round trips, streaming, bad input.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <unistd.h>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "formats/gguf.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace jf {
namespace {


struct VocabCase {
  std::string text;
  std::vector<int32_t> ids;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// llama.cpp's test-tokenizer-0 format: .inp holds the strings, each followed by "\n__ggml_vocab_test__\n";
// .out holds one line of space-separated ids per string.
std::vector<VocabCase> read_vocab_cases(const std::string& gguf_path) {
  const std::string raw = slurp(gguf_path + ".inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  for (size_t pos = 0; pos < raw.size();) {
    size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      inputs.push_back(raw.substr(pos));
      break;
    }
    inputs.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  std::ifstream out(gguf_path + ".out");
  std::vector<VocabCase> cases;
  std::string line;
  for (size_t i = 0; i < inputs.size() && std::getline(out, line); i++) {
    VocabCase c{inputs[i], {}};
    std::istringstream ls(line);
    for (int32_t id; ls >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  return cases;
}

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const std::string& path) {
  auto f = GgufFile::open(path);
  return Tokenizer::from_gguf(f->meta());
}

std::string temp_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() / ("jf_tok_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}


// The vocabularies that have a .gguf next to their fixtures. The qwen2 fixture (ggml-vocab-qwen2.gguf.inp/.out)
// ships without its vocabulary file, so it cannot be checked here; it is deliberately not faked.
const char* const kVocabs[] = {"llama-spm", "phi-3", "gpt-2", "deepseek-coder", "falcon", "starcoder"};

// Strict check that `s` is a sequence of whole, valid UTF-8 characters.
bool complete_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    auto b = static_cast<unsigned char>(s[i]);
    size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; k++) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

std::string vocab_rel(const std::string& name) { return "models/tokenizers/ggml-vocab-" + name + ".gguf"; }

// Expects `tok` to reproduce every fixture of `cases` exactly; returns the number of mismatches.
int check_cases(const Tokenizer& tok, const std::vector<VocabCase>& cases, const std::string& what) {
  int bad = 0;
  for (size_t i = 0; i < cases.size(); i++) {
    std::vector<int32_t> got = tok.encode(cases[i].text, false, false);
    if (got != cases[i].ids) {
      bad++;
      std::ostringstream g, w;
      for (int32_t id : got) g << id << ' ';
      for (int32_t id : cases[i].ids) w << id << ' ';
      ADD_FAILURE() << what << " case " << i << " '" << cases[i].text << "'\n  got:  " << g.str() << "\n  want: " << w.str();
    }
  }
  return bad;
}

class VocabFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabFixture, EncodesLikeLlamaCpp) {
  JF_SHARED_PATH(path, vocab_rel(GetParam()));
  auto tok = load_gguf_tokenizer(path);
  auto cases = read_vocab_cases(path);
  ASSERT_EQ(cases.size(), 46u);
  EXPECT_EQ(check_cases(*tok, cases, GetParam()), 0);
}

TEST_P(VocabFixture, DecodeInvertsEncode) {
  JF_SHARED_PATH(path, vocab_rel(GetParam()));
  auto tok = load_gguf_tokenizer(path);
  // SPM: decode drops the space of the dummy prefix, so the round trip is exact for every fixture.
  for (const auto& c : read_vocab_cases(path)) {
    EXPECT_EQ(tok->decode(c.ids), c.text) << GetParam();
  }
}

TEST(Tokenizer, EndOfGenerationNamesAsLlamaCpp) {
  // Llama 3 instruct files name <|eot_id|> as EOS; llama.cpp also stops on <|end_of_text|> and the other
  // names it knows, and types them as control.
  const std::vector<std::string> names = {"a", "b", "<|end_of_text|>", "<|eot_id|>", "<end_of_utterance>",
                                          "<|return|>", "<|call|>", "_<EOT>", "<|user|>"};
  GgufMetadata meta;
  meta.set("tokenizer.ggml.model", GgufValue::of_string("gpt2"));
  meta.set("tokenizer.ggml.tokens", GgufValue::of_strings(names));
  meta.set("tokenizer.ggml.merges", GgufValue::of_strings({}));
  meta.set("tokenizer.ggml.eos_token_id", GgufValue::of_u32(3));
  auto tok = Tokenizer::from_gguf(meta);
  for (int32_t id = 2; id <= 7; id++) {
    EXPECT_TRUE(tok->is_eog(id)) << names[static_cast<size_t>(id)];
    EXPECT_TRUE(tok->is_control(id)) << names[static_cast<size_t>(id)];
  }
  EXPECT_FALSE(tok->is_eog(8));
  EXPECT_FALSE(tok->is_eog(0));
}

TEST_P(VocabFixture, GgufRoundTripKeepsEverything) {
  JF_SHARED_PATH(path, vocab_rel(GetParam()));
  auto tok = load_gguf_tokenizer(path);
  GgufMetadata meta;
  tok->to_gguf(meta);
  auto back = Tokenizer::from_gguf(meta);
  const VocabSpec &a = tok->spec(), &b = back->spec();
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.pre, b.pre);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.scores, b.scores);
  EXPECT_EQ(a.types, b.types);
  EXPECT_EQ(a.merges, b.merges);
  EXPECT_EQ(a.eog, b.eog);
  EXPECT_EQ(std::vector<int32_t>({a.bos, a.eos, a.unk, a.pad}), std::vector<int32_t>({b.bos, b.eos, b.unk, b.pad}));
  EXPECT_EQ(a.add_bos, b.add_bos);
  EXPECT_EQ(a.add_eos, b.add_eos);
  EXPECT_EQ(a.add_space_prefix, b.add_space_prefix);
  EXPECT_EQ(a.chat_template, b.chat_template);
  EXPECT_EQ(check_cases(*back, read_vocab_cases(path), std::string(GetParam()) + " after round trip"), 0);
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, VocabFixture, ::testing::ValuesIn(kVocabs),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s) c = (c == '-') ? '_' : c;
                           return s;
                         });

TEST(Tokenizer, SpecialTokensAndDefaults) {
  JF_SHARED_PATH(spm_path, vocab_rel("llama-spm"));
  auto spm = load_gguf_tokenizer(spm_path);
  EXPECT_EQ(spm->spec().kind, VocabKind::Spm);
  EXPECT_EQ(spm->bos(), 1);
  EXPECT_EQ(spm->eos(), 2);
  EXPECT_TRUE(spm->spec().add_bos);
  std::vector<int32_t> ids = spm->encode("Hello world", true, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(spm->decode(ids), "Hello world");
  EXPECT_EQ(spm->decode(ids, true), "<s>Hello world");
  // Control text is spelled out unless parse_special.
  EXPECT_EQ(spm->encode("</s>", false, true), std::vector<int32_t>({2}));
  EXPECT_NE(spm->encode("</s>", false, false), std::vector<int32_t>({2}));
  EXPECT_TRUE(spm->is_eog(2));
  EXPECT_TRUE(spm->is_control(1));
  EXPECT_FALSE(spm->is_control(3));
  EXPECT_EQ(spm->token_bytes(3 + 0x41), "A");  // byte token <0x41>
  EXPECT_EQ(spm->token_text(3 + 0x41), "<0x41>");

  JF_SHARED_PATH(phi_path, vocab_rel("phi-3"));
  auto phi = load_gguf_tokenizer(phi_path);
  EXPECT_EQ(phi->eos(), 32000);
  EXPECT_TRUE(phi->is_eog(32000));
  EXPECT_TRUE(phi->is_eog(32007));  // <|end|>, found by name as llama.cpp does
  EXPECT_FALSE(phi->is_eog(32010)); // <|user|>
  // The dummy prefix is added to text following a special token.
  EXPECT_EQ(phi->encode("<|user|>\nHi<|end|>", false, true).front(), 32010);
  EXPECT_EQ(phi->encode("<|user|>\nHi<|end|>", false, true).back(), 32007);
  // The vocabulary is named "Phi3": as llama.cpp, whitespace after its special tokens is dropped (a chat
  // turn is these 8 tokens in llama.cpp, 14 when the newlines are kept); <s> keeps what follows it.
  EXPECT_EQ(phi->encode("<|user|>\nSYS\nHI<|end|>\n<|assistant|>\n", true, true),
            std::vector<int32_t>({1, 32010, 317, 21554, 13, 17628, 32007, 32001}));
  auto cat = [](std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  EXPECT_EQ(phi->encode("<s>\nHi", false, true), cat(phi->encode("<s>", false, true), phi->encode("\nHi", false, false)));
  // Another SPM vocabulary keeps the whitespace after a special token.
  EXPECT_EQ(spm->encode("</s>\nHi", false, true), cat(spm->encode("</s>", false, true), spm->encode("\nHi", false, false)));

  JF_SHARED_PATH(gpt2_path, vocab_rel("gpt-2"));
  auto gpt2 = load_gguf_tokenizer(gpt2_path);
  EXPECT_EQ(gpt2->spec().kind, VocabKind::Bpe);
  EXPECT_FALSE(gpt2->spec().add_bos);  // BPE: as the metadata says (absent -> false for gpt-2)
  EXPECT_EQ(gpt2->encode("<|endoftext|>Hi", false, true).front(), 50256);
  EXPECT_NE(gpt2->encode("<|endoftext|>Hi", false, false).front(), 50256);
  EXPECT_TRUE(gpt2->is_eog(50256));
  EXPECT_EQ(gpt2->decode(gpt2->encode("<|endoftext|>Hi", false, true)), "Hi");
  EXPECT_EQ(gpt2->decode(gpt2->encode("<|endoftext|>Hi", false, true), true), "<|endoftext|>Hi");

  // deepseek-coder: user-defined tokens are matched even without parse_special.
  JF_SHARED_PATH(ds_path, vocab_rel("deepseek-coder"));
  auto ds = load_gguf_tokenizer(ds_path);
  EXPECT_EQ(ds->encode("<pad>", false, false), std::vector<int32_t>({32018}));
  EXPECT_TRUE(ds->spec().add_bos);
  EXPECT_EQ(ds->encode("a", true, false).front(), 32013);
}

// A model whose embedding has rows past its vocabulary: those ids become unused padding that encodes never
// produce and decodes skip, for SPM and BPE vocabularies, through a GGUF round trip too.
TEST(Tokenizer, PaddedToTheModelsRows) {
  for (const char* name : {"llama-spm", "gpt-2"}) {
    SCOPED_TRACE(name);
    JF_SHARED_PATH(path, vocab_rel(name));
    std::unique_ptr<Tokenizer> tok = load_gguf_tokenizer(path);
    const int32_t n = tok->n_vocab();
    const std::string text = "Hello [PAD" + std::to_string(n + 7) + "] world, 12345 \xE2\x9C\x85";  // a padding token's text
    const std::vector<int32_t> ids = tok->encode(text, true, false);
    const Tokenizer* before = tok.get();
    tok = Tokenizer::padded(std::move(tok), n);
    EXPECT_EQ(tok.get(), before) << "no rows past the vocabulary: unchanged";
    tok = Tokenizer::padded(std::move(tok), n + 40);
    ASSERT_EQ(tok->n_vocab(), n + 40);
    EXPECT_EQ(tok->token_text(n + 7), "[PAD" + std::to_string(n + 7) + "]");
    EXPECT_EQ(tok->token_bytes(n + 7, true), "");
    EXPECT_EQ(tok->encode(text, true, false), ids);
    std::vector<int32_t> with_pad = ids;
    with_pad.insert(with_pad.begin() + 2, n + 39);
    EXPECT_EQ(tok->decode(with_pad), tok->decode(ids));
    GgufMetadata meta;
    tok->to_gguf(meta);
    std::unique_ptr<Tokenizer> back = Tokenizer::from_gguf(meta);
    EXPECT_EQ(back->n_vocab(), n + 40);
    EXPECT_EQ(back->encode(text, true, false), ids);
    EXPECT_EQ(back->decode(with_pad), tok->decode(ids));
  }
}

TEST(Tokenizer, Llama2cTokenizerMatchesGguf) {
  JF_SHARED_PATH(gguf_path, vocab_rel("llama-spm"));
  JF_SHARED_PATH(bin_path, "models/tokenizers/tokenizer.bin");
  auto ref = load_gguf_tokenizer(gguf_path);
  auto tok = Tokenizer::from_llama2c(bin_path, 32000);
  EXPECT_EQ(tok->spec().tokens, ref->spec().tokens);
  EXPECT_EQ(tok->spec().types, ref->spec().types);
  EXPECT_EQ(check_cases(*tok, read_vocab_cases(gguf_path), "tokenizer.bin"), 0);
  EXPECT_EQ(tok->encode("Once upon a time", true, false), ref->encode("Once upon a time", true, false));
}

TEST(Tokenizer, Stories260KTokenizerMatchesGguf) {
  JF_SHARED_PATH(gguf_path, "models/stories260K/stories260K.gguf");
  JF_SHARED_PATH(bin_path, "models/stories260K/tok512.bin");
  auto ref = load_gguf_tokenizer(gguf_path);
  auto tok = Tokenizer::from_llama2c(bin_path, 512);
  EXPECT_EQ(tok->spec().tokens, ref->spec().tokens);
  EXPECT_EQ(tok->spec().types, ref->spec().types);
  EXPECT_EQ(ref->spec().pad, -1);  // stored as 0xFFFFFFFF: none
  for (const char* text : {"Once upon a time", "Once upon a time, there was a little girl named Lily.", "Zebra 42 \xE2\x9C\x85!"}) {
    std::vector<int32_t> ids = tok->encode(text, true, false);
    EXPECT_EQ(ids, ref->encode(text, true, false)) << text;
    EXPECT_EQ(tok->decode(ids), text);
  }
  EXPECT_EQ(tok->encode("Once upon a time", true, false).front(), 1);
}

// Writes a Hugging Face tokenizer.json (+ tokenizer_config.json) carrying a byte-level GGUF vocabulary.
std::string write_hf_from_gguf(const Tokenizer& src, const std::string& name, const nlohmann::json& pre,
                               const nlohmann::json& post = nullptr, bool ignore_merges = false,
                               const nlohmann::json& gen = nullptr) {
  using nlohmann::json;
  const VocabSpec& s = src.spec();
  json vocab = json::object();
  json added = json::array();
  for (size_t i = 0; i < s.tokens.size(); i++) {
    if (s.types[i] == TokenKind::Control) {
      added.push_back({{"id", i}, {"content", s.tokens[i]}, {"special", true}});
    } else {
      vocab[s.tokens[i]] = i;
    }
  }
  json model = {{"type", "BPE"}, {"byte_fallback", false}, {"vocab", vocab}, {"merges", s.merges}};
  if (ignore_merges) model["ignore_merges"] = true;
  json tj = {{"version", "1.0"},        {"added_tokens", added},           {"normalizer", nullptr},
             {"pre_tokenizer", pre},    {"post_processor", post},          {"decoder", {{"type", "ByteLevel"}}},
             {"model", model}};
  json cfg = {{"bos_token", "<|endoftext|>"},
              {"eos_token", {{"content", "<|endoftext|>"}, {"special", true}}},
              {"chat_template", "{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}"}};
  if (post.is_null()) cfg["add_bos_token"] = false;
  std::string dir = temp_dir(name);
  std::ofstream(dir + "/tokenizer.json") << tj.dump();
  std::ofstream(dir + "/tokenizer_config.json") << cfg.dump();
  if (!gen.is_null()) std::ofstream(dir + "/generation_config.json") << gen.dump();
  return dir;
}

// HF's pre_tokenizer: Split(regex) followed by a ByteLevel that does not split again.
nlohmann::json split_then_bytelevel(const std::string& regex) {
  using nlohmann::json;
  return {{"type", "Sequence"},
          {"pretokenizers",
           json::array({{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
                        {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}})}};
}

TEST(Tokenizer, HuggingFaceTokenizerJson) {
  JF_SHARED_PATH(path, vocab_rel("gpt-2"));
  auto ref = load_gguf_tokenizer(path);
  auto cases = read_vocab_cases(path);
  const nlohmann::json bytelevel = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  const std::string gpt2_regex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  for (bool seq : {false, true}) {
    std::string dir = write_hf_from_gguf(*ref, seq ? "hf_seq" : "hf_bl", seq ? split_then_bytelevel(gpt2_regex) : bytelevel);
    auto tok = Tokenizer::from_hf(dir);
    EXPECT_EQ(tok->spec().kind, VocabKind::Bpe);
    EXPECT_EQ(tok->spec().pre, "gpt-2");
    EXPECT_EQ(tok->spec().tokens, ref->spec().tokens);
    EXPECT_EQ(tok->spec().types, ref->spec().types);
    EXPECT_EQ(tok->bos(), 50256);
    EXPECT_EQ(tok->eos(), 50256);
    EXPECT_FALSE(tok->spec().add_bos);
    EXPECT_NE(tok->spec().chat_template.find("<|im_start|>"), std::string::npos);
    EXPECT_EQ(check_cases(*tok, cases, seq ? "hf Split+ByteLevel" : "hf ByteLevel"), 0);

    // Through a real GGUF file: the explicit regexes and EOG set survive.
    GgufWriter w;
    tok->to_gguf(w.meta());
    const std::string gguf = dir + "/tok.gguf";
    w.write(gguf);
    auto back = load_gguf_tokenizer(gguf);
    EXPECT_EQ(back->spec().pre_regexes, tok->spec().pre_regexes);
    EXPECT_EQ(back->spec().eog, tok->spec().eog);
    EXPECT_EQ(back->spec().chat_template, tok->spec().chat_template);
    EXPECT_EQ(check_cases(*back, cases, "hf -> gguf -> tokenizer"), 0);
    std::filesystem::remove_all(dir);
  }
}

// Qwen2.5 / Llama-3 style tokenizer.json: the Split regex spelled the HF way must behave like llama.cpp's list
// for that pre-tokenizer (checked on every fixture string, qwen2's included, with the gpt-2 vocabulary).
TEST(Tokenizer, HuggingFaceRegexesMatchLlamaCppLists) {
  using nlohmann::json;
  JF_SHARED_PATH(path, vocab_rel("gpt-2"));
  auto f = GgufFile::open(path);
  std::vector<std::string> texts;
  for (const char* v : {"gpt-2", "qwen2", "llama-spm"}) {
    JF_SHARED_PATH(inp, vocab_rel(v) + ".inp");  // qwen2 has fixtures but no vocabulary file
    for (auto& c : read_vocab_cases(inp.substr(0, inp.size() - 4))) texts.push_back(c.text);
  }
  struct Case {
    const char* pre;
    const char* hf_regex;
    bool ignore_merges;
  };
  const Case cases[] = {
      {"qwen2", R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)", false},
      {"llama-bpe", R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)", true},
      {"gpt-4o", R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)", false},
  };
  for (const Case& c : cases) {
    GgufMetadata meta = f->meta();
    meta.set("tokenizer.ggml.pre", GgufValue::of_string(c.pre));
    auto ref = Tokenizer::from_gguf(meta);
    json post = {{"type", "Sequence"},
                 {"processors", json::array({{{"type", "ByteLevel"}},
                                             {{"type", "TemplateProcessing"},
                                              {"single", json::array({{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
                                                                      {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}}})}};
    std::string dir = write_hf_from_gguf(*ref, c.pre, split_then_bytelevel(c.hf_regex), post, c.ignore_merges,
                                         json{{"eos_token_id", json::array({50256, 3})}});
    auto tok = Tokenizer::from_hf(dir);
    EXPECT_EQ(tok->spec().pre, c.pre);
    EXPECT_TRUE(tok->spec().add_bos);  // from the TemplateProcessing post-processor
    EXPECT_TRUE(tok->is_eog(3));       // from generation_config.json
    for (const std::string& t : texts) EXPECT_EQ(tok->encode(t, false, false), ref->encode(t, false, false)) << c.pre << ": " << t;
    std::filesystem::remove_all(dir);
  }
}

// Writes a Llama-2-style tokenizer.json (BPE + byte_fallback, "▁" normalizer) for an SPM vocabulary, with
// merges derived from the scores the way Hugging Face's SentencePiece converter does.
std::string write_hf_spm(const Tokenizer& src, const std::string& name) {
  using nlohmann::json;
  const VocabSpec& s = src.spec();
  std::unordered_map<std::string, int32_t> ids;
  for (size_t i = 0; i < s.tokens.size(); i++) ids[s.tokens[i]] = static_cast<int32_t>(i);
  struct M {
    float score;
    int32_t id, l, r;
    std::string text;
  };
  std::vector<M> ms;
  for (size_t i = 0; i < s.tokens.size(); i++) {
    if (s.types[i] != TokenKind::Normal) continue;
    const std::string& t = s.tokens[i];
    for (size_t k = 1; k < t.size(); k++) {
      if ((static_cast<unsigned char>(t[k]) & 0xC0) == 0x80) continue;  // split at character boundaries
      auto l = ids.find(t.substr(0, k)), r = ids.find(t.substr(k));
      if (l != ids.end() && r != ids.end()) ms.push_back({s.scores[i], static_cast<int32_t>(i), l->second, r->second, t.substr(0, k) + " " + t.substr(k)});
    }
  }
  std::stable_sort(ms.begin(), ms.end(), [](const M& a, const M& b) {
    return a.score != b.score ? a.score > b.score : a.id != b.id ? a.id < b.id : std::make_pair(a.l, a.r) < std::make_pair(b.l, b.r);
  });
  json merges = json::array(), vocab = json::object(), added = json::array();
  for (const M& m : ms) merges.push_back(m.text);
  for (size_t i = 0; i < s.tokens.size(); i++) {
    vocab[s.tokens[i]] = i;
    if (s.types[i] == TokenKind::Control || s.types[i] == TokenKind::Unknown)
      added.push_back({{"id", i}, {"content", s.tokens[i]}, {"special", true}});
  }
  json tj = {{"added_tokens", added},
             {"normalizer", {{"type", "Sequence"},
                             {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", "\xE2\x96\x81"}},
                                                          {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}})}}},
             {"pre_tokenizer", nullptr},
             {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"byte_fallback", true}, {"fuse_unk", true}, {"vocab", vocab}, {"merges", merges}}}};
  json cfg = {{"bos_token", {{"content", "<s>"}}}, {"eos_token", "</s>"}, {"add_bos_token", true}, {"add_eos_token", false}};
  std::string dir = temp_dir(name);
  std::ofstream(dir + "/tokenizer.json") << tj.dump();
  std::ofstream(dir + "/tokenizer_config.json") << cfg.dump();
  return dir;
}

TEST(Tokenizer, HuggingFaceSentencePieceBpe) {
  JF_SHARED_PATH(path, vocab_rel("llama-spm"));
  auto ref = load_gguf_tokenizer(path);
  std::string dir = write_hf_spm(*ref, "hf_spm");
  auto tok = Tokenizer::from_hf(dir);
  EXPECT_EQ(tok->spec().kind, VocabKind::Spm);
  EXPECT_TRUE(tok->spec().add_space_prefix);
  EXPECT_EQ(tok->spec().tokens, ref->spec().tokens);
  EXPECT_EQ(tok->spec().types, ref->spec().types);
  EXPECT_EQ(std::vector<int32_t>({tok->bos(), tok->eos(), tok->spec().unk}), std::vector<int32_t>({1, 2, 0}));
  EXPECT_EQ(check_cases(*tok, read_vocab_cases(path), "hf sentencepiece"), 0);
  std::filesystem::remove_all(dir);
}

TEST(Tokenizer, StreamingDecoderEmitsWholeCharacters) {
  JF_SHARED_PATH(spm_path, vocab_rel("llama-spm"));
  JF_SHARED_PATH(gpt2_path, vocab_rel("gpt-2"));
  auto spm = load_gguf_tokenizer(spm_path);
  auto gpt2 = load_gguf_tokenizer(gpt2_path);
  const std::string llama = "\xF0\x9F\xA6\x99";  // U+1F999, spelled with byte-fallback tokens in Llama's vocabulary

  // Byte fallback: the four byte tokens of U+1F999 give nothing, nothing, nothing, the whole character.
  std::vector<int32_t> ids = spm->encode(llama, false, false);
  ASSERT_EQ(ids.size(), 5u);  // "▁" + 4 byte tokens
  StreamingDecoder sd(*spm);
  EXPECT_EQ(sd.push(ids[0]), "");  // the dummy-prefix space of the first token is dropped
  EXPECT_EQ(sd.push(ids[1]), "");
  EXPECT_EQ(sd.push(ids[2]), "");
  EXPECT_EQ(sd.push(ids[3]), "");
  EXPECT_EQ(sd.push(ids[4]), llama);
  EXPECT_EQ(sd.finish(), "");

  // BOS + "▁Once" streams "Once".
  std::vector<int32_t> once = spm->encode("Once upon a time", true, false);
  StreamingDecoder so(*spm);
  EXPECT_EQ(so.push(once[0]), "");
  EXPECT_EQ(so.push(once[1]), "Once");

  for (const Tokenizer* tok : {spm.get(), gpt2.get()}) {
    const std::string text = "Hello " + llama + " w\xC3\xB6rld \xE4\xBD\xA0\xE5\xA5\xBD\n\xF0\x9F\x9A\x80 (normal) \xE2\x9C\x85";
    std::vector<int32_t> t = tok->encode(text, true, false);
    StreamingDecoder dec(*tok);
    std::string streamed;
    for (int32_t id : t) {
      std::string piece = dec.push(id);
      EXPECT_TRUE(complete_utf8(piece)) << "broken UTF-8 handed out after token " << id;
      streamed += piece;
    }
    streamed += dec.finish();
    EXPECT_EQ(streamed, tok->decode(t));
    EXPECT_EQ(streamed, text);
  }

  // An unfinished character at the end becomes U+FFFD; a stray continuation byte too.
  StreamingDecoder tail(*spm);
  EXPECT_EQ(tail.push(3 + 0xE4), "");
  EXPECT_EQ(tail.finish(), "\xEF\xBF\xBD");
  StreamingDecoder stray(*spm);
  EXPECT_EQ(stray.push(3 + 0x80), "\xEF\xBF\xBD");
}

TEST(Tokenizer, MalformedInputsThrow) {
  JF_SHARED_PATH(bin_path, "models/tokenizers/tokenizer.bin");
  const std::string bytes = slurp(bin_path);
  std::string dir = temp_dir("malformed");
  for (size_t cut : {size_t(2), size_t(4), size_t(100), bytes.size() / 2, bytes.size() - 1}) {
    const std::string p = dir + "/cut.bin";
    std::ofstream(p, std::ios::binary) << bytes.substr(0, cut);
    EXPECT_THROW(Tokenizer::from_llama2c(p, 32000), Error) << "cut at " << cut;
  }
  EXPECT_THROW(Tokenizer::from_llama2c(bin_path, 32001), Error);  // more tokens than the file holds
  EXPECT_THROW(Tokenizer::from_llama2c(dir + "/missing.bin", 32000), Error);
  EXPECT_THROW(Tokenizer::from_llama2c(bin_path, 0), Error);

  GgufMetadata no_tokens;
  no_tokens.set("tokenizer.ggml.model", GgufValue::of_string("llama"));
  EXPECT_THROW(Tokenizer::from_gguf(no_tokens), Error);
  EXPECT_THROW(Tokenizer::from_gguf(GgufMetadata{}), Error);
  GgufMetadata bad_model = no_tokens;
  bad_model.set("tokenizer.ggml.model", GgufValue::of_string("bert"));
  bad_model.set("tokenizer.ggml.tokens", GgufValue::of_strings({"a"}));
  EXPECT_THROW(Tokenizer::from_gguf(bad_model), Error);

  JF_SHARED_PATH(gpt2_path, vocab_rel("gpt-2"));
  auto f = GgufFile::open(gpt2_path);
  GgufMetadata meta = f->meta();
  meta.set("tokenizer.ggml.pre", GgufValue::of_string("no-such-pre"));
  try {
    Tokenizer::from_gguf(meta);
    FAIL() << "unknown pre-tokenizer accepted";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("no-such-pre"), std::string::npos) << msg;
    EXPECT_NE(msg.find("qwen2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("llama-bpe"), std::string::npos) << msg;
  }
  {  // R1-Distill-Qwen files name Qwen2's split "deepseek-r1-qwen": the same tokens
    GgufMetadata q = f->meta(), r1 = f->meta();
    q.set("tokenizer.ggml.pre", GgufValue::of_string("qwen2"));
    r1.set("tokenizer.ggml.pre", GgufValue::of_string("deepseek-r1-qwen"));
    const std::string text = "Hello world 12345, it's 2024!\n  done";
    EXPECT_EQ(Tokenizer::from_gguf(r1)->encode(text, false, false), Tokenizer::from_gguf(q)->encode(text, false, false));
  }
  meta = f->meta();
  meta.set("tokenizer.ggml.scores", GgufValue::of_f32s({1.0f, 2.0f}));
  EXPECT_THROW(Tokenizer::from_gguf(meta), Error);
  meta = f->meta();
  meta.erase("tokenizer.ggml.merges");
  EXPECT_THROW(Tokenizer::from_gguf(meta), Error);

  VocabSpec bad;
  bad.kind = VocabKind::Bpe;
  bad.pre = "gpt-2";
  bad.tokens = {"a", "b", "ab"};
  bad.merges = {"ab"};
  EXPECT_THROW(Tokenizer{bad}, Error);  // merge without a space
  bad.merges = {"a b"};
  bad.pre_regexes = {"(unclosed"};
  EXPECT_THROW(Tokenizer{bad}, Error);
  bad.pre_regexes.clear();
  bad.bos = 7;
  EXPECT_THROW(Tokenizer{bad}, Error);
  EXPECT_THROW(Tokenizer{VocabSpec{}}, Error);

  EXPECT_THROW(Tokenizer::from_hf(dir + "/nowhere"), Error);
  std::ofstream(dir + "/tokenizer.json") << "{ not json";
  EXPECT_THROW(Tokenizer::from_hf(dir), Error);
  std::ofstream(dir + "/tokenizer.json") << R"({"model": {"type": "Unigram", "vocab": []}})";
  EXPECT_THROW(Tokenizer::from_hf(dir), Error);
  std::filesystem::remove_all(dir);
}

TEST(Tokenizer, TinyBpeVocabulary) {
  // A hand-made byte-level vocabulary: merges by rank, a user-defined token, ignore_merges for Llama-3.
  VocabSpec s;
  s.kind = VocabKind::Bpe;
  s.pre = "gpt-2";
  s.tokens = {"a", "b", "c", "ab", "bc", "abc", "\xC4\xA0", "\xC4\xA0" "a", "<x>"};
  s.types.assign(s.tokens.size(), TokenKind::Normal);
  s.types[8] = TokenKind::UserDefined;
  s.merges = {"b c", "a b", "ab c", "\xC4\xA0 a"};
  Tokenizer tok(s);
  EXPECT_EQ(tok.encode("abc", false, false), std::vector<int32_t>({0, 4}));  // "b c" ranks first: a + bc
  EXPECT_EQ(tok.encode("ab a", false, false), std::vector<int32_t>({3, 7}));
  EXPECT_EQ(tok.encode("a<x>b", false, false), std::vector<int32_t>({0, 8, 1}));
  EXPECT_EQ(tok.decode(std::vector<int32_t>{0, 8, 7}), "a<x> a");
  s.pre = "llama-bpe";  // whole words that are tokens are taken as they are
  Tokenizer l3(s);
  EXPECT_EQ(l3.encode("abc", false, false), std::vector<int32_t>({5}));
}

TEST(Tokenizer, EncodesLongPromptQuickly) {
  JF_SHARED_PATH(path, vocab_rel("falcon"));
  auto tok = load_gguf_tokenizer(path);
  std::string text;
  for (const auto& c : read_vocab_cases(path)) text += c.text + " ";
  while (text.size() < 9000) text += text;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> ids = tok->encode(text, true, true);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(ids.size(), 2000u);
  EXPECT_LT(ms, 500.0) << ids.size() << " tokens";
  std::printf("encoded %zu tokens (%zu bytes) in %.2f ms\n", ids.size(), text.size(), ms);

  // Concurrent use of one tokenizer gives the same ids.
  std::vector<int32_t> other;
  std::thread th([&] { other = tok->encode(text, true, true); });
  std::vector<int32_t> mine = tok->encode(text, true, true);
  th.join();
  EXPECT_EQ(mine, ids);
  EXPECT_EQ(other, ids);
}

// Large texts are encoded in pieces (--ngram-corpus): the pieces must concatenate to the text, stay within
// the size, end after the window's last newline when it has one, and otherwise never split a character.
TEST(ValidUtf8, ReplacesBrokenSequencesAndKeepsValidText) {
  EXPECT_EQ(valid_utf8("plain \xc3\xa9 text"), "plain \xc3\xa9 text");
  EXPECT_EQ(valid_utf8("cut \xc3"), "cut \xEF\xBF\xBD");
  EXPECT_EQ(valid_utf8("\xff\xfe"), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(TextPieces, CutAfterNewlinesAndNeverInsideACharacter) {
  std::string text;
  const char* parts[] = {"a", "bc", "\n", "\xc3\xa9", "\xe2\x96\x81", "\xf0\x9f\x99\x82", "word ", "\n\n"};
  uint64_t state = 12345;
  for (int i = 0; i < 4000; i++) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    // Long stretches without newlines too: only every 8th draw may pick one.
    int k = static_cast<int>((state >> 33) % 8);
    if ((k == 2 || k == 7) && (i % 8) != 0) k = 1;
    text += parts[k];
  }
  for (size_t max_bytes : {size_t(1), size_t(3), size_t(4), size_t(7), size_t(64), size_t(1000), size_t(1) << 20}) {
    const auto pieces = text_pieces(text, max_bytes);
    std::string joined;
    size_t at = 0;
    for (size_t i = 0; i < pieces.size(); i++) {
      const std::string_view p = pieces[i];
      ASSERT_FALSE(p.empty());
      ASSERT_LE(p.size(), max_bytes);
      ASSERT_EQ(p.data(), text.data() + at) << "pieces are consecutive views of the text";
      joined += p;
      const size_t end = at + p.size();
      if (i + 1 < pieces.size()) {
        const std::string_view window = std::string_view(text).substr(at, max_bytes);
        const size_t nl = window.rfind('\n');
        if (nl != std::string_view::npos) {
          ASSERT_EQ(end, at + nl + 1) << "max " << max_bytes << " piece " << i;
        } else if (max_bytes >= 4) {  // room for any whole character
          ASSERT_NE(static_cast<unsigned char>(text[end]) & 0xC0, 0x80) << "max " << max_bytes << " piece " << i;
        }
      }
      at = end;
    }
    ASSERT_EQ(joined, text) << "max " << max_bytes;
  }
  EXPECT_TRUE(text_pieces("", 10).empty());
  EXPECT_THROW(text_pieces("abc", 0), std::logic_error);  // a caller bug, not bad input
}

}  // namespace
}  // namespace jf
