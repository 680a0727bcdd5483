// Loads Hugging Face Llama / Qwen2 / Qwen3 / Phi-3 / Gemma 2 / Gemma 3 directories (config.json, safetensors
// shards, tokenizer.json) into a Model, and re-lays out their weights for GGUF export. See hf.h.
#include "model/hf.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iterator>
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

struct HfArch {
  Arch arch;
  const char* class_name;
  const char* model_type;
};
constexpr HfArch kHfArchs[] = {{Arch::Llama, "LlamaForCausalLM", "llama"},
                               {Arch::Qwen2, "Qwen2ForCausalLM", "qwen2"},
                               {Arch::Qwen3, "Qwen3ForCausalLM", "qwen3"},
                               {Arch::Phi3, "Phi3ForCausalLM", "phi3"},
                               {Arch::Gemma2, "Gemma2ForCausalLM", "gemma2"},
                               {Arch::Gemma3, "Gemma3ForCausalLM", "gemma3_text"}};

const char* hf_arch_name(Arch a) {
  for (const HfArch& h : kHfArchs)
    if (h.arch == a) return h.class_name;
  return "LlamaForCausalLM";
}

std::string hf_supported(bool classes) {
  std::string s;
  for (const HfArch& h : kHfArchs) s += (s.empty() ? "" : ", ") + std::string(classes ? h.class_name : h.model_type);
  return s;
}

Arch read_arch(const JsonKeys& j) {
  std::string arch_class;
  if (const json* archs = j.get("architectures")) {
    if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string())
      j.fail("key 'architectures' must be a list of class names");
    arch_class = (*archs)[0].get<std::string>();
    bool known = false;
    for (const HfArch& h : kHfArchs) known = known || arch_class == h.class_name;
    if (!known) j.fail("unsupported architecture '" + arch_class + "' (supported: " + hf_supported(true) + ")");
  }
  const std::string type = j.string("model_type");
  const HfArch* found = nullptr;
  for (const HfArch& h : kHfArchs)
    if (type == h.model_type) found = &h;
  if (!found) j.fail("unsupported model_type '" + type + "' (supported: " + hf_supported(false) + ")");
  if (!arch_class.empty() && arch_class != found->class_name)
    j.fail("architecture '" + arch_class + "' does not match model_type '" + type + "'");
  return found->arch;
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
  if (j.get("partial_rotary_factor")) {  // Phi-4-mini rotates 3/4 of each head
    const double f = j.number("partial_rotary_factor");
    c.rope_dim = static_cast<int>(c.head_dim * f);
    if (!(f > 0 && f <= 1) || c.rope_dim % 2 != 0 || c.rope_dim <= 0 || std::fabs(c.head_dim * f - c.rope_dim) > 1e-6)
      j.fail("partial_rotary_factor " + std::to_string(f) + " does not give an even number of rotated dims");
  }
  c.context_length = j.integer("max_position_embeddings", c.arch == Arch::Llama ? 2048 : 32768);
  c.norm_eps = static_cast<float>(j.number("rms_norm_eps", 1e-6));
  c.tied_output = j.boolean("tie_word_embeddings", c.gemma());
  c.attn_bias = c.arch == Arch::Qwen2 || j.boolean("attention_bias", false);
}

// Features these architectures may switch on that jf does not implement: refuse rather than compute wrong.
void reject_unsupported(const JsonKeys& j, const ModelConfig& c) {
  const char* act = c.gemma() ? "gelu_pytorch_tanh" : "silu";
  for (const char* key : {"hidden_act", "hidden_activation"})
    if (j.get(key) && j.string(key) != act) j.fail("unsupported " + std::string(key) + " '" + j.string(key) + "' (supported: " + act + ")");
  if (j.boolean("use_sliding_window", false)) j.fail("sliding-window attention (use_sliding_window: true) is not supported");
  if (j.boolean("mlp_bias", false)) j.fail("mlp_bias: true is not supported");
  if (c.arch != Arch::Phi3 && j.get("partial_rotary_factor") && j.number("partial_rotary_factor") != 1.0)
    j.fail("partial_rotary_factor " + std::to_string(j.number("partial_rotary_factor")) + " is not supported for " +
           arch_name(c.arch));
}

void read_llama3_scaling(const JsonKeys& s, ModelConfig& c) {
  const double factor = s.number("factor"), low = s.number("low_freq_factor"), high = s.number("high_freq_factor");
  const double orig = s.number("original_max_position_embeddings");
  if (!(factor > 0) || !(low > 0) || !(high > low) || !(orig > 0))
    s.fail("rope_scaling llama3 needs factor > 0, 0 < low_freq_factor < high_freq_factor, original_max_position_embeddings > 0");
  c.rope_freq_factors = llama3_rope_freq_factors(c.rope_theta, c.rope_dim, factor, low, high, orig);
}

std::vector<float> factor_list(const JsonKeys& s, const std::string& key, int n) {
  const json& v = s.need(key);
  if (!v.is_array() || static_cast<int>(v.size()) != n) s.fail("key '" + key + "' must be a list of " + std::to_string(n) + " numbers");
  std::vector<float> out;
  for (const json& x : v) {
    if (!x.is_number() || !(x.get<double>() > 0)) s.fail("key '" + key + "' must hold positive numbers");
    out.push_back(static_cast<float>(x.get<double>()));
  }
  return out;
}

// Phi-3's LongRoPE: short and long frequency divisors, the original context (top level or inside the
// scaling object) and the attention factor: given, or sqrt(1 + ln(s) / ln(original)) with s = context /
// original, as Hugging Face and llama.cpp's converter compute it.
void read_longrope(const JsonKeys& j, const JsonKeys& s, ModelConfig& c) {
  c.rope_factors_short = factor_list(s, "short_factor", c.rope_dim / 2);
  c.rope_factors_long = factor_list(s, "long_factor", c.rope_dim / 2);
  c.rope_orig_context = s.get("original_max_position_embeddings") ? s.integer("original_max_position_embeddings")
                                                                  : j.integer("original_max_position_embeddings");
  if (c.rope_orig_context <= 0) j.fail("original_max_position_embeddings must be positive");
  const double scale = static_cast<double>(c.context_length) / c.rope_orig_context;
  double attn = scale > 1.0 ? std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(c.rope_orig_context))) : 1.0;
  if (s.get("attention_factor")) attn = s.number("attention_factor");
  c.rope_attn_factor = static_cast<float>(attn);
}

// Gemma's alternating sliding windows, query scale (1 / sqrt(query_pre_attn_scalar)), soft-caps (Gemma 2) and
// local RoPE base (Gemma 3).
void read_gemma(const JsonKeys& j, ModelConfig& c) {
  const bool g2 = c.arch == Arch::Gemma2;
  c.sliding_window = j.integer("sliding_window", g2 ? 4096 : 512);
  c.sliding_period = g2 ? 2 : j.integer("sliding_window_pattern", 6);
  c.query_scale = static_cast<float>(1.0 / std::sqrt(j.number("query_pre_attn_scalar", c.head_dim)));
  if (g2) {
    c.attn_softcap = static_cast<float>(j.number("attn_logit_softcapping", 50.0));
    c.final_softcap = static_cast<float>(j.number("final_logit_softcapping", 30.0));
  } else {
    if (j.get("attn_logit_softcapping") || j.get("final_logit_softcapping")) j.fail("soft-capping is not supported for gemma3");
    c.rope_theta_local = static_cast<float>(j.number("rope_local_base_freq", 10000.0));
  }
  if (c.sliding_window <= 0 || c.sliding_period < 2) j.fail("sliding_window and sliding_window_pattern must be positive");
  if (const json* types = j.get("layer_types")) {  // newer configs list each layer's kind: it must be the pattern
    if (!types->is_array() || static_cast<int>(types->size()) != c.n_layers) j.fail("key 'layer_types' must list every layer");
    for (int l = 0; l < c.n_layers; l++)
      if ((*types)[l] != (c.local_layer(l) ? "sliding_attention" : "full_attention"))
        j.fail("layer_types: layer " + std::to_string(l) + " breaks the every-" + std::to_string(c.sliding_period) +
               "th-layer-global pattern (not supported)");
  }
}

// YaRN: factor, original_max_position_embeddings, beta_fast / beta_slow (32 / 1); transformers' optional
// attention_factor replaces the 1 + 0.1 ln(factor) that llama.cpp multiplies into its attn_factor.
void read_yarn(const JsonKeys& s, ModelConfig& c, const char* key) {
  const double f = s.number("factor");
  const double orig = s.number("original_max_position_embeddings");
  if (!(f > 0) || !(orig > 0)) s.fail(std::string(key) + " yarn needs factor > 0 and original_max_position_embeddings > 0");
  c.rope_yarn = true;
  c.rope_freq_scale = static_cast<float>(1.0 / f);
  c.rope_orig_context = static_cast<int>(orig);
  c.rope_yarn_beta_fast = static_cast<float>(s.number("beta_fast", 32.0));
  c.rope_yarn_beta_slow = static_cast<float>(s.number("beta_slow", 1.0));
  if (s.get("attention_factor"))
    c.rope_attn_factor = static_cast<float>(s.number("attention_factor") / (1.0 + 0.1 * std::log(f)));
}

// rope_theta and rope_scaling (or transformers 5's rope_parameters, which holds both).
void read_rope(const JsonKeys& j, ModelConfig& c) {
  c.rope_style = RopeStyle::Neox;  // HF checkpoints use rotate-half for every architecture
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
  } else if (type == "yarn") {
    read_yarn(s, c, key);
  } else if (type == "llama3") {
    read_llama3_scaling(s, c);
  } else if ((type == "longrope" || type == "su") && c.arch == Arch::Phi3) {
    read_longrope(j, s, c);
  } else {
    j.fail("unsupported " + std::string(key) + " type '" + type + "' (supported: default, linear, yarn, llama3, longrope for phi3)");
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
constexpr NamePair kLlamaLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},      {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},        {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},   {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},            {"self_attn.v_proj.bias", "attn_v.bias"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"}, {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},             {"mlp.down_proj.weight", "ffn_down.weight"},
};
constexpr NamePair kQkNormNames[] = {
    {"self_attn.q_norm.weight", "attn_q_norm.weight"}, {"self_attn.k_norm.weight", "attn_k_norm.weight"}};
// Phi-3 checkpoints hold q/k/v and gate/up fused; GGUF keeps them fused under these names.
constexpr NamePair kPhi3LayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},          {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},       {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_up_proj.weight", "ffn_up.weight"},            {"mlp.down_proj.weight", "ffn_down.weight"},
};
// Gemma normalises before and after each block; HF's post_attention_layernorm is not Llama's ffn_norm here.
constexpr NamePair kGemmaLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},          {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},            {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},       {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"}, {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},             {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};
constexpr const char* kIgnoredLayerNames[] = {"self_attn.rotary_emb.inv_freq"};  // recomputed from the config

// The per-layer tensors of an architecture (HF name, GGUF name).
std::vector<NamePair> layer_names(Arch a) {
  std::vector<NamePair> out;
  if (a == Arch::Phi3) return std::vector<NamePair>(std::begin(kPhi3LayerNames), std::end(kPhi3LayerNames));
  if (a == Arch::Gemma2 || a == Arch::Gemma3)
    out.assign(std::begin(kGemmaLayerNames), std::end(kGemmaLayerNames));
  else
    out.assign(std::begin(kLlamaLayerNames), std::end(kLlamaLayerNames));
  if (a == Arch::Qwen3 || a == Arch::Gemma3) out.insert(out.end(), std::begin(kQkNormNames), std::end(kQkNormNames));
  return out;
}

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

NameKind map_hf_name(const std::string& hf, const ModelConfig& c, std::string* gguf) {
  for (const NamePair& p : kGlobalNames)
    if (hf == p.hf) return *gguf = p.gguf, NameKind::Used;
  std::string num, rest;
  if (!split_layer_name(hf, c.n_layers, &num, &rest)) return NameKind::Unknown;
  for (const NamePair& p : layer_names(c.arch))
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
    for (const NamePair& p : layer_names(c.arch))
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
      const NameKind kind = map_hf_name(t.name, cfg, &g);
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

// Gemma's RMSNorms multiply by (1 + w) and HF checkpoints store w; GGUF files (llama.cpp's converter) store
// 1 + w. Every norm weight becomes fp32 1 + w at load, so both formats compute alike and a converted file
// holds what llama.cpp expects.
void add_one_to_norms(TensorSet& ts) {
  std::vector<std::string> names;
  for (const auto& [name, t] : ts.tensors)
    if (name.ends_with("norm.weight")) names.push_back(name);
  for (const std::string& name : names) {
    const TensorRef t = ts.tensors.at(name);
    if (dtype_is_block_quantized(t.type)) throw Error("tensor '" + name + "' must not be quantized");
    std::vector<uint8_t> bytes(static_cast<size_t>(t.n_elements()) * sizeof(float));
    auto* f = reinterpret_cast<float*>(bytes.data());
    dequantize_row(t.type, t.data, f, t.n_elements());
    for (int64_t i = 0; i < t.n_elements(); i++) f[i] += 1.0f;
    ts.add_owned(name, DType::F32, t.dims, std::move(bytes));
  }
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
  reject_unsupported(j, c);
  read_rope(j, c);
  if (c.gemma()) read_gemma(j, c);
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
  if (cfg.gemma()) add_one_to_norms(ts);
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
  out.rope_style = gguf_rope_style(cfg.arch);
  TensorSet res;
  res.tensors = ts.tensors;
  res.owned = ts.owned;  // unchanged tensors keep pointing at the source buffers
  if (out.rope_style != cfg.rope_style) permute_qk(res, cfg, out.rope_style == RopeStyle::Interleaved);
  // Frequency divisors live in config.json for HF and in tensors for GGUF.
  auto add_vector = [&](const std::string& name, const std::vector<float>& v) {
    if (v.empty() || res.find(name)) return;
    std::vector<uint8_t> bytes(v.size() * sizeof(float));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    res.add_owned(name, DType::F32, {static_cast<int64_t>(v.size())}, std::move(bytes));
  };
  add_vector("rope_freqs.weight", cfg.rope_freq_factors);
  add_vector("rope_factors_long.weight", cfg.rope_factors_long);
  add_vector("rope_factors_short.weight", cfg.rope_factors_short);
  if (out_cfg) *out_cfg = out;
  return res;
}

}  // namespace jf
