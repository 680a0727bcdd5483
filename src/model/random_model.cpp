#include "model/random_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/rng.h"
#include "kernels/parallel.h"

namespace jf {

TensorSet random_tensors(const ModelConfig& cfg, DType type, uint64_t seed) {
  return random_tensors(cfg, pure_scheme(type), seed);
}

TensorSet random_tensors(const ModelConfig& cfg_in, const WeightScheme& scheme, uint64_t seed, int64_t row_pool) {
  ModelConfig cfg = cfg_in;
  TensorSet ts;
  Rng rng(seed);
  std::vector<float> row;
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols) {
    const DType t = scheme_tensor_type(scheme, name, cols, cfg.n_layers, !cfg.tied_output, cfg.gqa_ratio(), reference_70b_class(cfg));
    // Uniform with the variance of N(0, 1/cols): cheap enough for billion-parameter benchmark models.
    const float half_width = std::sqrt(3.0f / static_cast<float>(cols));
    const size_t row_bytes = dtype_row_bytes(t, cols);
    const int64_t drawn = row_pool > 0 ? std::min(rows, row_pool) : rows;
    std::vector<uint8_t> bytes(row_bytes * rows);
    row.resize(static_cast<size_t>(drawn * cols));  // values drawn in order, quantized on all threads
    for (auto& v : row) v = half_width * (2.0f * rng.uniform() - 1.0f);
    parallel_for(drawn, drawn > 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) quantize_row(t, row.data() + r * cols, bytes.data() + r * row_bytes, cols);
    });
    if (drawn < rows)  // the pool's rows repeated, row r taking pool row (r x a large odd number) mod pool
      parallel_for(rows - drawn, true, [&](int64_t r0, int64_t r1) {
        for (int64_t r = drawn + r0; r < drawn + r1; r++) {
          const uint64_t from = static_cast<uint64_t>(r) * 2654435761u % static_cast<uint64_t>(drawn);
          std::memcpy(bytes.data() + r * row_bytes, bytes.data() + from * row_bytes, row_bytes);
        }
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
  auto fixed = [&](const std::string& name, const std::vector<float>& values) {
    if (values.empty()) return;
    std::vector<uint8_t> bytes(values.size() * 4);
    std::memcpy(bytes.data(), values.data(), bytes.size());
    ts.add_owned(name, DType::F32, {static_cast<int64_t>(values.size())}, std::move(bytes));
  };
  fixed("rope_freqs.weight", cfg.rope_freq_factors);
  fixed("rope_factors_long.weight", cfg.rope_factors_long);
  fixed("rope_factors_short.weight", cfg.rope_factors_short);
  auto layer = [&](const std::string& p) {
    vector(p + "attn_norm.weight", cfg.dim, 1.0f, 0.1f);
    if (cfg.fused_qkv_ffn()) {
      matrix(p + "attn_qkv.weight", cfg.q_dim() + 2 * cfg.kv_dim(), cfg.dim);
    } else {
      matrix(p + "attn_q.weight", cfg.q_dim(), cfg.dim);
      matrix(p + "attn_k.weight", cfg.kv_dim(), cfg.dim);
      matrix(p + "attn_v.weight", cfg.kv_dim(), cfg.dim);
    }
    matrix(p + "attn_output.weight", cfg.dim, cfg.q_dim());
    if (cfg.attn_bias) {
      vector(p + "attn_q.bias", cfg.q_dim(), 0.0f, 0.1f);
      vector(p + "attn_k.bias", cfg.kv_dim(), 0.0f, 0.1f);
      vector(p + "attn_v.bias", cfg.kv_dim(), 0.0f, 0.1f);
    }
    if (cfg.qk_norm()) {
      vector(p + "attn_q_norm.weight", cfg.head_dim, 1.0f, 0.3f);
      vector(p + "attn_k_norm.weight", cfg.head_dim, 1.0f, 0.3f);
    }
    if (cfg.gemma()) vector(p + "post_attention_norm.weight", cfg.dim, 1.0f, 0.1f);
    vector(p + "ffn_norm.weight", cfg.dim, 1.0f, 0.1f);
    if (cfg.fused_qkv_ffn()) {
      matrix(p + "ffn_up.weight", 2 * int64_t{cfg.ffn_dim}, cfg.dim);
    } else {
      matrix(p + "ffn_gate.weight", cfg.ffn_dim, cfg.dim);
      matrix(p + "ffn_up.weight", cfg.ffn_dim, cfg.dim);
    }
    matrix(p + "ffn_down.weight", cfg.dim, cfg.ffn_dim);
    if (cfg.gemma()) vector(p + "post_ffw_norm.weight", cfg.dim, 1.0f, 0.1f);
  };
  for (int l = 0; l < cfg.n_layers; l++) layer("blk." + std::to_string(l) + ".");
  // last: the other tensors keep their values
  if (cfg.draft_head) matrix("draft_output.weight", cfg.vocab_size, cfg.dim);
  if (cfg.draft_layer) {
    layer("draft_blk.");
    vector("draft_token_scale.weight", cfg.dim, 1.0f, 0.1f);
    vector("draft_output_norm.weight", cfg.dim, 1.0f, 0.1f);
  }
  return ts;
}

std::unique_ptr<Model> random_model(const ModelConfig& cfg, DType type, uint64_t seed) {
  return std::make_unique<Model>(cfg, random_tensors(cfg, type, seed), "memory");
}

namespace {

// LongRoPE factors of a small model: short ones near 1, long ones growing with the wavelength (as Phi-3's do).
void tiny_longrope(ModelConfig& c) {
  for (int i = 0; i < c.rope_dim / 2; i++) {
    c.rope_factors_short.push_back(1.0f + 0.05f * i);
    c.rope_factors_long.push_back(1.0f + 1.5f * i);
  }
  c.rope_orig_context = 64;
  c.rope_attn_factor = static_cast<float>(std::sqrt(1.0 + std::log(c.context_length / 64.0) / std::log(64.0)));
}

}  // namespace

ModelConfig preset_config(const std::string& name) {
  ModelConfig c;
  c.name = name;
  auto tiny = [&](Arch arch) {
    c.arch = arch;
    c.vocab_size = 256, c.dim = 64, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.ffn_dim = 192;
    c.context_length = 512;
    c.head_dim = c.dim / c.n_heads;
    c.rope_style = gguf_rope_style(arch);
  };
  if (name == "tiny") {
    tiny(Arch::Llama);
  } else if (name == "tiny-256") {  // every matrix 256 wide, so every K-quant type applies to all of them
    tiny(Arch::Llama);
    c.dim = 256, c.ffn_dim = 512, c.n_heads = 8, c.head_dim = 32;  // 4 query heads per key-value head
  } else if (name == "llama3-tiny") {
    // Llama 3.1's per-frequency RoPE divisors (rope_freqs.weight), from a 64-token original context so that
    // they change the angles of the first few dozen positions.
    tiny(Arch::Llama);
    c.rope_freq_factors = llama3_rope_freq_factors(c.rope_theta, c.head_dim, 8.0, 1.0, 4.0, 64);
  } else if (name == "qwen2-yarn-tiny") {  // YaRN x4 from a 128-token original context (Qwen2.5's long-context form)
    tiny(Arch::Qwen2);
    c.rope_theta = 1000000.0f, c.attn_bias = true, c.tied_output = true;
    c.rope_freq_scale = 0.25f, c.rope_yarn = true, c.rope_orig_context = 128;
  } else if (name == "llama-1b") {  // TinyLlama-1.1B
    c.arch = Arch::Llama;
    c.vocab_size = 32000, c.dim = 2048, c.n_layers = 22, c.n_heads = 32, c.n_kv_heads = 4, c.ffn_dim = 5632;
    c.context_length = 2048;
  } else if (name == "llama-8b") {  // Llama 3.1 8B's layers, with a 32,000-token vocabulary (ggml-vocab-llama-spm)
    c.arch = Arch::Llama;
    c.vocab_size = 32000, c.dim = 4096, c.n_layers = 32, c.n_heads = 32, c.n_kv_heads = 8, c.ffn_dim = 14336;
    c.context_length = 8192, c.rope_theta = 500000.0f;
  } else if (name == "qwen2-0.5b") {  // Qwen2.5-0.5B
    c.arch = Arch::Qwen2;
    c.vocab_size = 151936, c.dim = 896, c.n_layers = 24, c.n_heads = 14, c.n_kv_heads = 2, c.ffn_dim = 4864;
    c.context_length = 32768, c.rope_theta = 1000000.0f, c.norm_eps = 1e-6f;
    c.attn_bias = true, c.tied_output = true;
    c.rope_style = RopeStyle::Neox;
  } else if (name == "qwen2-tiny") {
    tiny(Arch::Qwen2);
    c.rope_theta = 1000000.0f, c.attn_bias = true, c.tied_output = true;
  } else if (name == "qwen3-tiny") {  // heads wider than dim / n_heads, as in Qwen3
    tiny(Arch::Qwen3);
    c.head_dim = 32, c.rope_theta = 1000000.0f, c.norm_eps = 1e-6f, c.tied_output = true;
  } else if (name == "qwen3-0.6b") {  // Qwen3-0.6B
    c.arch = Arch::Qwen3;
    c.vocab_size = 151936, c.dim = 1024, c.n_layers = 28, c.n_heads = 16, c.n_kv_heads = 8, c.ffn_dim = 3072;
    c.head_dim = 128, c.context_length = 40960, c.rope_theta = 1000000.0f, c.norm_eps = 1e-6f, c.tied_output = true;
    c.rope_style = RopeStyle::Neox;
  } else if (name == "phi3-tiny") {  // partial rotary (12 of 16 dims, like Phi-4-mini) and LongRoPE
    tiny(Arch::Phi3);
    c.rope_dim = 12;
    tiny_longrope(c);
  } else if (name == "phi3-mini") {  // Phi-3-mini-4k
    c.arch = Arch::Phi3;
    c.vocab_size = 32064, c.dim = 3072, c.n_layers = 32, c.n_heads = 32, c.n_kv_heads = 32, c.ffn_dim = 8192;
    c.context_length = 4096;
    c.rope_style = RopeStyle::Neox;
  } else if (name == "gemma2-tiny" || name == "gemma3-tiny") {  // windows of 8 positions, heads wider than dim / heads
    const bool g2 = name == "gemma2-tiny";
    tiny(g2 ? Arch::Gemma2 : Arch::Gemma3);
    c.head_dim = 32, c.norm_eps = 1e-6f, c.tied_output = true;
    c.sliding_window = 8, c.sliding_period = g2 ? 2 : 6;
    c.n_layers = g2 ? 2 : 6;  // gemma3: five local layers and a global one
    c.query_scale = static_cast<float>(1.0 / std::sqrt(32.0));  // as read from a file
    if (g2) {
      c.attn_softcap = 50.0f, c.final_softcap = 30.0f;
    } else {
      c.rope_theta = 1000000.0f, c.rope_theta_local = 10000.0f, c.rope_freq_scale = 0.125f;
    }
  } else if (name == "gemma3-1b") {  // Gemma-3-1B
    c.arch = Arch::Gemma3;
    c.vocab_size = 262144, c.dim = 1152, c.n_layers = 26, c.n_heads = 4, c.n_kv_heads = 1, c.ffn_dim = 6912;
    c.head_dim = 256, c.context_length = 32768, c.norm_eps = 1e-6f, c.tied_output = true;
    c.sliding_window = 512, c.sliding_period = 6, c.rope_theta = 1000000.0f, c.rope_theta_local = 10000.0f;
    c.query_scale = 1.0f / 16.0f;
    c.rope_style = RopeStyle::Neox;
  } else {
    throw Error("unknown model preset '" + name +
                "' (known: tiny, tiny-256, llama3-tiny, llama-1b, llama-8b, qwen2-0.5b, qwen2-tiny, qwen2-yarn-tiny, qwen3-tiny, qwen3-0.6b, phi3-tiny, phi3-mini, gemma2-tiny, "
                "gemma3-tiny, gemma3-1b)");
  }
  if (c.head_dim == 0) c.head_dim = c.dim / c.n_heads;
  if (c.rope_dim == 0) c.rope_dim = c.head_dim;
  return c;
}

}  // namespace jf
