// Loads Hugging Face Llama/Qwen2 directories (config.json, safetensors shards, tokenizer.json) into a
// Model, and re-lays out their Q/K weights for GGUF export. See hf.h.
#include "model/hf.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numbers>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "formats/safetensors.h"

namespace jf {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string join(const std::string& dir, const std::string& file) { return (fs::path(dir) / file).string(); }

json parse_json_file(const std::string& path) {
  json j;
  try {
    j = json::parse(read_text_file(path));
  } catch (const json::exception& e) {
    throw Error(path + ": invalid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(path + ": expected a JSON object at the top level");
  return j;
}

// Typed lookups in one JSON object; every error names the file and the key. Null counts as absent.
class JsonKeys {
 public:
  JsonKeys(const json& j, std::string path, std::string prefix = "")
      : j_(j), path_(std::move(path)), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string& what) const { throw Error(path_ + ": " + what); }
  const std::string& path() const { return path_; }
  const json* get(const std::string& key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  const json& need(const std::string& key) const {
    const json* v = get(key);
    if (!v) fail("missing key '" + prefix_ + key + "'");
    return *v;
  }
  int integer(const std::string& key) const { return to_int(key, need(key)); }
  int integer(const std::string& key, int dflt) const { return get(key) ? integer(key) : dflt; }
  double number(const std::string& key) const {
    const json& v = need(key);
    if (!v.is_number() || !std::isfinite(v.get<double>())) wrong(key, v, "a number");
    return v.get<double>();
  }
  double number(const std::string& key, double dflt) const { return get(key) ? number(key) : dflt; }
  bool boolean(const std::string& key, bool dflt) const {
    const json* v = get(key);
    if (v && !v->is_boolean()) wrong(key, *v, "true or false");
    return v ? v->get<bool>() : dflt;
  }
  std::string string(const std::string& key) const {
    const json& v = need(key);
    if (!v.is_string()) wrong(key, v, "a string");
    return v.get<std::string>();
  }

 private:
  [[noreturn]] void wrong(const std::string& key, const json& v, const char* want) const {
    std::string got = v.is_primitive() ? v.dump() : std::string("a JSON ") + v.type_name();
    if (got.size() > 40) got = got.substr(0, 40) + "...";
    fail("key '" + prefix_ + key + "' must be " + want + ", got " + got);
  }
  int to_int(const std::string& key, const json& v) const {
    if (!v.is_number_integer() || v.get<int64_t>() < INT_MIN || v.get<int64_t>() > INT_MAX ||
        (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT_MAX)))
      wrong(key, v, "an integer");
    return static_cast<int>(v.get<int64_t>());
  }
  const json& j_;
  std::string path_, prefix_;
};

// ---- config.json ----

const char* hf_arch_name(Arch a) { return a == Arch::Qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"; }

Arch read_arch(const JsonKeys& j) {
  std::string arch_class;
  if (const json* archs = j.get("architectures")) {
    if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string())
      j.fail("key 'architectures' must be a list of class names");
    arch_class = (*archs)[0].get<std::string>();
    if (arch_class != hf_arch_name(Arch::Llama) && arch_class != hf_arch_name(Arch::Qwen2))
      j.fail("unsupported architecture '" + arch_class + "' (supported: LlamaForCausalLM, Qwen2ForCausalLM)");
  }
  const std::string type = j.string("model_type");
  Arch a;
  if (!arch_from_name(type, &a)) j.fail("unsupported model_type '" + type + "' (supported: llama, qwen2)");
  if (!arch_class.empty() && arch_class != hf_arch_name(a))
    j.fail("architecture '" + arch_class + "' does not match model_type '" + type + "'");
  return a;
}

void read_shape(const JsonKeys& j, ModelConfig& c) {
  c.dim = j.integer("hidden_size");
  c.ffn_dim = j.integer("intermediate_size");
  c.n_layers = j.integer("num_hidden_layers");
  c.n_heads = j.integer("num_attention_heads");
  c.n_kv_heads = j.integer("num_key_value_heads", c.n_heads);
  c.vocab_size = j.integer("vocab_size");
  if (c.n_heads <= 0) j.fail("num_attention_heads must be positive, got " + std::to_string(c.n_heads));
  if (!j.get("head_dim") && c.dim % c.n_heads != 0)
    j.fail("hidden_size " + std::to_string(c.dim) + " is not a multiple of num_attention_heads " + std::to_string(c.n_heads));
  c.head_dim = j.integer("head_dim", c.dim / c.n_heads);
  c.rope_dim = c.head_dim;
  c.context_length = j.integer("max_position_embeddings", c.arch == Arch::Qwen2 ? 32768 : 2048);
  c.norm_eps = static_cast<float>(j.number("rms_norm_eps", 1e-6));
  c.tied_output = j.boolean("tie_word_embeddings", false);
  c.attn_bias = c.arch == Arch::Qwen2 || j.boolean("attention_bias", false);
}

// Features these architectures may switch on that jf does not implement: refuse rather than compute wrong.
void reject_unsupported(const JsonKeys& j) {
  if (j.get("hidden_act") && j.string("hidden_act") != "silu")
    j.fail("unsupported hidden_act '" + j.string("hidden_act") + "' (supported: silu)");
  if (j.boolean("use_sliding_window", false)) j.fail("sliding-window attention (use_sliding_window: true) is not supported");
  if (j.boolean("mlp_bias", false)) j.fail("mlp_bias: true is not supported");
  if (j.get("partial_rotary_factor") && j.number("partial_rotary_factor") != 1.0)
    j.fail("partial_rotary_factor " + std::to_string(j.number("partial_rotary_factor")) + " is not supported");
}

void read_llama3_scaling(const JsonKeys& s, ModelConfig& c) {
  const double factor = s.number("factor"), low = s.number("low_freq_factor"), high = s.number("high_freq_factor");
  const double orig = s.number("original_max_position_embeddings");
  if (!(factor > 0) || !(low > 0) || !(high > low) || !(orig > 0))
    s.fail("rope_scaling llama3 needs factor > 0, 0 < low_freq_factor < high_freq_factor, original_max_position_embeddings > 0");
  c.rope_freq_factors = llama3_rope_freq_factors(c.rope_theta, c.rope_dim, factor, low, high, orig);
}

// rope_theta and rope_scaling (or transformers 5's rope_parameters, which holds both).
void read_rope(const JsonKeys& j, ModelConfig& c) {
  c.rope_style = RopeStyle::Neox;  // HF checkpoints use rotate-half for both architectures
  c.rope_theta = static_cast<float>(j.number("rope_theta", 10000.0));
  const char* key = j.get("rope_scaling") ? "rope_scaling" : "rope_parameters";
  const json* rs = j.get(key);
  if (!rs) return;
  if (!rs->is_object()) j.fail(std::string("key '") + key + "' must be an object or null");
  JsonKeys s(*rs, j.path(), std::string(key) + ".");
  if (s.get("rope_theta")) c.rope_theta = static_cast<float>(s.number("rope_theta"));
  const std::string type = s.get("rope_type") ? s.string("rope_type") : s.string("type");
  if (type == "default") return;
  if (type == "linear") {
    const double f = s.number("factor");
    if (!(f > 0)) s.fail(std::string(key) + ".factor must be positive");
    c.rope_freq_scale = static_cast<float>(1.0 / f);
  } else if (type == "llama3") {
    read_llama3_scaling(s, c);
  } else {
    j.fail("unsupported " + std::string(key) + " type '" + type + "' (supported: default, linear, llama3)");
  }
}

std::string dir_name(const std::string& dir) {
  fs::path p = fs::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename().string();
}

// ---- tensor names ----

struct NamePair {
  const char* hf;
  const char* gguf;
};
constexpr NamePair kGlobalNames[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
};
constexpr NamePair kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},      {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},        {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},   {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},            {"self_attn.v_proj.bias", "attn_v.bias"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"}, {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},             {"mlp.down_proj.weight", "ffn_down.weight"},
};
constexpr const char* kIgnoredLayerNames[] = {"self_attn.rotary_emb.inv_freq"};  // recomputed from the config

enum class NameKind { Used, Ignored, Unknown };

// "model.layers.<n>." with n a canonical decimal below n_layers; returns n's text and the rest of the name.
bool split_layer_name(const std::string& hf, int n_layers, std::string* num, std::string* rest) {
  const std::string pre = "model.layers.";
  if (hf.rfind(pre, 0) != 0) return false;
  const size_t dot = hf.find('.', pre.size());
  if (dot == std::string::npos) return false;
  *num = hf.substr(pre.size(), dot - pre.size());
  int layer = -1;
  auto [end, ec] = std::from_chars(num->data(), num->data() + num->size(), layer);
  if (ec != std::errc() || end != num->data() + num->size() || (num->size() > 1 && (*num)[0] == '0')) return false;
  *rest = hf.substr(dot + 1);
  return layer >= 0 && layer < n_layers;
}

NameKind map_hf_name(const std::string& hf, int n_layers, std::string* gguf) {
  for (const NamePair& p : kGlobalNames)
    if (hf == p.hf) return *gguf = p.gguf, NameKind::Used;
  std::string num, rest;
  if (!split_layer_name(hf, n_layers, &num, &rest)) return NameKind::Unknown;
  for (const NamePair& p : kLayerNames)
    if (rest == p.hf) return *gguf = "blk." + num + "." + p.gguf, NameKind::Used;
  for (const char* ignored : kIgnoredLayerNames)
    if (rest == ignored) return NameKind::Ignored;
  return NameKind::Unknown;
}

// (HF name, GGUF name) of every tensor the checkpoint must contain.
std::vector<std::pair<std::string, std::string>> required_names(const ModelConfig& c) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const NamePair& p : kGlobalNames)
    if (!(c.tied_output && std::strcmp(p.gguf, "output.weight") == 0)) out.emplace_back(p.hf, p.gguf);
  for (int l = 0; l < c.n_layers; l++)
    for (const NamePair& p : kLayerNames)
      if (c.attn_bias || std::strstr(p.gguf, ".bias") == nullptr)
        out.emplace_back("model.layers." + std::to_string(l) + "." + p.hf, "blk." + std::to_string(l) + "." + p.gguf);
  return out;
}

// ---- safetensors files ----

using Shards = std::vector<std::shared_ptr<const SafetensorsFile>>;

void check_shard_name(const std::string& index, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\\') != std::string::npos)
    throw Error(index + ": weight_map names '" + name + "', which is not a file name in the model directory");
}

Shards open_sharded(const std::string& dir, const std::string& index) {
  const json j = parse_json_file(index);
  const json* map = j.contains("weight_map") ? &j["weight_map"] : nullptr;
  if (!map || !map->is_object() || map->empty()) throw Error(index + ": missing or empty object 'weight_map'");
  std::vector<std::string> files;
  for (const auto& [tensor, file] : map->items()) {
    if (!file.is_string()) throw Error(index + ": weight_map entry '" + tensor + "' is not a file name");
    check_shard_name(index, file.get<std::string>());
    if (std::find(files.begin(), files.end(), file.get<std::string>()) == files.end()) files.push_back(file.get<std::string>());
  }
  Shards shards;
  std::map<std::string, const SafetensorsFile*> by_name;
  for (const std::string& f : files) {
    shards.push_back(SafetensorsFile::open(join(dir, f)));
    by_name[f] = shards.back().get();
  }
  for (const auto& [tensor, file] : map->items())
    if (!by_name[file.get<std::string>()]->find(tensor))
      throw Error(index + ": tensor '" + tensor + "' is listed in '" + file.get<std::string>() + "' but is not in that file");
  return shards;
}

Shards open_checkpoint(const std::string& dir) {
  const std::string single = join(dir, "model.safetensors"), index = join(dir, "model.safetensors.index.json");
  if (file_exists(single)) return Shards{SafetensorsFile::open(single)};
  if (file_exists(index)) return open_sharded(dir, index);
  throw Error(dir + ": no model.safetensors or model.safetensors.index.json");
}

// Zero-copy view of a mapped tensor; copied once only if the file placed it misaligned for its type.
void add_tensor(TensorSet& ts, const std::string& name, const SafetensorsTensor& t) {
  if (reinterpret_cast<uintptr_t>(t.data) % dtype_row_bytes(t.type, 1) == 0) {
    ts.tensors[name] = TensorRef{t.type, t.ggml_dims(), t.data};
    return;
  }
  ts.add_owned(name, t.type, t.ggml_dims(), std::vector<uint8_t>(t.data, t.data + t.nbytes));
}

TensorSet collect_tensors(const Shards& shards, const ModelConfig& cfg) {
  TensorSet ts;
  std::map<std::string, std::string> origin;  // GGUF name -> file it came from
  for (const auto& f : shards)
    for (const SafetensorsTensor& t : f->tensors()) {
      std::string g;
      const NameKind kind = map_hf_name(t.name, cfg.n_layers, &g);
      if (kind == NameKind::Unknown)
        throw Error(f->path() + ": unexpected tensor '" + t.name + "' for a " + hf_arch_name(cfg.arch) + " with " +
                    std::to_string(cfg.n_layers) + " layers");
      if (kind == NameKind::Ignored || (cfg.tied_output && g == "output.weight")) continue;  // tied: HF ignores it too
      auto [it, fresh] = origin.emplace(g, f->path());
      if (!fresh) throw Error("tensor '" + t.name + "' appears in both " + it->second + " and " + f->path());
      add_tensor(ts, g, t);
    }
  return ts;
}

void check_complete(const TensorSet& ts, const ModelConfig& cfg, const std::string& dir) {
  for (const auto& [hf, gguf] : required_names(cfg))
    if (!ts.find(gguf)) throw Error(dir + ": checkpoint is missing tensor '" + hf + "'");
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir, int vocab_size) {
  if (!file_exists(join(dir, "tokenizer.json"))) return nullptr;
  std::unique_ptr<Tokenizer> tok = Tokenizer::from_hf(dir);
  if (tok && tok->n_vocab() > vocab_size)
    throw Error(dir + ": tokenizer has " + std::to_string(tok->n_vocab()) + " tokens but the model only " +
                std::to_string(vocab_size));
  return tok;
}

// ---- GGUF layout ----

// Rows of a Q/K projection (or its 1-D bias) moved between the rotate-half and interleaved RoPE layouts:
// within each head, row 2j+s of the interleaved layout is row s*half+j of the rotate-half one.
std::vector<uint8_t> permute_head_rows(const std::string& name, const TensorRef& t, int n_heads, int head_dim,
                                       int rope_dim, bool to_interleaved) {
  const bool is_vec = t.dims.size() == 1;
  if (!is_vec && t.dims.size() != 2) throw Error("cannot permute tensor '" + name + "': expected 1 or 2 dimensions");
  const int64_t rows = is_vec ? t.dims[0] : t.dims[1], cols = is_vec ? 1 : t.dims[0];
  if (rows != int64_t(n_heads) * head_dim || cols % dtype_block_size(t.type) != 0)
    throw Error("cannot permute tensor '" + name + "': " + std::to_string(rows) + " rows of " + std::to_string(cols) +
                " " + dtype_name(t.type) + " values do not form " + std::to_string(n_heads) + " heads of " +
                std::to_string(head_dim));
  const size_t rb = dtype_row_bytes(t.type, cols);
  const int half = rope_dim / 2;
  const auto* src = static_cast<const uint8_t*>(t.data);
  std::vector<uint8_t> out(rb * static_cast<size_t>(rows));
  for (int h = 0; h < n_heads; h++)
    for (int r = 0; r < head_dim; r++) {
      int from = r;
      if (r < rope_dim) from = to_interleaved ? (r % 2) * half + r / 2 : (r < half ? 2 * r : 2 * (r - half) + 1);
      std::memcpy(out.data() + (size_t(h) * head_dim + r) * rb, src + (size_t(h) * head_dim + from) * rb, rb);
    }
  return out;
}

void permute_qk(TensorSet& ts, const ModelConfig& cfg, bool to_interleaved) {
  for (int l = 0; l < cfg.n_layers; l++)
    for (const char* which : {"attn_q", "attn_k"}) {
      const int heads = which[5] == 'q' ? cfg.n_heads : cfg.n_kv_heads;
      for (const char* suffix : {".weight", ".bias"}) {
        const std::string name = "blk." + std::to_string(l) + "." + which + suffix;
        const TensorRef* t = ts.find(name);
        if (!t && suffix[1] == 'b') continue;  // biases are optional
        if (!t) throw Error("cannot convert to GGUF layout: tensor '" + name + "' is missing");
        std::vector<uint8_t> bytes = permute_head_rows(name, *t, heads, cfg.head_dim, cfg.rope_dim, to_interleaved);
        ts.add_owned(name, t->type, t->dims, std::move(bytes));
      }
    }
}

}  // namespace

std::vector<float> llama3_rope_freq_factors(float rope_theta, int rope_dim, double factor, double low_freq_factor,
                                            double high_freq_factor, double original_context) {
  const double low_freq_wavelen = original_context / low_freq_factor;
  const double high_freq_wavelen = original_context / high_freq_factor;
  std::vector<float> out;
  for (int i = 0; i < rope_dim / 2; i++) {
    const float freq = 1.0f / std::pow(rope_theta, static_cast<float>(2 * i) / static_cast<float>(rope_dim));
    const double wavelen = 2.0 * std::numbers::pi / freq;
    double divisor;
    if (wavelen < high_freq_wavelen) {
      divisor = 1.0;  // high frequencies: unchanged
    } else if (wavelen > low_freq_wavelen) {
      divisor = factor;  // low frequencies: fully scaled
    } else {  // in between: interpolate the frequency smoothly between scaled and unscaled
      const double smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      divisor = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(divisor));
  }
  return out;
}

ModelConfig config_from_hf(const std::string& dir) {
  const std::string path = join(dir, "config.json");
  if (!file_exists(path)) throw Error(dir + ": no config.json (not a Hugging Face model directory)");
  const json root = parse_json_file(path);
  JsonKeys j(root, path);
  ModelConfig c;
  c.arch = read_arch(j);
  c.name = dir_name(dir);
  read_shape(j, c);
  reject_unsupported(j);
  read_rope(j, c);
  try {
    c.validate();
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return c;
}

LoadedModel load_hf_model(const std::string& dir) {
  const ModelConfig cfg = config_from_hf(dir);
  const Shards shards = open_checkpoint(dir);
  TensorSet ts = collect_tensors(shards, cfg);
  check_complete(ts, cfg, dir);
  LoadedModel out;
  try {
    out.model = std::make_unique<Model>(cfg, std::move(ts), "safetensors",
                                        std::vector<std::shared_ptr<const void>>(shards.begin(), shards.end()));
    for (const auto& shard : shards) out.model->add_file_mapping(shard->mapping());
  } catch (const Error& e) {
    throw Error(dir + ": " + e.what());
  }
  out.tokenizer = load_tokenizer(dir, out.model->config().vocab_size);
  return out;
}

TensorSet to_gguf_layout(const ModelConfig& cfg, const TensorSet& ts, ModelConfig* out_cfg) {
  ModelConfig out = cfg;
  out.rope_style = cfg.arch == Arch::Qwen2 ? RopeStyle::Neox : RopeStyle::Interleaved;
  TensorSet res;
  res.tensors = ts.tensors;
  res.owned = ts.owned;  // unchanged tensors keep pointing at the source buffers
  if (out.rope_style != cfg.rope_style) permute_qk(res, cfg, out.rope_style == RopeStyle::Interleaved);
  if (!cfg.rope_freq_factors.empty() && !res.find("rope_freqs.weight")) {
    std::vector<uint8_t> bytes(cfg.rope_freq_factors.size() * sizeof(float));
    std::memcpy(bytes.data(), cfg.rope_freq_factors.data(), bytes.size());
    res.add_owned("rope_freqs.weight", DType::F32, {static_cast<int64_t>(cfg.rope_freq_factors.size())}, std::move(bytes));
  }
  if (out_cfg) *out_cfg = out;
  return res;
}

}  // namespace jf
