// Tokenizer from a Hugging Face directory: tokenizer.json (BPE model) + tokenizer_config.json / generation_config.json.
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "tokenizer/internal.h"
#include "tokenizer/pretokenize.h"

namespace jf {

namespace {

using nlohmann::json;

json load_json(const std::string& path) {
  std::string text = read_text_file(path);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(path + ": invalid JSON: " + e.what());
  }
}

// Escapes regex metacharacters of a literal Split pattern.
std::string regex_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// The first object with "type": type anywhere inside j (pre-tokenizers and processors nest in Sequences).
const json* find_type(const json& j, const std::string& type) {
  if (j.is_object()) {
    if (j.contains("type") && j["type"] == type) return &j;
    for (const auto& [k, v] : j.items()) {
      if (const json* r = find_type(v, type)) return r;
    }
  } else if (j.is_array()) {
    for (const auto& v : j) {
      if (const json* r = find_type(v, type)) return r;
    }
  }
  return nullptr;
}

bool mentions(const json& j, const std::string& type) { return find_type(j, type) != nullptr; }

// Collects the split regexes of a (possibly nested) pre_tokenizer, in order.
void collect_regexes(const json& pt, std::vector<std::string>& out, const std::string& where) {
  if (pt.is_null()) return;
  const std::string type = pt.value("type", "");
  if (type == "Sequence") {
    for (const auto& p : pt.at("pretokenizers")) collect_regexes(p, out, where);
  } else if (type == "Split") {
    const json& pat = pt.at("pattern");
    std::string behavior = pt.value("behavior", "Isolated");
    if (behavior != "Isolated" || pt.value("invert", false))
      throw Error(where + ": Split pre-tokenizer with behavior '" + behavior + "' is not supported (only Isolated)");
    if (pat.contains("Regex")) {
      out.push_back(pat["Regex"].get<std::string>());
    } else if (pat.contains("String")) {
      out.push_back(regex_escape(pat["String"].get<std::string>()));
    } else {
      throw Error(where + ": Split pre-tokenizer without a pattern");
    }
  } else if (type == "ByteLevel") {
    if (pt.value("use_regex", true)) out.push_back(kByteLevelRegex);
  } else if (type == "Digits") {
    out.push_back(pt.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)");
  } else if (type != "Metaspace") {
    throw Error(where + ": pre-tokenizer '" + type + "' is not supported");
  }
}

// "tok" or {"content": "tok", ...} -> text; "" when absent.
std::string token_field(const json& cfg, const char* key) {
  if (!cfg.contains(key) || cfg[key].is_null()) return "";
  const json& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content")) return v["content"].get<std::string>();
  return "";
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_hf(const std::string& dir) {
  const std::string tj_path = dir + "/tokenizer.json";
  const json tj = load_json(tj_path);
  json cfg = json::object(), gen = json::object();
  if (file_exists(dir + "/tokenizer_config.json")) cfg = load_json(dir + "/tokenizer_config.json");
  if (file_exists(dir + "/generation_config.json")) gen = load_json(dir + "/generation_config.json");

  try {
    if (!tj.contains("model") || !tj["model"].is_object()) throw Error(tj_path + ": no 'model' object");
    const json& model = tj["model"];
    const std::string mtype = model.value("type", model.contains("merges") ? "BPE" : "");
    if (mtype != "BPE") throw Error(tj_path + ": tokenizer model '" + mtype + "' is not supported (only BPE)");
    if (!model.contains("vocab") || !model["vocab"].is_object()) throw Error(tj_path + ": BPE model has no vocab");

    // Vocabulary: model.vocab plus added_tokens; ids not covered become unused "[PADn]" entries.
    int64_t n = 0;
    for (const auto& [text, id] : model["vocab"].items()) n = std::max<int64_t>(n, id.get<int64_t>() + 1);
    const json added = tj.value("added_tokens", json::array());
    for (const auto& a : added) n = std::max<int64_t>(n, a.at("id").get<int64_t>() + 1);
    if (n <= 0 || n > (1 << 24)) throw Error(tj_path + ": bad vocabulary size " + std::to_string(n));
    VocabSpec s;
    s.tokens.resize(n);
    s.types.assign(n, TokenKind::Unused);
    std::vector<bool> set(n, false);
    for (const auto& [text, id] : model["vocab"].items()) {
      int64_t i = id.get<int64_t>();
      if (i < 0) throw Error(tj_path + ": negative token id for '" + text + "'");
      s.tokens[i] = text;
      s.types[i] = TokenKind::Normal;
      set[i] = true;
    }
    for (const auto& a : added) {
      int64_t i = a.at("id").get<int64_t>();
      if (i < 0) throw Error(tj_path + ": negative added token id");
      s.tokens[i] = a.at("content").get<std::string>();
      s.types[i] = a.value("special", false) ? TokenKind::Control : TokenKind::UserDefined;
      if (a.value("rstrip", false)) s.rstrip.push_back(static_cast<int32_t>(i));
      set[i] = true;
    }
    for (int64_t i = 0; i < n; i++) {
      if (!set[i]) s.tokens[i] = "[PAD" + std::to_string(i) + "]";
    }

    std::vector<std::string> merges;
    for (const auto& m : model.value("merges", json::array())) {
      if (m.is_string()) {
        merges.push_back(m.get<std::string>());
      } else if (m.is_array() && m.size() == 2) {
        merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
      } else {
        throw Error(tj_path + ": malformed merge entry " + m.dump());
      }
    }

    const json pre_tok = tj.value("pre_tokenizer", json());
    const json normalizer = tj.value("normalizer", json());
    const bool byte_level = mentions(pre_tok, "ByteLevel") || mentions(tj.value("decoder", json()), "ByteLevel");
    const bool metaspace = mentions(pre_tok, "Metaspace") || normalizer.dump().find("\xE2\x96\x81") != std::string::npos;
    const bool byte_fallback = model.value("byte_fallback", false);

    if (byte_level) {
      s.kind = VocabKind::Bpe;
      s.merges = std::move(merges);
      collect_regexes(pre_tok, s.pre_regexes, tj_path);
      if (s.pre_regexes.empty()) s.pre_regexes.push_back(R"([\s\S]+)");  // no splitting at all
      std::string name = pre_tokenizer_name_for(s.pre_regexes);
      const bool ignore_merges = model.value("ignore_merges", false);
      if (name == "llama-bpe" && !ignore_merges) name = "smaug-bpe";  // same regex, merges always applied
      s.pre = name.empty() ? "default" : name;
      s.add_bos = pre_tokenizer_adds_bos(s.pre);
      s.add_space_prefix = false;
    } else if (metaspace || byte_fallback) {
      // SentencePiece converted to HF BPE: priorities come from the merge order.
      s.kind = VocabKind::Spm;
      s.scores.assign(n, 0.0f);
      std::vector<bool> scored(n, false);
      tok::TokenMap ids;
      for (int64_t i = 0; i < n; i++) ids[s.tokens[i]] = static_cast<int32_t>(i);
      for (size_t r = 0; r < merges.size(); r++) {
        const std::string& m = merges[r];
        size_t sp = m.find(' ', 1);
        if (sp == std::string::npos) throw Error(tj_path + ": merge '" + m + "' is not of the form 'left right'");
        auto it = ids.find(m.substr(0, sp) + m.substr(sp + 1));
        if (it != ids.end() && !scored[it->second]) {
          s.scores[it->second] = -static_cast<float>(r + 1);
          scored[it->second] = true;
        }
      }
      for (int64_t i = 0; i < n; i++) {
        if (s.types[i] == TokenKind::Normal && s.tokens[i].size() == 6 && s.tokens[i].compare(0, 3, "<0x") == 0 &&
            s.tokens[i][5] == '>')
          s.types[i] = TokenKind::Byte;
      }
      bool prefix = false;
      const std::string nd = normalizer.dump();
      if (nd.find("\"Prepend\"") != std::string::npos) prefix = true;
      if (mentions(pre_tok, "Metaspace")) {
        std::string pd = pre_tok.dump();
        prefix = pd.find("\"prepend_scheme\":\"never\"") == std::string::npos &&
                 pd.find("\"add_prefix_space\":false") == std::string::npos;
      }
      s.add_space_prefix = prefix;
      s.add_bos = true;
      s.pre = "default";
    } else {
      throw Error(tj_path + ": neither a byte-level BPE nor a SentencePiece-style BPE tokenizer");
    }

    auto lookup = [&](const std::string& text) -> int32_t {
      if (text.empty()) return -1;
      for (int64_t i = 0; i < n; i++) {
        if (s.tokens[i] == text) return static_cast<int32_t>(i);
      }
      return -1;
    };
    if (model.contains("unk_token") && model["unk_token"].is_string()) {
      s.unk = lookup(model["unk_token"].get<std::string>());
      if (s.unk >= 0) s.types[s.unk] = TokenKind::Unknown;
    }
    // Defaults, then what the post-processor and tokenizer_config.json say.
    if (s.kind == VocabKind::Spm) {
      s.bos = lookup("<s>");
      s.eos = lookup("</s>");
    } else {
      s.bos = s.eos = lookup("<|endoftext|>");
    }
    const json post = tj.value("post_processor", json());
    if (const json* tp = find_type(post, "TemplateProcessing")) {
      const json& single = tp->value("single", json::array());
      if (single.is_array() && !single.empty() && single[0].contains("SpecialToken")) {
        int32_t id = lookup(single[0]["SpecialToken"].value("id", ""));
        if (id >= 0) s.bos = id, s.add_bos = true;  // the post-processor puts this token first
      }
    }
    if (int32_t id = lookup(token_field(cfg, "bos_token")); id >= 0) s.bos = id;
    if (int32_t id = lookup(token_field(cfg, "eos_token")); id >= 0) s.eos = id;
    if (int32_t id = lookup(token_field(cfg, "pad_token")); id >= 0) s.pad = id;
    if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) s.add_bos = cfg["add_bos_token"].get<bool>();
    if (cfg.contains("add_eos_token") && cfg["add_eos_token"].is_boolean()) s.add_eos = cfg["add_eos_token"].get<bool>();
    if (cfg.contains("chat_template")) {
      const json& ct = cfg["chat_template"];
      if (ct.is_string()) {
        s.chat_template = ct.get<std::string>();
      } else if (ct.is_array() && !ct.empty()) {
        s.chat_template = ct[0].value("template", "");
        for (const auto& e : ct) {
          if (e.value("name", "") == "default") s.chat_template = e.value("template", "");
        }
      }
    }
    if (gen.contains("eos_token_id")) {
      const json& e = gen["eos_token_id"];
      for (const json& v : e.is_array() ? e : json::array({e})) {
        if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < n) s.eog.push_back(v.get<int32_t>());
      }
    }
    detect_eog_tokens(s);
    return std::make_unique<Tokenizer>(std::move(s));
  } catch (const json::exception& e) {
    throw Error(tj_path + ": unexpected structure: " + e.what());
  }
}

}  // namespace jf
