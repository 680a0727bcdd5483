// Hugging Face checkpoints of the architectures beyond Llama / Qwen2 (Qwen3, Phi-3, Gemma 2 / 3): config.json fields,
// tensor names, loading with the in-memory model's logits, and conversion to GGUF files with llama.cpp's
// names and keys.
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "model/convert.h"
#include "model/hf.h"
#include "model/loader.h"
#include "model/random_model.h"
#include "model_helpers.h"
#include "test_support.h"

namespace jf {
namespace {

using nlohmann::json;
using test::expect_error;
using test::Logits;
using test::random_tokens;
using test::stepwise;
using test::TempDir;

// GGUF name -> HF name, as the reference converters map them (the opposite direction of hf.cpp's tables).
std::string hf_name(Arch arch, const std::string& g) {
  static const std::map<std::string, std::string> global = {
      {"token_embd.weight", "model.embed_tokens.weight"}, {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"}};
  static const std::map<std::string, std::string> layer = {
      {"attn_norm.weight", "input_layernorm.weight"},   {"attn_q.weight", "self_attn.q_proj.weight"},
      {"attn_k.weight", "self_attn.k_proj.weight"},     {"attn_v.weight", "self_attn.v_proj.weight"},
      {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_q_norm.weight", "self_attn.q_norm.weight"},
      {"attn_k_norm.weight", "self_attn.k_norm.weight"}, {"attn_qkv.weight", "self_attn.qkv_proj.weight"},
      {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
      {"ffn_down.weight", "mlp.down_proj.weight"}};
  static const std::map<std::string, std::string> gemma = {  // Gemma's norms around each block
      {"post_attention_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
      {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"}};
  if (global.count(g)) return global.at(g);
  const size_t dot = g.find('.', 4);
  const std::string rest = g.substr(dot + 1);
  const bool is_gemma = arch == Arch::Gemma2 || arch == Arch::Gemma3;
  const std::string hf_rest = rest == "ffn_up.weight" ? (arch == Arch::Phi3 ? "mlp.gate_up_proj.weight" : "mlp.up_proj.weight")
                              : is_gemma && gemma.count(rest) ? gemma.at(rest)
                                                              : layer.at(rest);
  return "model.layers." + g.substr(4, dot - 4) + "." + hf_rest;
}

json hf_config(const ModelConfig& c) {
  const bool phi = c.arch == Arch::Phi3;
  const std::map<Arch, std::pair<const char*, const char*>> names = {
      {Arch::Qwen3, {"Qwen3ForCausalLM", "qwen3"}}, {Arch::Phi3, {"Phi3ForCausalLM", "phi3"}},
      {Arch::Gemma2, {"Gemma2ForCausalLM", "gemma2"}}, {Arch::Gemma3, {"Gemma3ForCausalLM", "gemma3_text"}}};
  json j = {{"architectures", {names.at(c.arch).first}},
            {"model_type", names.at(c.arch).second},
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
            {"torch_dtype", "float32"}};
  if (c.head_dim * c.n_heads != c.dim) j["head_dim"] = c.head_dim;
  if (phi) {
    j["partial_rotary_factor"] = double(c.rope_dim) / c.head_dim;
    j["original_max_position_embeddings"] = c.rope_orig_context;
    j["sliding_window"] = 2047;  // Phi-3-mini carries one; llama.cpp ignores it too
    j["rope_scaling"] = {{"type", "longrope"}, {"long_factor", c.rope_factors_long}, {"short_factor", c.rope_factors_short}};
  } else if (c.gemma()) {
    j["hidden_act"] = j["hidden_activation"] = "gelu_pytorch_tanh";
    j["query_pre_attn_scalar"] = c.head_dim;
    j["sliding_window"] = c.sliding_window;
    if (c.arch == Arch::Gemma2) {
      j["attn_logit_softcapping"] = c.attn_softcap, j["final_logit_softcapping"] = c.final_softcap;
    } else {
      j["sliding_window_pattern"] = c.sliding_period, j["rope_local_base_freq"] = c.rope_theta_local;
      j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 1.0 / c.rope_freq_scale}};
      j["attn_logit_softcapping"] = nullptr, j["final_logit_softcapping"] = nullptr;
    }
  } else {
    j["attention_bias"] = false;
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
  }
  return j;
}

void write_text(const std::string& path, const std::string& text) { write_file_atomic(path, text.data(), text.size()); }

void write_hf_dir(const std::string& dir, const ModelConfig& cfg, const TensorSet& ts) {
  write_text(dir + "/config.json", hf_config(cfg).dump(2));
  SafetensorsWriter w;
  for (const auto& [name, t] : ts.tensors)
    if (!name.starts_with("rope_factors"))  // config.json holds them
      w.add_tensor(hf_name(cfg.arch, name), t.type, std::vector<int64_t>(t.dims.rbegin(), t.dims.rend()), t.data);
  w.write(dir + "/model.safetensors");
}

void expect_same(const Logits& a, const Logits& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t t = 0; t < a.size(); t++)
    for (size_t i = 0; i < a[t].size(); i++) ASSERT_EQ(a[t][i], b[t][i]) << what << ": token " << t << " index " << i;
}

// HF stores Gemma's norm weights w, GGUF 1 + w: *hf gets w, and *ts the (w) + 1 the reference computes with.
void gemma_norms(TensorSet* ts, TensorSet* hf) {
  for (auto& [name, t] : ts->tensors) {
    if (!name.ends_with("norm.weight")) continue;
    std::vector<uint8_t> w(t.nbytes()), w1(t.nbytes());
    for (int64_t i = 0; i < t.n_elements(); i++) {
      reinterpret_cast<float*>(w.data())[i] = static_cast<const float*>(t.data)[i] - 1.0f;
      reinterpret_cast<float*>(w1.data())[i] = reinterpret_cast<float*>(w.data())[i] + 1.0f;
    }
    hf->add_owned(name, DType::F32, t.dims, std::move(w));
    ts->add_owned(name, DType::F32, t.dims, std::move(w1));
  }
}

// HF directory -> model: the in-memory model's logits; -> GGUF file (llama.cpp's names and keys) -> model: again.
TEST(HfArch, LoadsAndConvertsToGguf) {
  for (const char* preset : {"qwen3-tiny", "phi3-tiny", "gemma2-tiny", "gemma3-tiny"}) {
    SCOPED_TRACE(preset);
    const ModelConfig cfg = preset_config(preset);
    TensorSet ts = random_tensors(cfg, DType::F32, 8);
    TensorSet hf_ts = ts;
    if (cfg.gemma()) gemma_norms(&ts, &hf_ts);
    Model ref(cfg, ts, "memory");
    TempDir d(std::string("hf_") + preset);
    write_hf_dir(d.path, cfg, hf_ts);
    LoadedModel hf = load_hf_model(d.path);
    const ModelConfig& got = hf.model->config();
    EXPECT_EQ(got.arch, cfg.arch);
    EXPECT_EQ(got.head_dim, cfg.head_dim);
    EXPECT_EQ(got.rope_dim, cfg.rope_dim);
    EXPECT_EQ(got.rope_factors_long, cfg.rope_factors_long);
    EXPECT_EQ(got.rope_orig_context, cfg.rope_orig_context);
    EXPECT_EQ(got.rope_attn_factor, cfg.rope_attn_factor);
    EXPECT_EQ(got.sliding_window, cfg.sliding_window);
    EXPECT_EQ(got.sliding_period, cfg.sliding_period);
    EXPECT_EQ(got.attn_softcap, cfg.attn_softcap);
    EXPECT_EQ(got.rope_theta_local, cfg.rope_theta_local);
    EXPECT_EQ(got.rope_freq_scale, cfg.rope_freq_scale);
    EXPECT_EQ(got.query_scale, cfg.query_scale);
    auto toks = random_tokens(12, cfg.vocab_size, 9);
    const Logits want = stepwise(ref, toks);
    expect_same(stepwise(*hf.model, toks), want, "HF");

    ModelConfig gcfg;
    TensorSet gts = to_gguf_layout(got, hf.model->tensors(), &gcfg);
    write_model_gguf(d / "m.gguf", gcfg, gts, GgufMetadata{});
    auto file = std::shared_ptr<const GgufFile>(GgufFile::open(d / "m.gguf"));
    const std::string p = arch_name(cfg.arch) + ".";
    if (cfg.arch == Arch::Qwen3) {
      EXPECT_EQ(file->meta().get_int(p + "attention.key_length"), cfg.head_dim);
      EXPECT_EQ(file->meta().get_int(p + "attention.value_length"), cfg.head_dim);
      EXPECT_NE(file->find_tensor("blk.0.attn_q_norm.weight"), nullptr);
    } else if (cfg.gemma()) {
      EXPECT_EQ(file->meta().get_int(p + "attention.sliding_window"), cfg.sliding_window);
      EXPECT_EQ(file->find_tensor("blk.0.post_ffw_norm.weight")->type, DType::F32);
    } else {
      EXPECT_EQ(file->meta().get_int(p + "rope.dimension_count"), cfg.rope_dim);
      EXPECT_EQ(file->meta().get_int(p + "rope.scaling.original_context_length"), cfg.rope_orig_context);
      EXPECT_NE(file->find_tensor("blk.0.attn_qkv.weight"), nullptr);
      EXPECT_NE(file->find_tensor("rope_factors_short.weight"), nullptr);
      EXPECT_EQ(file->find_tensor("blk.0.ffn_up.weight")->dims[1], 2 * cfg.ffn_dim);
    }
    expect_same(stepwise(*model_from_gguf(file), toks), want, "HF -> GGUF");
  }
}

TEST(HfArch, BadConfigsErrorCleanly) {
  TempDir d("hf_bad");
  const json good = hf_config(preset_config("phi3-tiny"));
  auto expect_config_error = [&](const json& j, const std::string& needle) {
    write_text(d / "config.json", j.dump());
    expect_error([&] { config_from_hf(d.path); }, needle);
  };
  json j = good;
  j["rope_scaling"]["long_factor"] = {1.0, 2.0};
  expect_config_error(j, "'long_factor' must be a list of 6 numbers");
  j = good;
  j.erase("original_max_position_embeddings");
  expect_config_error(j, "missing key 'original_max_position_embeddings'");
  j = good;
  j["partial_rotary_factor"] = 0.3;
  expect_config_error(j, "partial_rotary_factor");
  j = good;
  j["model_type"] = "mamba", j.erase("architectures");
  expect_config_error(j, "unsupported model_type 'mamba' (supported: llama, mistral, qwen2, qwen3, phi3, gemma2, gemma3_text, gemma3)");
  j = hf_config(preset_config("qwen3-tiny"));
  j["use_sliding_window"] = true;
  expect_config_error(j, "use_sliding_window");
  j = hf_config(preset_config("gemma3-tiny"));  // newer configs list the layers' kinds
  j["layer_types"] = {"sliding_attention", "sliding_attention", "sliding_attention", "sliding_attention",
                      "sliding_attention", "full_attention"};
  write_text(d / "config.json", j.dump());
  EXPECT_EQ(config_from_hf(d.path).sliding_period, 6);
  j["layer_types"][0] = "full_attention";
  expect_config_error(j, "layer_types: layer 0 breaks the every-6th-layer-global pattern");
  j = hf_config(preset_config("gemma2-tiny"));
  j["hidden_activation"] = "silu";
  expect_config_error(j, "unsupported hidden_activation 'silu' (supported: gelu_pytorch_tanh)");
  j = hf_config(preset_config("gemma3-tiny"));
  j["final_logit_softcapping"] = 30.0;  // honoured, as GGUF's key is
  write_text(d / "config.json", j.dump());
  EXPECT_EQ(config_from_hf(d.path).final_softcap, 30.0f);
  j["attn_logit_softcapping"] = 50.0;
  expect_config_error(j, "attn_logit_softcapping is not supported for gemma3");
  j = hf_config(preset_config("qwen3-tiny"));  // an AWQ checkpoint's weights are qweight / qzeros / scales
  j["quantization_config"] = {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}};
  expect_config_error(j, "quantized checkpoints are not supported (quantization_config \"awq\"); convert the "
                         "unquantized checkpoint, or use a GGUF file");
}

// google/gemma-3-4b-it's config.json as published: text_config names only what differs from transformers'
// Gemma3TextConfig defaults, which fill the rest.
json gemma3_4b_config() {
  return json::parse(R"({"architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
    "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144, "mm_tokens_per_image": 256,
    "model_type": "gemma3", "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                      "patch_size": 14, "vision_use_head": false}})");
}

TEST(HfArch, Gemma3MultimodalConfigTakesTheTextDefaults) {
  TempDir d("hf_gemma3_4b");
  auto check = [&](const json& j) {
    write_text(d / "config.json", j.dump());
    const ModelConfig c = config_from_hf(d.path);
    EXPECT_EQ(c.arch, Arch::Gemma3);
    EXPECT_EQ(c.dim, 2560);
    EXPECT_EQ(c.ffn_dim, 10240);
    EXPECT_EQ(c.n_layers, 34);
    EXPECT_EQ(c.n_heads, 8);
    EXPECT_EQ(c.n_kv_heads, 4);
    EXPECT_EQ(c.head_dim, 256);
    EXPECT_EQ(c.vocab_size, 262208);
    EXPECT_EQ(c.context_length, 131072);
    EXPECT_EQ(c.sliding_window, 1024);
    EXPECT_EQ(c.sliding_period, 6);
    EXPECT_EQ(c.rope_theta, 1000000.0f);
    EXPECT_EQ(c.rope_theta_local, 10000.0f);
    EXPECT_EQ(c.rope_freq_scale, 0.125f);
    EXPECT_EQ(c.query_scale, 1.0f / 16.0f);
    EXPECT_EQ(c.final_softcap, 0.0f);
    EXPECT_TRUE(c.tied_output);
  };
  json j = gemma3_4b_config();
  check(j);
  // transformers 5 writes one rope object per layer kind, each with its base.
  j["text_config"].erase("rope_scaling");
  j["text_config"]["rope_parameters"] = {
      {"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1000000.0}}},
      {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10000.0}}}};
  check(j);
  j["text_config"]["rope_parameters"]["sliding_attention"]["rope_theta"] = 20000.0;
  write_text(d / "config.json", j.dump());
  EXPECT_EQ(config_from_hf(d.path).rope_theta_local, 20000.0f);

  auto expect_config_error = [&](const json& bad, const std::string& needle) {
    write_text(d / "config.json", bad.dump());
    expect_error([&] { config_from_hf(d.path); }, needle);
  };
  j["text_config"]["rope_parameters"]["sliding_attention"]["rope_type"] = "linear";
  expect_config_error(j, "unsupported rope_parameters.sliding_attention type 'linear' (local layers: default only)");
  j = gemma3_4b_config();
  j["text_config"]["hidden_size"] = "wide";
  expect_config_error(j, "key 'text_config.hidden_size' must be an integer");
  j.erase("text_config");
  expect_config_error(j, "key 'text_config' must be an object (the text model of a Gemma3ForConditionalGeneration)");
  j = gemma3_4b_config();
  j["model_type"] = "gemma3_text";
  expect_config_error(j, "architecture 'Gemma3ForConditionalGeneration' does not match model_type 'gemma3_text'");
}

// A Gemma-style tokenizer.json (SentencePiece as BPE with byte fallback, no dummy prefix) naming `n` ids.
void write_gemma_tokenizer(const std::string& dir, int n) {
  json vocab = json::object();
  for (int i = 4; i < n; i++) vocab["\xE2\x96\x81w" + std::to_string(i)] = i;
  json added = json::array();
  const char* special[] = {"<pad>", "<eos>", "<bos>", "<unk>"};
  for (int i = 0; i < 4; i++) {
    vocab[special[i]] = i;
    added.push_back({{"id", i}, {"content", special[i]}, {"special", true}});
  }
  const json tj = {{"added_tokens", added},
                   {"normalizer", {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}},
                   {"pre_tokenizer", nullptr},
                   {"model", {{"type", "BPE"}, {"byte_fallback", true}, {"vocab", vocab}, {"merges", json::array()}}}};
  write_text(dir + "/tokenizer.json", tj.dump());
  write_text(dir + "/tokenizer_config.json", json({{"bos_token", "<bos>"}, {"eos_token", "<eos>"}}).dump());
}

// A Gemma3ForConditionalGeneration checkpoint (both of transformers' tensor layouts, with image-encoder
// tensors): jf loads its text model with the logits of the same weights as a text-only model, says what it
// left out, pads the vocabulary to the embedding's rows, and converts to a GGUF whose vocabulary covers them.
TEST(HfArch, Gemma3MultimodalCheckpointLoadsItsTextModel) {
  const ModelConfig cfg = preset_config("gemma3-tiny");
  TensorSet ts = random_tensors(cfg, DType::F32, 21);
  TensorSet hf_ts = ts;
  gemma_norms(&ts, &hf_ts);
  Model ref(cfg, ts, "memory");
  const auto toks = random_tokens(12, cfg.vocab_size, 5);
  const Logits want = stepwise(ref, toks);
  const std::vector<float> vision(4 * 8, 0.5f);
  for (const char* prefix : {"language_model.", "model.language_model."}) {
    SCOPED_TRACE(prefix);
    TempDir d("hf_gemma3_mm");
    json text = hf_config(cfg);
    for (const char* k : {"architectures", "torch_dtype", "rms_norm_eps", "tie_word_embeddings", "sliding_window_pattern",
                          "rope_local_base_freq", "hidden_act", "hidden_activation"})
      text.erase(k);  // transformers' defaults
    json j = gemma3_4b_config();
    j["text_config"] = text;
    write_text(d / "config.json", j.dump());
    SafetensorsWriter w;
    const bool old_layout = std::string(prefix) == "language_model.";
    for (const auto& [name, t] : hf_ts.tensors) {
      std::string hf = hf_name(cfg.arch, name);  // model.X
      hf = old_layout ? "language_model." + hf : "model.language_model." + hf.substr(6);
      w.add_tensor(hf, t.type, std::vector<int64_t>(t.dims.rbegin(), t.dims.rend()), t.data);
    }
    const std::string vt = old_layout ? "vision_tower." : "model.vision_tower.";
    const std::string mp = old_layout ? "multi_modal_projector." : "model.multi_modal_projector.";
    w.add_tensor(vt + "vision_model.embeddings.patch_embedding.weight", DType::F32, {4, 8}, vision.data());
    w.add_tensor(mp + "mm_input_projection_weight", DType::F32, {8, 4}, vision.data());
    w.write(d / "model.safetensors");
    write_gemma_tokenizer(d.path, cfg.vocab_size - 7);

    LoadedModel hf = load_model(d.path);
    EXPECT_EQ(hf.model->config().vocab_size, cfg.vocab_size);
    expect_same(stepwise(*hf.model, toks), want, "multimodal checkpoint");
    ASSERT_EQ(hf.notes.size(), 1u);
    EXPECT_NE(hf.notes[0].find("the text model of a Gemma3ForConditionalGeneration checkpoint; 2 tensors of its image "
                               "encoder left out"), std::string::npos) << hf.notes[0];
    // The ids tokenizer.json does not name are unused padding, decoded as nothing.
    ASSERT_TRUE(hf.tokenizer);
    const int pad = cfg.vocab_size - 3;
    EXPECT_EQ(hf.tokenizer->n_vocab(), cfg.vocab_size);
    EXPECT_EQ(hf.tokenizer->token_text(pad), "[PAD" + std::to_string(pad) + "]");
    EXPECT_EQ(hf.tokenizer->decode(std::vector<int32_t>{10, pad, 11}), hf.tokenizer->decode(std::vector<int32_t>{10, 11}));

    ModelConfig gcfg;
    TensorSet gts = to_gguf_layout(hf.model->config(), hf.model->tensors(), &gcfg);
    GgufMetadata meta;
    hf.tokenizer->to_gguf(meta);
    write_model_gguf(d / "m.gguf", gcfg, gts, meta);
    auto file = std::shared_ptr<const GgufFile>(GgufFile::open(d / "m.gguf"));
    EXPECT_EQ(Tokenizer::from_gguf(file->meta())->n_vocab(), file->find_tensor("token_embd.weight")->dims[1]);
    EXPECT_EQ(file->find_tensor("v.patch_embd.weight"), nullptr);
    expect_same(stepwise(*model_from_gguf(file), toks), want, "multimodal checkpoint -> GGUF");
  }

  // A tensor that is neither the text model's nor the image encoder's is still refused.
  TempDir d("hf_gemma3_mm_bad");
  json j = gemma3_4b_config();
  j["text_config"] = hf_config(cfg);
  write_text(d / "config.json", j.dump());
  SafetensorsWriter w;
  for (const auto& [name, t] : hf_ts.tensors)
    w.add_tensor("language_model." + hf_name(cfg.arch, name), t.type, std::vector<int64_t>(t.dims.rbegin(), t.dims.rend()), t.data);
  w.add_tensor("audio_tower.conv.weight", DType::F32, {4, 8}, vision.data());
  w.write(d / "model.safetensors");
  expect_error([&] { load_model(d.path); }, "unexpected tensor 'audio_tower.conv.weight' for a Gemma3ForConditionalGeneration");
  SafetensorsWriter vision_only;  // the image encoder alone
  vision_only.add_tensor("vision_tower.patch.weight", DType::F32, {4, 8}, vision.data());
  vision_only.write(d / "model.safetensors");
  expect_error([&] { load_model(d.path); },
               "checkpoint is missing tensor 'model.embed_tokens.weight' (under language_model. or model.language_model.)");
}

}  // namespace
}  // namespace jf
