// Hugging Face loading: HF directories (single file and sharded) computing the
// same logits as the in-memory model, GGUF re-layout, and every malformed-input case erroring cleanly.

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/rng.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "model/convert.h"
#include "model/hf.h"
#include "model/loader.h"
#include "model/random_model.h"
#include "model/transformer.h"
#include "model_helpers.h"
#include "test_support.h"

namespace jf {
namespace {

using test::Logits;
using test::random_tokens;
using test::stepwise;

namespace fs = std::filesystem;
using nlohmann::json;
// ---- helpers ----

using test::expect_error;
using test::TempDir;

void expect_bit_identical(const Logits& got, const Logits& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t t = 0; t < want.size(); t++)
    for (size_t i = 0; i < want[t].size(); i++)
      ASSERT_EQ(got[t][i], want[t][i]) << what << ": token " << t << ", vocab index " << i;
}

// max over rows of max|got - want| / max|want|.
double max_relative_error(const Logits& got, const Logits& want) {
  double worst = 0;
  for (size_t t = 0; t < want.size(); t++) {
    double diff = 0, scale = 0;
    for (size_t i = 0; i < want[t].size(); i++) {
      diff = std::max(diff, std::fabs(double(got[t][i]) - want[t][i]));
      scale = std::max(scale, std::fabs(double(want[t][i])));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

// Every weight (norms and biases too, as HF checkpoints store them) converted to `type`; rope_freqs (derived
// from config.json, not stored by HF) stays fp32.
TensorSet all_to(const TensorSet& src, DType type) {
  TensorSet out;
  out.owned = src.owned;
  std::vector<float> f;
  for (const auto& [name, t] : src.tensors) {
    if (name == "rope_freqs.weight") {
      out.tensors[name] = t;
      continue;
    }
    const int64_t n = t.n_elements();
    f.resize(static_cast<size_t>(n));
    dequantize_row(t.type, t.data, f.data(), n);
    std::vector<uint8_t> bytes(dtype_row_bytes(type, n));
    quantize_row(type, f.data(), bytes.data(), n);
    out.add_owned(name, type, t.dims, std::move(bytes));
  }
  return out;
}

// GGUF tensor name -> HF name (the writer's side of the mapping under test).
std::string hf_name(const std::string& g) {
  static const std::map<std::string, std::string> global = {
      {"token_embd.weight", "model.embed_tokens.weight"}, {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"}};
  static const std::map<std::string, std::string> layer = {
      {"attn_norm.weight", "input_layernorm.weight"},   {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},     {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_q.bias", "self_attn.q_proj.bias"},
      {"attn_k.bias", "self_attn.k_proj.bias"},         {"attn_v.bias", "self_attn.v_proj.bias"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_up.weight", "mlp.up_proj.weight"},          {"ffn_down.weight", "mlp.down_proj.weight"}};
  if (global.count(g)) return global.at(g);
  const size_t dot = g.find('.', 4);
  return "model.layers." + g.substr(4, dot - 4) + "." + layer.at(g.substr(dot + 1));
}

struct Llama3Rope {
  double factor = 8, low = 1, high = 4, orig = 64;
};

json hf_config(const ModelConfig& c, const Llama3Rope* rope) {
  json j = {{"architectures", {c.arch == Arch::Qwen2 ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
            {"model_type", arch_name(c.arch)},
            {"hidden_size", c.dim},
            {"intermediate_size", c.ffn_dim},
            {"num_hidden_layers", c.n_layers},
            {"num_attention_heads", c.n_heads},
            {"num_key_value_heads", c.n_kv_heads},
            {"rms_norm_eps", c.norm_eps},
            {"rope_theta", c.rope_theta},
            {"max_position_embeddings", c.context_length},
            {"vocab_size", c.vocab_size},
            {"tie_word_embeddings", c.tied_output},
            {"hidden_act", "silu"},
            {"torch_dtype", "bfloat16"},
            {"rope_scaling", nullptr}};
  if (c.head_dim * c.n_heads != c.dim) j["head_dim"] = c.head_dim;
  if (rope)
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", rope->factor}, {"low_freq_factor", rope->low},
                         {"high_freq_factor", rope->high}, {"original_max_position_embeddings", rope->orig}};
  return j;
}

void write_text(const std::string& path, const std::string& text) { write_file_atomic(path, text.data(), text.size()); }

// One tensor added to an HF safetensors file: GGML dims reversed into row-major shape.
void add_hf_tensor(SafetensorsWriter& w, const std::string& gguf_name, const TensorRef& t) {
  w.add_tensor(hf_name(gguf_name), t.type, std::vector<int64_t>(t.dims.rbegin(), t.dims.rend()), t.data);
}

// All of a model's tensors in HF naming (rope_freqs is derived from config.json, HF does not store it).
void add_model_tensors(SafetensorsWriter& w, const TensorSet& ts) {
  for (const auto& [name, t] : ts.tensors)
    if (name != "rope_freqs.weight") add_hf_tensor(w, name, t);
}

// Writes config.json and the weights (one file, or `shards` files plus model.safetensors.index.json).
void write_hf_dir(const std::string& dir, const json& config, const TensorSet& ts, int shards = 0) {
  write_text(dir + "/config.json", config.dump(2));
  std::vector<SafetensorsWriter> writers(std::max(shards, 1));
  json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
  size_t i = 0;
  for (const auto& [name, t] : ts.tensors) {
    if (name == "rope_freqs.weight") continue;  // computed from config.json, not stored by HF
    const size_t s = i++ % writers.size();
    add_hf_tensor(writers[s], name, t);
    index["weight_map"][hf_name(name)] = "model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(shards) + ".safetensors";
  }
  if (shards == 0) {
    writers[0].set_metadata("format", "pt");
    writers[0].write(dir + "/model.safetensors");
    return;
  }
  for (int s = 0; s < shards; s++)
    writers[s].write(dir + "/model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(shards) + ".safetensors");
  write_text(dir + "/model.safetensors.index.json", index.dump(2));
}

ModelConfig llama_gqa_untied(const Llama3Rope& rope) {
  ModelConfig c = preset_config("tiny");  // 4 heads / 2 kv heads x 16, untied
  c.rope_style = RopeStyle::Neox;
  c.rope_theta = 500000.0f;
  c.rope_freq_factors = llama3_rope_freq_factors(c.rope_theta, c.rope_dim, rope.factor, rope.low, rope.high, rope.orig);
  return c;
}

ModelConfig qwen2_bias_tied() {
  ModelConfig c = preset_config("tiny");
  c.arch = Arch::Qwen2;
  c.n_heads = 8, c.n_kv_heads = 2, c.head_dim = 8, c.rope_dim = 8;
  c.rope_style = RopeStyle::Neox;
  c.rope_theta = 1000000.0f;
  c.norm_eps = 1e-6f;
  c.attn_bias = true, c.tied_output = true;
  return c;
}

// A model case: its config, the config.json text, and tensors of the given type.
struct HfCase {
  ModelConfig cfg;
  json config;
  TensorSet tensors;
};

// "llama" (Llama 3.1 RoPE), "qwen2", or "mistral": Mistral-7B-v0.1's config names its own class and a sliding
// window that llama.cpp (and so jf) leaves out: a Llama with full attention.
HfCase make_case(const std::string& which, DType type) {
  static const Llama3Rope rope;
  HfCase c;
  const bool llama = which == "llama", mistral = which == "mistral";
  c.cfg = llama || mistral ? llama_gqa_untied(rope) : qwen2_bias_tied();
  if (mistral) c.cfg.rope_freq_factors.clear(), c.cfg.rope_theta = 10000.0f;
  c.config = hf_config(c.cfg, llama ? &rope : nullptr);
  if (mistral) c.config["architectures"] = {"MistralForCausalLM"}, c.config["model_type"] = "mistral", c.config["sliding_window"] = 4096;
  c.tensors = all_to(random_tensors(c.cfg, DType::F32, llama ? 11 : 12), type);
  return c;
}

// ---- HF directories ----

class HfLoad : public ::testing::TestWithParam<std::tuple<std::string, DType>> {};

TEST_P(HfLoad, LogitsBitIdenticalToInMemoryModel) {
  auto [which, type] = GetParam();
  HfCase c = make_case(which, type);
  TempDir d("load_" + which + "_" + dtype_name(type));
  write_hf_dir(d.path, c.config, c.tensors);
  Model ref(c.cfg, c.tensors, "memory");
  LoadedModel hf = load_hf_model(d.path);
  ASSERT_TRUE(hf.model);
  EXPECT_FALSE(hf.tokenizer) << "no tokenizer.json: no tokenizer";
  const ModelConfig& got = hf.model->config();
  EXPECT_EQ(hf.model->format(), "safetensors");
  EXPECT_EQ(got.arch, c.cfg.arch);
  EXPECT_EQ(got.rope_style, RopeStyle::Neox);
  EXPECT_EQ(got.n_kv_heads, c.cfg.n_kv_heads);
  EXPECT_EQ(got.tied_output, c.cfg.tied_output);
  EXPECT_EQ(got.attn_bias, c.cfg.attn_bias);
  EXPECT_EQ(got.rope_freq_factors, ref.config().rope_freq_factors);
  EXPECT_EQ(got.norm_eps, c.cfg.norm_eps);
  EXPECT_EQ(got.rope_theta, c.cfg.rope_theta);
  EXPECT_TRUE(hf.model->tensors().owned.empty()) << "weights must be used in place from the mapped files";
  auto toks = random_tokens(24, got.vocab_size, 5);
  expect_bit_identical(stepwise(*hf.model, toks), stepwise(ref, toks), which + " HF vs in-memory");
}

INSTANTIATE_TEST_SUITE_P(Models, HfLoad,
                         ::testing::Combine(::testing::Values("llama", "qwen2", "mistral"),
                                            ::testing::Values(DType::F32, DType::F16, DType::BF16)),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + dtype_name(std::get<1>(info.param)); });

TEST(HfDir, ShardedCheckpointLoadsTheSame) {
  for (const std::string which : {"llama", "qwen2"}) {
    HfCase c = make_case(which, DType::BF16);
    TempDir d("sharded_" + which);
    write_hf_dir(d.path, c.config, c.tensors, 3);
    ASSERT_FALSE(file_exists(d / "model.safetensors"));
    Model ref(c.cfg, c.tensors, "memory");
    LoadedModel hf = load_model(d.path);  // through the generic loader
    auto toks = random_tokens(16, ref.config().vocab_size, 6);
    expect_bit_identical(stepwise(*hf.model, toks), stepwise(ref, toks), which + " sharded");
  }
}

TEST(HfDir, IgnoresInvFreqAndTiedLmHead) {
  HfCase c = make_case("qwen2", DType::F32);
  TempDir d("ignored");
  write_hf_dir(d.path, c.config, c.tensors);
  SafetensorsWriter w;  // rewrite the file with two extra tensors HF checkpoints sometimes carry
  add_model_tensors(w, c.tensors);
  std::vector<float> inv(4, 1.0f), lm(size_t(c.cfg.vocab_size) * c.cfg.dim, 0.0f);
  w.add_tensor("model.layers.0.self_attn.rotary_emb.inv_freq", DType::F32, {4}, inv.data());
  w.add_tensor("lm_head.weight", DType::F32, {c.cfg.vocab_size, c.cfg.dim}, lm.data());  // tied: ignored
  w.write(d / "model.safetensors");
  Model ref(c.cfg, c.tensors, "memory");
  LoadedModel hf = load_hf_model(d.path);
  EXPECT_TRUE(hf.model->config().tied_output);
  auto toks = random_tokens(8, ref.config().vocab_size, 7);
  expect_bit_identical(stepwise(*hf.model, toks), stepwise(ref, toks), "extra tensors");
}

TEST(HfDir, MisalignedTensorsAreCopied) {
  HfCase c = make_case("llama", DType::F32);
  TempDir d("misaligned");
  write_hf_dir(d.path, c.config, c.tensors);
  SafetensorsWriter w;
  const uint16_t one = f32_to_f16(1.0f);
  w.add_tensor("model.layers.0.self_attn.rotary_emb.inv_freq", DType::F16, {1}, &one);  // shifts the rest by 2 bytes
  add_model_tensors(w, c.tensors);
  w.write(d / "model.safetensors");
  Model ref(c.cfg, c.tensors, "memory");
  LoadedModel hf = load_hf_model(d.path);
  EXPECT_FALSE(hf.model->tensors().owned.empty());
  for (const auto& [name, t] : hf.model->tensors().tensors)
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % sizeof(float), 0u) << name;
  auto toks = random_tokens(8, ref.config().vocab_size, 7);
  expect_bit_identical(stepwise(*hf.model, toks), stepwise(ref, toks), "misaligned tensors");
}

// ---- config.json ----

TEST(HfConfig, RopeScaling) {
  TempDir d("rope");
  json base = hf_config(llama_gqa_untied(Llama3Rope{}), nullptr);
  base["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
  write_text(d / "config.json", base.dump());
  EXPECT_EQ(config_from_hf(d.path).rope_freq_scale, 0.25f);
  // Qwen2.5's long-context recipe: yarn, factor 4 over 32768 positions; an explicit attention_factor takes
  // the place of 1 + 0.1 ln(factor).
  base["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 32768}};
  write_text(d / "config.json", base.dump());
  ModelConfig yarn = config_from_hf(d.path);
  EXPECT_TRUE(yarn.rope_yarn);
  EXPECT_EQ(yarn.rope_freq_scale, 0.25f);
  EXPECT_EQ(yarn.rope_orig_context, 32768);
  EXPECT_EQ(yarn.rope_yarn_beta_fast, 32.0f);
  EXPECT_EQ(yarn.rope_attn_factor, 1.0f);
  base["rope_scaling"]["attention_factor"] = 1.5;
  base["rope_scaling"]["beta_slow"] = 2.0;
  write_text(d / "config.json", base.dump());
  yarn = config_from_hf(d.path);
  EXPECT_NEAR(yarn.rope_attn_factor * (1 + 0.1 * std::log(4.0)), 1.5, 1e-6);
  EXPECT_EQ(yarn.rope_yarn_beta_slow, 2.0f);
  base["rope_scaling"] = {{"rope_type", "default"}};
  write_text(d / "config.json", base.dump());
  EXPECT_EQ(config_from_hf(d.path).rope_freq_scale, 1.0f);
  EXPECT_TRUE(config_from_hf(d.path).rope_freq_factors.empty());
  // Llama-3.1-8B's values: theta 500000, head_dim 128, factor 8, low 1, high 4, original context 8192.
  base["hidden_size"] = 4096, base["num_attention_heads"] = 32, base["rope_theta"] = 500000.0;
  base["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                          {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  write_text(d / "config.json", base.dump());
  const std::vector<float> f = config_from_hf(d.path).rope_freq_factors;
  ASSERT_EQ(f.size(), 64u);
  const double medium[] = {1.207484, 1.553415, 2.026313, 2.69453, 3.684253, 5.257327};  // i = 29..34
  for (int i = 0; i < 64; i++) {
    if (i < 29) EXPECT_EQ(f[i], 1.0f) << i;
    else if (i > 34) EXPECT_EQ(f[i], 8.0f) << i;
    else EXPECT_NEAR(f[i], medium[i - 29], 1e-4) << i;
  }
}

TEST(HfConfig, DefaultsAndOptionalKeys) {
  TempDir d("defaults");
  json j = hf_config(llama_gqa_untied(Llama3Rope{}), nullptr);
  for (const char* k : {"num_key_value_heads", "rms_norm_eps", "rope_theta", "tie_word_embeddings", "rope_scaling",
                        "architectures", "hidden_act", "max_position_embeddings"})
    j.erase(k);
  j["head_dim"] = nullptr;
  write_text(d / "config.json", j.dump());
  ModelConfig c = config_from_hf(d.path);
  EXPECT_EQ(c.n_kv_heads, c.n_heads);
  EXPECT_EQ(c.head_dim, c.dim / c.n_heads);
  EXPECT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.norm_eps, 1e-6f);
  EXPECT_FALSE(c.tied_output);
  EXPECT_EQ(c.rope_style, RopeStyle::Neox);
  EXPECT_EQ(c.name, fs::path(d.path).filename().string());  // the directory name
}

TEST(HfConfig, MalformedConfigsErrorCleanly) {
  TempDir d("badcfg");
  const json good = hf_config(llama_gqa_untied(Llama3Rope{}), nullptr);
  auto expect_config_error = [&](const json& j, const std::string& needle) {
    write_text(d / "config.json", j.dump());
    expect_error([&] { config_from_hf(d.path); }, needle);
  };
  expect_error([&] { config_from_hf(d.path); }, "no config.json");
  write_text(d / "config.json", "{\"hidden_size\": 64,");
  expect_error([&] { config_from_hf(d.path); }, "config.json: invalid JSON");
  write_text(d / "config.json", "[]");
  expect_error([&] { config_from_hf(d.path); }, "expected a JSON object");
  for (const char* key : {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "model_type"}) {
    json j = good;
    j.erase(key);
    expect_config_error(j, std::string("config.json: missing key '") + key + "'");
  }
  json j = good;
  j["hidden_size"] = "64";
  expect_config_error(j, "key 'hidden_size' must be an integer");
  j = good, j["num_hidden_layers"] = 1e12;
  expect_config_error(j, "key 'num_hidden_layers' must be an integer");
  j = good, j["rms_norm_eps"] = "small";
  expect_config_error(j, "key 'rms_norm_eps' must be a number");
  j = good, j["architectures"] = {"MixtralForCausalLM"}, j["model_type"] = "mixtral";
  expect_config_error(j, "unsupported architecture 'MixtralForCausalLM'");
  j = good, j.erase("architectures"), j["model_type"] = "gemma";
  expect_config_error(j, "unsupported model_type 'gemma'");
  j = good, j["model_type"] = "qwen2";
  expect_config_error(j, "does not match model_type");
  j = good, j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  expect_config_error(j, "missing key 'rope_scaling.original_max_position_embeddings'");
  j = good, j["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  expect_config_error(j, "unsupported rope_scaling type 'dynamic'");
  j = good, j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  expect_config_error(j, "missing key 'rope_scaling.low_freq_factor'");
  j = good, j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 4.0}, {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
  expect_config_error(j, "low_freq_factor < high_freq_factor");
  j = good, j["rope_scaling"] = {{"type", "linear"}, {"factor", 0}};
  expect_config_error(j, "factor must be positive");
  j = good, j["rope_scaling"] = "linear";
  expect_config_error(j, "'rope_scaling' must be an object");
  j = good, j["hidden_act"] = "gelu";
  expect_config_error(j, "unsupported hidden_act 'gelu'");
  j = good, j["use_sliding_window"] = true;
  expect_config_error(j, "sliding-window");
  j = good, j["num_attention_heads"] = 5;
  expect_config_error(j, "not a multiple of num_attention_heads");
  j = good, j["num_attention_heads"] = 0;
  expect_config_error(j, "num_attention_heads must be positive");
  j = good, j["num_key_value_heads"] = 3;
  expect_config_error(j, "not a multiple of head_count_kv");
  j = good, j["head_dim"] = 15;
  expect_config_error(j, "rope dimension");
  j = good, j["vocab_size"] = 0;
  expect_config_error(j, "vocab_size");
}

// A Llama HF directory that each malformed case rewrites from scratch.
struct ScratchDir {
  HfCase c = make_case("llama", DType::F16);
  TempDir d;
  explicit ScratchDir(const std::string& name) : d(name) {}
  void rewrite(const TensorSet& ts, const json& config, int shards = 0) {
    fs::remove_all(d.path);
    fs::create_directories(d.path);
    write_hf_dir(d.path, config, ts, shards);
  }
  void expect_load_error(const std::string& needle) {
    expect_error([&] { load_hf_model(d.path); }, needle);
  }
};

TEST(HfDir, BadTensorsError) {
  ScratchDir s("badtensors");
  HfCase& c = s.c;
  TempDir& d = s.d;
  expect_error([] { load_hf_model("/nonexistent/jf/model"); }, "no config.json");

  TensorSet missing = c.tensors;
  missing.tensors.erase("blk.1.ffn_up.weight");
  s.rewrite(missing, c.config);
  s.expect_load_error("checkpoint is missing tensor 'model.layers.1.mlp.up_proj.weight'");

  {  // tensors that do not belong to the architecture or lie beyond the layer count
    s.rewrite(c.tensors, c.config);
    for (const char* extra : {"model.layers.0.mlp.gate_proj.bias", "model.layers.2.input_layernorm.weight",
                              "model.layers.01.input_layernorm.weight", "vision_tower.weight"}) {
      SafetensorsWriter w;
      add_model_tensors(w, c.tensors);
      std::vector<uint16_t> v(64);
      w.add_tensor(extra, DType::F16, {64}, v.data());
      w.write(d / "model.safetensors");
      s.expect_load_error(std::string("unexpected tensor '") + extra + "'");
    }
  }

  json cfg = c.config;
  cfg["vocab_size"] = c.cfg.vocab_size + 1;
  s.rewrite(c.tensors, cfg);
  s.expect_load_error("token_embd.weight' has shape");

  s.rewrite(c.tensors, c.config);
  fs::remove(d / "model.safetensors");
  s.expect_load_error("no model.safetensors or model.safetensors.index.json");

  s.rewrite(c.tensors, c.config);
  {
    MappedFile f(d / "model.safetensors");
    std::vector<uint8_t> bytes(f.data(), f.data() + f.size() - 100);
    write_file_atomic(d / "model.safetensors", bytes.data(), bytes.size());
  }
  s.expect_load_error("model.safetensors: tensor");
}

// Sharded: a missing shard, a tensor listed in the wrong shard, a path outside the directory, a tensor in
// two shards, and a broken index.
TEST(HfDir, BadShardIndexErrors) {
  ScratchDir s("badindex");
  HfCase& c = s.c;
  TempDir& d = s.d;
  s.rewrite(c.tensors, c.config, 2);
  fs::remove(d / "model-00002-of-00002.safetensors");
  s.expect_load_error("cannot open");

  auto edit_index = [&](const std::function<void(json&)>& edit) {
    s.rewrite(c.tensors, c.config, 2);
    json idx = json::parse(read_text_file(d / "model.safetensors.index.json"));
    edit(idx);
    write_text(d / "model.safetensors.index.json", idx.dump());
  };
  edit_index([](json& idx) {
    std::string& f = idx["weight_map"]["model.embed_tokens.weight"].get_ref<std::string&>();
    f = f == "model-00001-of-00002.safetensors" ? "model-00002-of-00002.safetensors" : "model-00001-of-00002.safetensors";
  });
  s.expect_load_error("tensor 'model.embed_tokens.weight' is listed in");
  edit_index([](json& idx) { idx["weight_map"]["model.norm.weight"] = "../model-00001-of-00002.safetensors"; });
  s.expect_load_error("not a file name");
  edit_index([](json& idx) { idx["weight_map"]["model.norm.weight"] = 3; });
  s.expect_load_error("is not a file name");
  edit_index([](json& idx) { idx.erase("weight_map"); });
  s.expect_load_error("missing or empty object 'weight_map'");
  edit_index([](json&) {});
  write_text(d / "model.safetensors.index.json", "{\"weight_map\": ");
  s.expect_load_error("index.json: invalid JSON");

  s.rewrite(c.tensors, c.config, 2);
  for (const char* shard : {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
    auto f = SafetensorsFile::open(d / shard);  // add model.norm.weight to the shard that lacks it
    if (f->find("model.norm.weight")) continue;
    SafetensorsWriter w;
    for (const SafetensorsTensor& x : f->tensors()) w.add_tensor(x.name, x.type, x.shape, x.data);
    add_hf_tensor(w, "output_norm.weight", c.tensors.tensors.at("output_norm.weight"));
    w.write(d / shard);
  }
  s.expect_load_error("appears in both");
}

// ---- GGUF layout ----

// HF -> to_gguf_layout -> GGUF file -> model: the same attention up to summation order (Llama's Q/K rows
// are permuted), identical for Qwen2 (nothing moves).
TEST(GgufLayout, ConvertedHfModelMatches) {
  for (const std::string which : {"llama", "qwen2", "mistral"})
    for (DType type : {DType::F32, DType::BF16}) {
      SCOPED_TRACE(which + " " + dtype_name(type));
      HfCase c = make_case(which, type);
      TempDir d("layout_" + which + dtype_name(type));
      write_hf_dir(d.path, c.config, c.tensors);
      LoadedModel hf = load_hf_model(d.path);
      ModelConfig gcfg;
      TensorSet gts = to_gguf_layout(hf.model->config(), hf.model->tensors(), &gcfg);
      EXPECT_EQ(gcfg.rope_style, which == "qwen2" ? RopeStyle::Neox : RopeStyle::Interleaved);
      EXPECT_EQ(gcfg.arch, which == "qwen2" ? Arch::Qwen2 : Arch::Llama);  // Mistral: GGUF `llama`, as llama.cpp writes it
      write_model_gguf(d / "m.gguf", gcfg, gts, GgufMetadata{});
      auto g = model_from_gguf(std::shared_ptr<const GgufFile>(GgufFile::open(d / "m.gguf")));
      EXPECT_EQ(g->config().rope_style, gcfg.rope_style);
      EXPECT_EQ(g->config().rope_freq_factors, hf.model->config().rope_freq_factors);
      auto toks = random_tokens(24, c.cfg.vocab_size, 8);
      Logits want = stepwise(*hf.model, toks), got = stepwise(*g, toks);
      if (which == "qwen2") {
        expect_bit_identical(got, want, "qwen2 gguf");
        EXPECT_EQ(gts.tensors.at("blk.0.attn_q.weight").data, hf.model->tensors().find("blk.0.attn_q.weight")->data);
      } else {
        const double err = max_relative_error(got, want);
        std::printf("%s %s: HF vs converted GGUF max relative logit error %.3g\n", which.c_str(), dtype_name(type).c_str(), err);
        EXPECT_LT(err, 1e-4);
      }
    }
}

TEST(GgufLayout, PermutesQuantizedRowsAndBiases) {
  // A Llama with biases and Q8_0 matrices: the permuted model computes the same attention.
  ModelConfig cfg = llama_gqa_untied(Llama3Rope{});
  cfg.attn_bias = true;
  Model ref(cfg, random_tensors(cfg, DType::Q8_0, 21), "memory");
  ModelConfig gcfg;
  TensorSet gts = to_gguf_layout(ref.config(), ref.tensors(), &gcfg);
  EXPECT_EQ(gcfg.rope_style, RopeStyle::Interleaved);
  EXPECT_EQ(gts.find("blk.0.attn_q.weight")->type, DType::Q8_0);
  EXPECT_NE(gts.find("blk.0.attn_k.bias")->data, ref.tensors().find("blk.0.attn_k.bias")->data);
  EXPECT_EQ(gts.find("blk.0.attn_v.weight")->data, ref.tensors().find("blk.0.attn_v.weight")->data) << "V is not copied";
  Model conv(gcfg, gts, "memory");
  auto toks = random_tokens(20, cfg.vocab_size, 9);
  EXPECT_LT(max_relative_error(stepwise(conv, toks), stepwise(ref, toks)), 1e-4);
}

TEST(GgufLayout, PermutationRoundTripsExactly) {
  // Interleaved -> Neox (a Qwen2 target) -> interleaved (a Llama target) restores every byte.
  ModelConfig cfg = preset_config("tiny");
  cfg.attn_bias = true;
  TensorSet ts = random_tensors(cfg, DType::BF16, 3);
  ModelConfig as_qwen = cfg, neox, back;
  as_qwen.arch = Arch::Qwen2;
  TensorSet mid = to_gguf_layout(as_qwen, ts, &neox);
  EXPECT_EQ(neox.rope_style, RopeStyle::Neox);
  neox.arch = Arch::Llama;
  TensorSet again = to_gguf_layout(neox, mid, &back);
  EXPECT_EQ(back.rope_style, RopeStyle::Interleaved);
  for (const auto& [name, t] : ts.tensors) {
    const TensorRef* u = again.find(name);
    ASSERT_NE(u, nullptr) << name;
    ASSERT_EQ(std::memcmp(t.data, u->data, t.nbytes()), 0) << name;
    if (name.find("attn_q.weight") != std::string::npos) {
      EXPECT_NE(std::memcmp(t.data, mid.find(name)->data, t.nbytes()), 0) << name << " was not permuted in between";
    }
  }
}

TEST(GgufLayout, BadShapesError) {
  ModelConfig cfg = llama_gqa_untied(Llama3Rope{});
  TensorSet ts = random_tensors(cfg, DType::F32, 4);
  TensorSet missing = ts;
  missing.tensors.erase("blk.1.attn_k.weight");
  expect_error([&] { to_gguf_layout(cfg, missing, nullptr); }, "tensor 'blk.1.attn_k.weight' is missing");
  TensorSet wrong = ts;
  wrong.tensors["blk.0.attn_q.weight"].dims = {32, 128};
  expect_error([&] { to_gguf_layout(cfg, wrong, nullptr); }, "cannot permute tensor 'blk.0.attn_q.weight'");
}

}  // namespace
}  // namespace jf
