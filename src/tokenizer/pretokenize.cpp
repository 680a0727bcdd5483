// Regex lists of llama.cpp's BPE pre-tokenizers and the PCRE2 (UTF + UCP) engine that applies them in sequence.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenize.h"

#include <pcre2.h>

#include <map>

#include "base/error.h"
#include "tokenizer/internal.h"

namespace jf {

const char* const kByteLevelRegex = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// The regexes below are the ones llama.cpp's llama-vocab.cpp lists for each pre-tokenizer type.
const char* const kGpt2 = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char* const kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-4o's (o200k) split: words keep a leading capitalised run and a trailing contraction; digits by three.
const char* const kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kPoro = R"( ?[^(\s|.,!?…。，、।۔،)]+)";
const char* const kCjk = "[一-龥ࠀ-一가-퟿]+";

const std::map<std::string, std::vector<std::string>>& pre_table() {
  static const std::map<std::string, std::vector<std::string>> t = [] {
    std::map<std::string, std::vector<std::string>> m;
    const std::vector<std::string> gpt2 = {kGpt2};
    const std::vector<std::string> llama3 = {kLlama3};
    const std::vector<std::string> qwen2 = {kQwen2};
    const std::vector<std::string> starcoder = {R"(\p{N})", kGpt2};
    const std::vector<std::string> poro = {kPoro};
    m["default"] = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"};
    for (const char* n : {"llama3", "llama-v3", "llama-bpe", "falcon3", "dbrx", "smaug-bpe", "chatglm-bpe"}) m[n] = llama3;
    // The code points an editor's Unicode normalization would change are written as escapes.
    m["deepseek-llm"] = {
        "[\r\n]",
        "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-"
        "ὗὙὛὝὟ-\\x{1F7D}ᾀ-ᾴᾶ-ᾼ\\x{1FBE}ῂ-ῄῆ-ῌῐ-\\x{1FD3}ῖ-\\x{1FDB}ῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤ\\x{2126}ℨ\\x{212A}-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-"
        "ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
        "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
        "\\s+$",
        kCjk,
        "\\p{N}+",
    };
    m["deepseek-coder"] = {"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"};
    m["deepseek-v3"] = {
        R"(\p{N}{1,3})",
        "[一-龥぀-ゟ゠-ヿ]+",
        R"re([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
    };
    m["falcon"] = {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"};
    m["mpt"] = gpt2;
    for (const char* n : {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}) m[n] = starcoder;
    for (const char* n : {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es", "jina-v2-de",
                          "jina-v2-code", "roberta-bpe", "olmo", "jais"})
      m[n] = gpt2;
    for (const char* n : {"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"}) m[n] = qwen2;  // R1-Distill-Qwen: same split
    for (const char* n : {"poro-chat", "bloom", "gpt3-finnish"}) m[n] = poro;
    m["viking"] = {kPoro, R"(\p{N})"};
    m["gpt-4o"] = {kGpt4o};  // Phi-4-mini
    m["tekken"] = {
        R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    };
    m["chameleon"] = {
        "<sentinel:[0-9]+>",
        "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
        R"(([\t\n]|    |  ))",
        R"(\p{N})",
        R"([\p{P}!-/:-@\[-`{-~])",
        kGpt2,
    };
    return m;
  }();
  return t;
}

}  // namespace

std::vector<std::string> pre_tokenizer_regexes(const std::string& pre) {
  const auto& t = pre_table();
  auto it = t.find(pre);
  if (it == t.end()) {
    std::string names;
    for (const auto& kv : t) names += (names.empty() ? "" : ", ") + kv.first;
    throw Error("unknown BPE pre-tokenizer '" + pre + "' (supported: " + names + ")");
  }
  return it->second;
}

std::vector<std::string> pre_tokenizer_names() {
  std::vector<std::string> names;
  for (const auto& kv : pre_table()) names.push_back(kv.first);
  return names;
}

bool pre_tokenizer_ignores_merges(const std::string& pre) {
  return pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3" || pre == "tekken";
}

bool pre_tokenizer_adds_bos(const std::string& pre) {
  return pre_tokenizer_ignores_merges(pre) || pre == "chameleon";
}

std::string pre_tokenizer_name_for(const std::vector<std::string>& regexes) {
  // Hugging Face spells the GPT-2 regex with a trailing "|\s+" that cannot change the split.
  // It also writes the contractions case-insensitively where llama.cpp spells out both cases.
  std::vector<std::string> norm = regexes;
  const std::string ci = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
  for (auto& r : norm) {
    if (r == kByteLevelRegex) r = kGpt2;
    if (r.compare(0, ci.size(), ci) == 0) r = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])" + r.substr(ci.size());
  }
  // Preferred names first, so that aliases with identical lists map to the canonical one.
  for (const char* n : {"gpt-2", "llama-bpe", "qwen2", "starcoder", "falcon", "default", "deepseek-coder",
                        "deepseek-llm", "deepseek-v3", "poro-chat", "viking", "tekken", "chameleon", "gpt-4o"}) {
    if (pre_table().at(n) == norm) return n;
  }
  return "";
}

// ---------------------------------------------------------------- PCRE2 splitter

struct RegexSplitter::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() {
    if (code) pcre2_code_free(code);
  }
};

RegexSplitter::RegexSplitter(const std::vector<std::string>& regexes) {
  if (regexes.empty()) throw Error("BPE pre-tokenizer has no regexes");
  for (const auto& r : regexes) {
    int err = 0;
    PCRE2_SIZE erroff = 0;
    // DOLLAR_ENDONLY: '$' means the end of the fragment, as in std::regex (ECMAScript), not "before a final \n".
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(r.data()), r.size(),
                                     PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err, &erroff, nullptr);
    if (!code) {
      PCRE2_UCHAR buf[256];
      pcre2_get_error_message(err, buf, sizeof(buf));
      throw Error("bad pre-tokenizer regex '" + r + "' at offset " + std::to_string(erroff) + ": " +
                  reinterpret_cast<const char*>(buf));
    }
    auto c = std::make_unique<Compiled>();
    c->code = code;
    c->jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    res_.push_back(std::move(c));
  }
}

RegexSplitter::~RegexSplitter() = default;

void RegexSplitter::split(std::string_view text, std::vector<std::pair<size_t, size_t>>& words) const {
  std::vector<std::pair<size_t, size_t>> cur, next;
  if (text.empty()) return;
  cur.emplace_back(0, text.size());
  struct MatchData {
    pcre2_match_data* md;
    ~MatchData() { pcre2_match_data_free(md); }
  } md{pcre2_match_data_create(1, nullptr)};
  if (!md.md) throw std::bad_alloc();

  for (const auto& re : res_) {
    next.clear();
    next.reserve(cur.size() * 2);
    for (auto [b, e] : cur) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + b);
      const size_t len = e - b;
      size_t last = 0, off = 0;
      while (off < len) {
        int rc = pcre2_match(re->code, subject, len, off, PCRE2_NO_UTF_CHECK, md.md, nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
          rc = pcre2_match(re->code, subject, len, off, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md.md, nullptr);
        }
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
          PCRE2_UCHAR buf[256];
          pcre2_get_error_message(rc, buf, sizeof(buf));
          throw Error(std::string("pre-tokenizer regex failed: ") + reinterpret_cast<const char*>(buf));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.md);
        size_t ms = ov[0], me = ov[1];
        if (me <= ms) {  // empty match: step over one character
          off = ms + tok::utf8_len(static_cast<unsigned char>(text[b + ms]));
          continue;
        }
        if (ms > last) next.emplace_back(b + last, b + ms);
        next.emplace_back(b + ms, b + me);
        last = off = me;
      }
      if (last < len) next.emplace_back(b + last, e);
    }
    std::swap(cur, next);
  }
  words.insert(words.end(), cur.begin(), cur.end());
}

}  // namespace jf
