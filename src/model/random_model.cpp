#include "model/random_model.h"

#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/rng.h"
#include "kernels/parallel.h"

namespace jf {

TensorSet random_tensors(const ModelConfig& cfg, DType type, uint64_t seed) {
  return random_tensors(cfg, pure_scheme(type), seed);
}

TensorSet random_tensors(const ModelConfig& cfg_in, const WeightScheme& scheme, uint64_t seed) {
  ModelConfig cfg = cfg_in;
  TensorSet ts;
  Rng rng(seed);
  std::vector<float> row;
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    const DType t = scheme_tensor_type(scheme, name, cols, cfg.n_layers, !cfg.tied_output);
    // Uniform with the variance of N(0, 1/cols): cheap enough for billion-parameter benchmark models.
    const float half_width = std::sqrt(3.0f / static_cast<float>(cols));
    std::vector<uint8_t> bytes(dtype_row_bytes(t, cols) * rows);
    row.resize(static_cast<size_t>(rows * cols));  // values drawn in order, quantized on all threads
    for (auto& v : row) v = half_width * (2.0f * rng.uniform() - 1.0f);
    parallel_for(rows, rows > 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++)
        quantize_row(t, row.data() + r * cols, bytes.data() + r * dtype_row_bytes(t, cols), cols);
    });
    ts.add_owned(name, t, {cols, rows}, std::move(bytes));
  };
  auto vector = [&](const std::string& name, int64_t n, float center, float spread) {
    std::vector<uint8_t> bytes(n * 4);
    auto* f = reinterpret_cast<float*>(bytes.data());
    for (int64_t i = 0; i < n; i++) f[i] = center + spread * rng.normal();
    ts.add_owned(name, DType::F32, {n}, std::move(bytes));
  };
  // Embedding rows are read individually; keep them in the matrix type too (as real GGUF files do).
  matrix("token_embd.weight", cfg.vocab_size, cfg.dim);
  vector("output_norm.weight", cfg.dim, 1.0f, 0.1f);
  if (!cfg.tied_output) matrix("output.weight", cfg.vocab_size, cfg.dim);
  if (!cfg.rope_freq_factors.empty()) {
    std::vector<uint8_t> bytes(cfg.rope_freq_factors.size() * 4);
    std::memcpy(bytes.data(), cfg.rope_freq_factors.data(), bytes.size());
    ts.add_owned("rope_freqs.weight", DType::F32, {static_cast<int64_t>(cfg.rope_freq_factors.size())}, std::move(bytes));
  }
  for (int l = 0; l < cfg.n_layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    vector(p + "attn_norm.weight", cfg.dim, 1.0f, 0.1f);
    matrix(p + "attn_q.weight", cfg.q_dim(), cfg.dim);
    matrix(p + "attn_k.weight", cfg.kv_dim(), cfg.dim);
    matrix(p + "attn_v.weight", cfg.kv_dim(), cfg.dim);
    matrix(p + "attn_output.weight", cfg.dim, cfg.q_dim());
    if (cfg.attn_bias) {
      vector(p + "attn_q.bias", cfg.q_dim(), 0.0f, 0.1f);
      vector(p + "attn_k.bias", cfg.kv_dim(), 0.0f, 0.1f);
      vector(p + "attn_v.bias", cfg.kv_dim(), 0.0f, 0.1f);
    }
    vector(p + "ffn_norm.weight", cfg.dim, 1.0f, 0.1f);
    matrix(p + "ffn_gate.weight", cfg.ffn_dim, cfg.dim);
    matrix(p + "ffn_up.weight", cfg.ffn_dim, cfg.dim);
    matrix(p + "ffn_down.weight", cfg.dim, cfg.ffn_dim);
  }
  return ts;
}

std::unique_ptr<Model> random_model(const ModelConfig& cfg, DType type, uint64_t seed) {
  return std::make_unique<Model>(cfg, random_tensors(cfg, type, seed), "memory");
}

ModelConfig preset_config(const std::string& name) {
  ModelConfig c;
  if (name == "tiny") {
    c.arch = Arch::Llama;
    c.vocab_size = 256, c.dim = 64, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.ffn_dim = 192;
    c.context_length = 512;
  } else if (name == "llama-1b") {  // TinyLlama-1.1B
    c.arch = Arch::Llama;
    c.vocab_size = 32000, c.dim = 2048, c.n_layers = 22, c.n_heads = 32, c.n_kv_heads = 4, c.ffn_dim = 5632;
    c.context_length = 2048;
  } else if (name == "qwen2-0.5b") {  // Qwen2.5-0.5B
    c.arch = Arch::Qwen2;
    c.vocab_size = 151936, c.dim = 896, c.n_layers = 24, c.n_heads = 14, c.n_kv_heads = 2, c.ffn_dim = 4864;
    c.context_length = 32768, c.rope_theta = 1000000.0f, c.norm_eps = 1e-6f;
    c.attn_bias = true, c.tied_output = true;
    c.rope_style = RopeStyle::Neox;
  } else {
    throw Error("unknown model preset '" + name + "' (known: tiny, llama-1b, qwen2-0.5b)");
  }
  c.name = name;
  c.head_dim = c.dim / c.n_heads;
  c.rope_dim = c.head_dim;
  return c;
}

}  // namespace jf
