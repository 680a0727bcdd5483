// Tokenizer from GGUF metadata (and back), and from a llama2.c tokenizer.bin; llama.cpp's defaults and EOG rules.
#include <cctype>
#include <cstring>
#include <initializer_list>

#include "base/error.h"
#include "base/mapped_file.h"
#include "formats/gguf.h"
#include "tokenizer/internal.h"
#include "tokenizer/pretokenize.h"

namespace jf {

namespace {

// Keys jf adds so that a vocabulary loaded from tokenizer.json survives to_gguf -> from_gguf unchanged.
const char* const kKeyEog = "jf.tokenizer.eog_token_ids";
const char* const kKeyRegexes = "jf.tokenizer.pre_regexes";

int32_t find_token(const VocabSpec& s, std::initializer_list<const char*> names) {
  for (const char* nm : names) {
    for (size_t i = 0; i < s.tokens.size(); i++) {
      if (s.tokens[i] == nm) return static_cast<int32_t>(i);
    }
  }
  return -1;
}

}  // namespace

bool phi3_by_name(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos;
}

void strip_after_phi3_specials(VocabSpec& spec) {
  // llama.cpp keys this on the model's name (nothing in the vocabulary marks it): every special token and
  // "</s>" drop the whitespace that follows them, except <unk>, <s> and <|endoftext|> (llama-vocab.cpp).
  for (size_t i = 0; i < spec.tokens.size(); i++) {
    const TokenKind k = spec.types[i];
    const std::string& t = spec.tokens[i];
    const bool special = k == TokenKind::Control || k == TokenKind::UserDefined || k == TokenKind::Unknown;
    if ((special || t == "</s>") && t != "<unk>" && t != "<s>" && t != "<|endoftext|>")
      spec.rstrip.push_back(static_cast<int32_t>(i));
  }
}

void detect_eog_tokens(VocabSpec& spec) {
  // Names llama.cpp treats as end of generation, whatever the file says (llama-vocab.cpp).
  static const char* const kEogNames[] = {
      "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
      "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
      "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>"};
  // Gemma 4's "</s>" is text: llama.cpp takes it back out of the list when "<|tool_response>" is there.
  const bool s_is_text = find_token(spec, {"<|tool_response>"}) >= 0;
  std::vector<int32_t> found;
  for (size_t i = 0; i < spec.tokens.size(); i++) {
    for (const char* nm : kEogNames) {
      if (spec.tokens[i] == nm && !(s_is_text && spec.tokens[i] == "</s>")) found.push_back(static_cast<int32_t>(i));
    }
  }
  // EOT fallback for DeepSeek, and the fill-in-the-middle tokens llama.cpp also stops on.
  if (found.empty()) {
    int32_t ds = find_token(spec, {"<｜end▁of▁sentence｜>"});
    if (ds >= 0) found.push_back(ds);
  }
  for (auto names : {std::initializer_list<const char*>{"<|fim_pad|>", "<fim-pad>", "<PAD>"},
                     std::initializer_list<const char*>{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>"},
                     std::initializer_list<const char*>{"<|file_sep|>"}}) {
    int32_t id = find_token(spec, names);
    if (id >= 0) found.push_back(id);
  }
  if (spec.types.size() != spec.tokens.size()) spec.types.resize(spec.tokens.size(), TokenKind::Normal);
  for (int32_t id : found) {
    spec.types[id] = TokenKind::Control;  // llama.cpp overrides the type of control-looking EOG tokens
    spec.eog.push_back(id);
  }
}

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufMetadata& meta) {
  if (!meta.has("tokenizer.ggml.model")) throw Error("GGUF has no tokenizer (missing 'tokenizer.ggml.model')");
  const std::string model = meta.get_string("tokenizer.ggml.model");
  VocabSpec s;
  if (model == "llama") {
    s.kind = VocabKind::Spm;
  } else if (model == "gpt2") {
    s.kind = VocabKind::Bpe;
  } else {
    throw Error("unsupported tokenizer model '" + model + "' in tokenizer.ggml.model (supported: llama, gpt2)");
  }
  if (!meta.has("tokenizer.ggml.tokens")) throw Error("GGUF tokenizer has no vocabulary (missing 'tokenizer.ggml.tokens')");
  s.tokens = meta.get_strings("tokenizer.ggml.tokens");
  const int64_t n = static_cast<int64_t>(s.tokens.size());
  if (meta.has("tokenizer.ggml.scores")) s.scores = meta.get_floats("tokenizer.ggml.scores");
  if (meta.has("tokenizer.ggml.token_type")) {
    for (int32_t t : meta.get_ints("tokenizer.ggml.token_type")) s.types.push_back(static_cast<TokenKind>(t));
  }
  if (!s.scores.empty() && static_cast<int64_t>(s.scores.size()) != n)
    throw Error("GGUF tokenizer has " + std::to_string(n) + " tokens but " + std::to_string(s.scores.size()) + " scores");
  if (!s.types.empty() && static_cast<int64_t>(s.types.size()) != n)
    throw Error("GGUF tokenizer has " + std::to_string(n) + " tokens but " + std::to_string(s.types.size()) + " token types");

  if (s.kind == VocabKind::Spm) {
    s.pre = "default";
    s.bos = 1, s.eos = 2, s.unk = 0;  // llama.cpp's LLaMA defaults
    s.add_bos = true;
    s.add_space_prefix = true;
  } else {
    if (!meta.has("tokenizer.ggml.merges")) throw Error("GGUF BPE tokenizer has no merges (missing 'tokenizer.ggml.merges')");
    s.merges = meta.get_strings("tokenizer.ggml.merges");
    s.pre = meta.get_string("tokenizer.ggml.pre", "default");
    if (meta.has(kKeyRegexes)) s.pre_regexes = meta.get_strings(kKeyRegexes);
    if (s.pre_regexes.empty()) pre_tokenizer_regexes(s.pre);  // unknown names fail here, with the list
    s.bos = 11, s.eos = 11;  // llama.cpp's (Falcon) defaults for gpt2 vocabularies
    s.add_bos = pre_tokenizer_adds_bos(s.pre);
    s.add_space_prefix = false;
  }
  for (int32_t* id : {&s.bos, &s.eos, &s.unk}) {
    if (*id >= n) *id = -1;
  }
  // Explicit ids; a value outside the vocabulary (e.g. 0xFFFFFFFF) means "none".
  auto read_id = [&](const char* key, int32_t& id) {
    if (!meta.has(key)) return false;
    int64_t v = meta.get_int(key);
    id = v >= 0 && v < n ? static_cast<int32_t>(v) : -1;
    return true;
  };
  read_id("tokenizer.ggml.bos_token_id", s.bos);
  read_id("tokenizer.ggml.eos_token_id", s.eos);
  read_id("tokenizer.ggml.unknown_token_id", s.unk);
  read_id("tokenizer.ggml.padding_token_id", s.pad);
  s.add_bos = meta.get_bool("tokenizer.ggml.add_bos_token", s.add_bos);
  s.add_eos = meta.get_bool("tokenizer.ggml.add_eos_token", s.add_eos);
  s.add_space_prefix = meta.get_bool("tokenizer.ggml.add_space_prefix", s.add_space_prefix);
  s.chat_template = meta.get_string("tokenizer.chat_template", "");

  if (meta.has(kKeyEog)) {
    s.eog = meta.get_ints(kKeyEog);  // written by to_gguf: already complete
  } else {
    for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
      int32_t id = -1;
      if (read_id(key, id) && id >= 0) s.eog.push_back(id);
    }
    detect_eog_tokens(s);
  }
  if (phi3_by_name(meta.get_string("general.name", ""))) strip_after_phi3_specials(s);
  return std::make_unique<Tokenizer>(std::move(s));
}

void Tokenizer::to_gguf(GgufMetadata& meta) const {
  const VocabSpec& s = impl_->spec;
  const bool spm = s.kind == VocabKind::Spm;
  meta.set("tokenizer.ggml.model", GgufValue::of_string(spm ? "llama" : "gpt2"));
  meta.set("tokenizer.ggml.pre", GgufValue::of_string(spm ? "default" : s.pre));
  meta.set("tokenizer.ggml.tokens", GgufValue::of_strings(s.tokens));
  meta.set("tokenizer.ggml.scores", GgufValue::of_f32s(s.scores));
  std::vector<int32_t> types(s.types.size());
  for (size_t i = 0; i < types.size(); i++) types[i] = static_cast<int32_t>(s.types[i]);
  meta.set("tokenizer.ggml.token_type", GgufValue::of_i32s(types));
  if (spm) {
    meta.erase("tokenizer.ggml.merges");
  } else {
    meta.set("tokenizer.ggml.merges", GgufValue::of_strings(s.merges));
  }
  auto put_id = [&](const char* key, int32_t id) {
    meta.set(key, GgufValue::of_u32(id >= 0 ? static_cast<uint32_t>(id) : 0xFFFFFFFFu));
  };
  put_id("tokenizer.ggml.bos_token_id", s.bos);
  put_id("tokenizer.ggml.eos_token_id", s.eos);
  // No padding token (and no unknown token in a BPE vocabulary) is what llama.cpp assumes when the key is
  // absent; an explicit 0xFFFFFFFF there makes it warn of a bad special token.
  if (s.unk >= 0 || spm) put_id("tokenizer.ggml.unknown_token_id", s.unk);
  else meta.erase("tokenizer.ggml.unknown_token_id");
  if (s.pad >= 0) put_id("tokenizer.ggml.padding_token_id", s.pad);
  else meta.erase("tokenizer.ggml.padding_token_id");
  meta.set("tokenizer.ggml.add_bos_token", GgufValue::of_bool(s.add_bos));
  meta.set("tokenizer.ggml.add_eos_token", GgufValue::of_bool(s.add_eos));
  meta.set("tokenizer.ggml.add_space_prefix", GgufValue::of_bool(s.add_space_prefix));
  if (s.chat_template.empty()) {
    meta.erase("tokenizer.chat_template");
  } else {
    meta.set("tokenizer.chat_template", GgufValue::of_string(s.chat_template));
  }
  meta.set(kKeyEog, GgufValue::of_i32s(s.eog));
  if (s.pre_regexes.empty()) {
    meta.erase(kKeyRegexes);
  } else {
    meta.set(kKeyRegexes, GgufValue::of_strings(s.pre_regexes));
  }
}

std::unique_ptr<Tokenizer> Tokenizer::from_llama2c(const std::string& path, int32_t vocab_size) {
  if (vocab_size <= 0) throw Error(path + ": invalid vocabulary size " + std::to_string(vocab_size));
  MappedFile f(path);
  const uint8_t* d = f.data();
  const size_t size = f.size();
  size_t pos = 0;
  auto need = [&](size_t k, const std::string& what) {
    if (k > size - pos) throw Error(path + ": truncated tokenizer file while reading " + what + " (at byte " + std::to_string(pos) + ")");
  };
  need(4, "the header");
  int32_t max_len;
  std::memcpy(&max_len, d, 4);
  pos = 4;
  if (max_len <= 0) throw Error(path + ": not a llama2.c tokenizer (max token length " + std::to_string(max_len) + ")");

  VocabSpec s;
  s.kind = VocabKind::Spm;
  s.tokens.resize(vocab_size);
  s.scores.resize(vocab_size);
  s.types.resize(vocab_size, TokenKind::Normal);
  for (int32_t i = 0; i < vocab_size; i++) {
    const std::string what = "token " + std::to_string(i) + " of " + std::to_string(vocab_size);
    need(8, what);
    float score;
    int32_t len;
    std::memcpy(&score, d + pos, 4);
    std::memcpy(&len, d + pos + 4, 4);
    pos += 8;
    if (len < 0 || len > max_len) throw Error(path + ": bad length " + std::to_string(len) + " for " + what);
    need(static_cast<size_t>(len), what);
    std::string piece(reinterpret_cast<const char*>(d + pos), static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
    // llama2.c's export writes SentencePiece's "▁" as ' ' and BOS/EOS as "\n<s>\n" / "\n</s>\n".
    std::string t;
    for (char c : piece) {
      if (c == ' ') {
        t += tok::kSpace;
      } else {
        t += c;
      }
    }
    s.tokens[i] = std::move(t);
    s.scores[i] = score;
  }
  auto set = [&](int32_t id, const char* text, TokenKind k) {
    if (id < vocab_size) s.tokens[id] = text, s.types[id] = k;
  };
  set(0, "<unk>", TokenKind::Unknown);
  set(1, "<s>", TokenKind::Control);
  set(2, "</s>", TokenKind::Control);
  for (int32_t i = 3; i < vocab_size; i++) {
    const std::string& t = s.tokens[i];
    if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') s.types[i] = TokenKind::Byte;
  }
  s.unk = 0;
  s.bos = vocab_size > 1 ? 1 : -1;
  s.eos = vocab_size > 2 ? 2 : -1;
  s.add_bos = true;
  s.add_space_prefix = true;
  detect_eog_tokens(s);
  return std::make_unique<Tokenizer>(std::move(s));
}

}  // namespace jf
