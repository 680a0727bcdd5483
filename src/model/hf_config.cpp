// config.json of Hugging Face model directories: the architecture, shape, RoPE and Gemma keys, with every
// error naming the file and the key. See hf_config.h.
#include "model/hf_config.h"

#include <climits>
#include <cmath>
#include <filesystem>

#include "base/error.h"
#include "base/mapped_file.h"
#include "model/hf.h"

namespace jf {

namespace fs = std::filesystem;
using nlohmann::json;

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

namespace {

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

constexpr HfArch kHfArchs[] = {{Arch::Llama, "LlamaForCausalLM", "llama"},
                               // Mistral-7B-v0.1's sliding_window (4096) is ignored, as llama.cpp's `llama` does
                               {Arch::Llama, "MistralForCausalLM", "mistral"},
                               {Arch::Qwen2, "Qwen2ForCausalLM", "qwen2"},
                               {Arch::Qwen3, "Qwen3ForCausalLM", "qwen3"},
                               {Arch::Phi3, "Phi3ForCausalLM", "phi3"},
                               {Arch::Gemma2, "Gemma2ForCausalLM", "gemma2"},
                               {Arch::Gemma3, "Gemma3ForCausalLM", "gemma3_text"},
                               {Arch::Gemma3, "Gemma3ForConditionalGeneration", "gemma3", true}};

std::string hf_supported(bool classes) {
  std::string s;
  for (const HfArch& h : kHfArchs) s += (s.empty() ? "" : ", ") + std::string(classes ? h.class_name : h.model_type);
  return s;
}

const HfArch& read_arch(const JsonKeys& j) {
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
  return *found;
}

// transformers' Gemma3TextConfig defaults. The multimodal checkpoints' text_config names only the keys that
// differ (gemma-3-4b: hidden_size, intermediate_size, num_hidden_layers, rope_scaling, sliding_window).
json gemma3_text_defaults() {
  return {{"vocab_size", 262208},         {"hidden_size", 2304},           {"intermediate_size", 9216},
          {"num_hidden_layers", 26},      {"num_attention_heads", 8},      {"num_key_value_heads", 4},
          {"head_dim", 256},              {"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6},
          {"rope_theta", 1000000.0},      {"query_pre_attn_scalar", 256},  {"sliding_window", 4096},
          {"sliding_window_pattern", 6},  {"rope_local_base_freq", 10000.0}, {"tie_word_embeddings", true},
          {"hidden_activation", "gelu_pytorch_tanh"}};
}

// The object holding the text model's keys: config.json itself, or a multimodal checkpoint's text_config;
// Gemma 3's over the defaults above (a key given as null stays null: absent).
json text_model_keys(const JsonKeys& top, const json& root, const HfArch& arch) {
  const json* keys = &root;
  if (arch.multimodal) {
    keys = top.get("text_config");
    if (!keys || !keys->is_object())
      top.fail("key 'text_config' must be an object (the text model of a " + std::string(arch.class_name) + ")");
  }
  if (arch.arch != Arch::Gemma3) return *keys;
  json merged = gemma3_text_defaults();
  for (const auto& [key, value] : keys->items()) merged[key] = value;
  return merged;
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

// transformers 5's rope_parameters (holding rope_theta too), as one object or one per layer kind
// (Gemma 3: "full_attention", "sliding_attention"); null when absent. *name: its key path.
const json* rope_parameters(const JsonKeys& j, const char* kind, std::string* name) {
  *name = j.get("rope_scaling") ? "rope_scaling" : "rope_parameters";
  const json* rs = j.get(*name);
  if (!rs) return nullptr;
  if (!rs->is_object()) j.fail("key '" + *name + "' must be an object or null");
  if (!rs->contains("full_attention") && !rs->contains("sliding_attention"))
    return std::string(kind) == "full_attention" ? rs : nullptr;
  *name += std::string(".") + kind;
  const auto it = rs->find(kind);
  if (it == rs->end() || it->is_null()) return nullptr;
  if (!it->is_object()) j.fail("key '" + *name + "' must be an object or null");
  return &*it;
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
    // Gemma 3 dropped the attention soft-cap (llama.cpp's converter refuses one); a fine-tune may cap the logits.
    if (j.get("attn_logit_softcapping")) j.fail("attn_logit_softcapping is not supported for gemma3");
    c.final_softcap = static_cast<float>(j.number("final_logit_softcapping", 0.0));
    c.rope_theta_local = static_cast<float>(j.number("rope_local_base_freq", 10000.0));
    std::string name;
    if (const json* local = rope_parameters(j, "sliding_attention", &name)) {
      const JsonKeys s(*local, j.path(), name + ".");
      const std::string type = s.get("rope_type") ? s.string("rope_type") : "default";
      if (type != "default") s.fail("unsupported " + name + " type '" + type + "' (local layers: default only)");
      c.rope_theta_local = static_cast<float>(s.number("rope_theta", c.rope_theta_local));
    }
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

// rope_theta and rope_scaling (or rope_parameters): of the global layers where they differ by layer kind.
void read_rope(const JsonKeys& j, ModelConfig& c) {
  c.rope_style = RopeStyle::Neox;  // HF checkpoints use rotate-half for every architecture
  c.rope_theta = static_cast<float>(j.number("rope_theta", 10000.0));
  std::string name;
  const json* rs = rope_parameters(j, "full_attention", &name);
  if (!rs) return;
  const char* key = name.c_str();
  JsonKeys s(*rs, j.path(), name + ".");
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

}  // namespace

HfConfig read_hf_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  if (!file_exists(path)) throw Error(dir + ": no config.json (not a Hugging Face model directory)");
  const json root = parse_json_file(path);
  const JsonKeys top(root, path);
  HfConfig out{ModelConfig{}, &read_arch(top)};
  if (const json* q = top.get("quantization_config")) {  // AWQ, GPTQ, FP8, bitsandbytes: other tensors than jf reads
    const std::string method = q->is_object() && q->contains("quant_method") ? q->at("quant_method").dump() : q->dump();
    top.fail("quantized checkpoints are not supported (quantization_config " + method.substr(0, 40) +
             "); convert the unquantized checkpoint, or use a GGUF file");
  }
  const json text = text_model_keys(top, root, *out.arch);
  const JsonKeys j(text, path, out.arch->multimodal ? "text_config." : "");
  ModelConfig& c = out.cfg;
  c.arch = out.arch->arch;
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
  return out;
}

ModelConfig config_from_hf(const std::string& dir) { return read_hf_config(dir).cfg; }

}  // namespace jf
