// Loads Hugging Face Llama / Qwen2 / Qwen3 / Phi-3 / Gemma 2 / Gemma 3 directories (safetensors shards and
// tokenizer.json; config.json in hf_config.cpp) into a Model, and re-lays out their weights for GGUF export.
// See hf.h.
#include "model/hf.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "formats/safetensors.h"
#include "model/hf_config.h"

namespace jf {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string join(const std::string& dir, const std::string& file) { return (fs::path(dir) / file).string(); }

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

// A multimodal checkpoint's text model under the names of a text-only one (transformers 4.50 saved
// language_model.model.* and language_model.lm_head.*, later versions model.language_model.* and lm_head.*);
// false for the image encoder's tensors.
constexpr NamePair kTextPrefixes[] = {{"language_model.model.", "model."},
                                      {"language_model.lm_head.", "lm_head."},
                                      {"model.language_model.", "model."}};
constexpr const char* kVisionPrefixes[] = {"vision_tower.", "multi_modal_projector.", "model.vision_tower.",
                                           "model.multi_modal_projector."};

bool text_model_name(std::string* name) {
  for (const char* p : kVisionPrefixes)
    if (name->starts_with(p)) return false;
  for (const NamePair& p : kTextPrefixes)
    if (name->starts_with(p.hf)) return *name = p.gguf + name->substr(std::strlen(p.hf)), true;
  return true;
}

TensorSet collect_tensors(const Shards& shards, const HfConfig& hf, int* vision_tensors) {
  const ModelConfig& cfg = hf.cfg;
  TensorSet ts;
  std::map<std::string, std::string> origin;  // GGUF name -> file it came from
  for (const auto& f : shards)
    for (const SafetensorsTensor& t : f->tensors()) {
      std::string name = t.name, g;
      if (hf.arch->multimodal && !text_model_name(&name)) {
        ++*vision_tensors;
        continue;
      }
      const NameKind kind = map_hf_name(name, cfg, &g);
      if (kind == NameKind::Unknown)
        throw Error(f->path() + ": unexpected tensor '" + t.name + "' for a " + hf.arch->class_name + " with " +
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

void check_complete(const TensorSet& ts, const HfConfig& hf, const std::string& dir) {
  const char* where = hf.arch->multimodal ? " (under language_model. or model.language_model.)" : "";
  for (const auto& [name, gguf] : required_names(hf.cfg))
    if (!ts.find(gguf)) throw Error(dir + ": checkpoint is missing tensor '" + name + "'" + where);
}

// Ids the model has and tokenizer.json does not name (Qwen2's embedding is padded to 151936 rows, Gemma 3's
// to 262208) become unused padding tokens: a GGUF file's vocabulary must cover the embedding's rows, and a
// sampled padding id decodes to nothing.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir, int vocab_size) {
  if (!file_exists(join(dir, "tokenizer.json"))) return nullptr;
  std::unique_ptr<Tokenizer> tok = Tokenizer::from_hf(dir);
  try {
    return Tokenizer::padded(std::move(tok), vocab_size);
  } catch (const Error& e) {
    throw Error(dir + ": " + e.what());
  }
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

LoadedModel load_hf_model(const std::string& dir) {
  const HfConfig hf = read_hf_config(dir);
  const ModelConfig& cfg = hf.cfg;
  const Shards shards = open_checkpoint(dir);
  int vision_tensors = 0;
  TensorSet ts = collect_tensors(shards, hf, &vision_tensors);
  check_complete(ts, hf, dir);
  if (cfg.gemma()) add_one_to_norms(ts);
  LoadedModel out;
  try {
    out.model = std::make_unique<Model>(cfg, std::move(ts), "safetensors",
                                        std::vector<std::shared_ptr<const void>>(shards.begin(), shards.end()));
    for (const auto& shard : shards) out.model->add_file_mapping(shard->mapping());
  } catch (const Error& e) {
    throw Error(dir + ": " + e.what());
  }
  if (hf.arch->multimodal)
    out.notes.push_back(dir + ": the text model of a " + hf.arch->class_name + " checkpoint; " +
                        std::to_string(vision_tensors) + " tensors of its image encoder left out (jf reads text only)");
  out.tokenizer = load_tokenizer(dir, cfg.vocab_size);
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
