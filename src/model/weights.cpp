#include "model/weights.h"

#include <cstring>

#include "base/error.h"

namespace jf {

void TensorSet::add_owned(const std::string& name, DType type, std::vector<int64_t> dims,
                          std::vector<uint8_t> bytes) {
  auto buf = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  owned.push_back(buf);
  tensors[name] = TensorRef{type, std::move(dims), buf->data()};
}

namespace {

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); i++) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

class Binder {
 public:
  Binder(const TensorSet& ts, ModelWeights& w) : ts_(ts), w_(w) {}

  const TensorRef* get(const std::string& name, bool required) {
    const TensorRef* t = ts_.find(name);
    if (!t && required) throw Error("model is missing tensor '" + name + "'");
    return t;
  }
  static void check_shape(const std::string& name, const TensorRef& t, std::vector<int64_t> want) {
    if (t.dims != want)
      throw Error("tensor '" + name + "' has shape " + dims_str(t.dims) + ", expected " + dims_str(want));
  }
  // rows x cols matrix (GGML dims {cols, rows}).
  WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols) {
    const TensorRef* t = get(name, true);
    check_shape(name, *t, {cols, rows});
    return WeightMatrix{t->type, t->data, rows, cols};
  }
  // fp32 vector of n values (converted if stored otherwise); null when absent and optional.
  const float* vec(const std::string& name, int64_t n, bool required) {
    const TensorRef* t = get(name, required);
    if (!t) return nullptr;
    check_shape(name, *t, {n});
    if (dtype_is_block_quantized(t->type)) throw Error("tensor '" + name + "' must not be quantized");
    w_.f32_vectors.emplace_back(static_cast<size_t>(n));
    dequantize_row(t->type, t->data, w_.f32_vectors.back().data(), n);
    return w_.f32_vectors.back().data();
  }

 private:
  const TensorSet& ts_;
  ModelWeights& w_;
};

}  // namespace

namespace {

// Rows [r0, r0 + n) of a matrix: a matrix of its own, pointing into the same memory.
WeightMatrix row_range(const WeightMatrix& m, int64_t r0, int64_t n) {
  return WeightMatrix{m.type, m.row(r0), n, m.cols};
}

// A 1-D tensor that holds configuration (rope frequency divisors), copied into `out` as fp32 when present
// (a config from config.json already holds them).
void config_vector(const TensorSet& ts, const std::string& name, std::vector<float>& out) {
  const TensorRef* t = ts.find(name);
  if (!t) return;
  if (dtype_is_block_quantized(t->type)) throw Error("tensor '" + name + "' must not be quantized");
  out.resize(static_cast<size_t>(t->n_elements()));
  dequantize_row(t->type, t->data, out.data(), t->n_elements());
}

void bind_attention(Binder& b, const TensorSet& ts, const ModelConfig& cfg, const std::string& p, LayerWeights& L) {
  if (cfg.fused_qkv_ffn() && ts.find(p + "attn_qkv.weight")) {
    const WeightMatrix qkv = b.matrix(p + "attn_qkv.weight", cfg.q_dim() + 2 * cfg.kv_dim(), cfg.dim);
    L.wq = row_range(qkv, 0, cfg.q_dim());
    L.wk = row_range(qkv, cfg.q_dim(), cfg.kv_dim());
    L.wv = row_range(qkv, cfg.q_dim() + cfg.kv_dim(), cfg.kv_dim());
  } else {
    L.wq = b.matrix(p + "attn_q.weight", cfg.q_dim(), cfg.dim);
    L.wk = b.matrix(p + "attn_k.weight", cfg.kv_dim(), cfg.dim);
    L.wv = b.matrix(p + "attn_v.weight", cfg.kv_dim(), cfg.dim);
  }
  L.wo = b.matrix(p + "attn_output.weight", cfg.dim, cfg.q_dim());
  L.bq = b.vec(p + "attn_q.bias", cfg.q_dim(), cfg.attn_bias);
  L.bk = b.vec(p + "attn_k.bias", cfg.kv_dim(), cfg.attn_bias);
  L.bv = b.vec(p + "attn_v.bias", cfg.kv_dim(), cfg.attn_bias);
  if (cfg.qk_norm()) {
    L.q_norm = b.vec(p + "attn_q_norm.weight", cfg.head_dim, true);
    L.k_norm = b.vec(p + "attn_k_norm.weight", cfg.head_dim, true);
  }
  if (cfg.gemma()) L.post_attn_norm = b.vec(p + "post_attention_norm.weight", cfg.dim, true);
}

void bind_ffn(Binder& b, const ModelConfig& cfg, const std::string& p, LayerWeights& L) {
  L.ffn_norm = b.vec(p + "ffn_norm.weight", cfg.dim, true);
  if (cfg.fused_qkv_ffn()) {
    const WeightMatrix up = b.matrix(p + "ffn_up.weight", 2 * int64_t{cfg.ffn_dim}, cfg.dim);
    L.w_gate = row_range(up, 0, cfg.ffn_dim);
    L.w_up = row_range(up, cfg.ffn_dim, cfg.ffn_dim);
  } else {
    L.w_gate = b.matrix(p + "ffn_gate.weight", cfg.ffn_dim, cfg.dim);
    L.w_up = b.matrix(p + "ffn_up.weight", cfg.ffn_dim, cfg.dim);
  }
  L.w_down = b.matrix(p + "ffn_down.weight", cfg.dim, cfg.ffn_dim);
  if (cfg.gemma()) L.post_ffn_norm = b.vec(p + "post_ffw_norm.weight", cfg.dim, true);
}

}  // namespace

ModelWeights bind_weights(const TensorSet& ts, ModelConfig& cfg) {
  ModelWeights w;
  Binder b(ts, w);
  const TensorRef* emb = b.get("token_embd.weight", true);
  if (emb->dims.size() != 2)
    throw Error("tensor 'token_embd.weight' must be 2-D, has shape " + dims_str(emb->dims));
  if (cfg.vocab_size == 0) cfg.vocab_size = static_cast<int>(emb->dims[1]);
  cfg.tied_output = ts.find("output.weight") == nullptr;
  cfg.draft_head = ts.find("draft_output.weight") != nullptr;
  cfg.draft_layer = ts.find("draft_output_norm.weight") != nullptr;
  if (cfg.draft_layer && !cfg.draft_head)
    throw Error("the model has a draft layer (draft_output_norm.weight) but no draft head (draft_output.weight)");
  if (cfg.draft_chain > 0 && !cfg.draft_layer) throw Error("jf.draft_chain is set but the model has no draft layer");
  cfg.attn_bias = ts.find("blk.0.attn_q.bias") != nullptr;
  config_vector(ts, "rope_freqs.weight", cfg.rope_freq_factors);
  config_vector(ts, "rope_factors_long.weight", cfg.rope_factors_long);
  config_vector(ts, "rope_factors_short.weight", cfg.rope_factors_short);
  cfg.validate();
  // The reserved f32 vector storage must not reallocate while pointers into it are handed out.
  w.f32_vectors.reserve(static_cast<size_t>(cfg.kv_layers()) * 9 + 4);

  w.tok_embd = b.matrix("token_embd.weight", cfg.vocab_size, cfg.dim);
  w.output_norm = b.vec("output_norm.weight", cfg.dim, true);
  w.output = cfg.tied_output ? w.tok_embd : b.matrix("output.weight", cfg.vocab_size, cfg.dim);
  if (cfg.draft_head) w.draft_output = b.matrix("draft_output.weight", cfg.vocab_size, cfg.dim);
  auto layer = [&](const std::string& p) {
    LayerWeights L;
    L.attn_norm = b.vec(p + "attn_norm.weight", cfg.dim, true);
    bind_attention(b, ts, cfg, p, L);
    bind_ffn(b, cfg, p, L);
    return L;
  };
  for (int l = 0; l < cfg.n_layers; l++) w.layers.push_back(layer("blk." + std::to_string(l) + "."));
  if (cfg.draft_layer) {
    w.draft_layer = layer("draft_blk.");
    w.draft_token_scale = b.vec("draft_token_scale.weight", cfg.dim, true);
    w.draft_output_norm = b.vec("draft_output_norm.weight", cfg.dim, true);
  }
  return w;
}

std::vector<std::string> tensor_names(const ModelConfig& cfg) {
  std::vector<std::string> names = {"token_embd.weight", "output_norm.weight"};
  if (!cfg.tied_output) names.push_back("output.weight");
  if (cfg.draft_head) names.push_back("draft_output.weight");
  if (!cfg.rope_freq_factors.empty()) names.push_back("rope_freqs.weight");
  if (!cfg.rope_factors_long.empty()) {
    names.push_back("rope_factors_long.weight");
    names.push_back("rope_factors_short.weight");
  }
  std::vector<const char*> per_layer = {"attn_norm"};
  if (cfg.fused_qkv_ffn()) {
    per_layer.insert(per_layer.end(), {"attn_qkv", "attn_output", "ffn_norm", "ffn_up", "ffn_down"});
  } else {
    per_layer.insert(per_layer.end(), {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"});
  }
  if (cfg.qk_norm()) per_layer.insert(per_layer.end(), {"attn_q_norm", "attn_k_norm"});
  if (cfg.gemma()) per_layer.insert(per_layer.end(), {"post_attention_norm", "post_ffw_norm"});
  auto layer = [&](const std::string& p) {
    for (const char* n : per_layer) names.push_back(p + n + ".weight");
    if (cfg.attn_bias)
      for (const char* n : {"attn_q", "attn_k", "attn_v"}) names.push_back(p + n + ".bias");
  };
  for (int l = 0; l < cfg.n_layers; l++) layer("blk." + std::to_string(l) + ".");
  if (cfg.draft_layer) {  // last, as random_tensors adds them
    layer("draft_blk.");
    names.push_back("draft_token_scale.weight");
    names.push_back("draft_output_norm.weight");
  }
  return names;
}

void pack_matrices(ModelWeights& w, const std::function<void(const WeightMatrix&)>& packed, bool build) {
  // fp32 copies cost up to 4x the bytes of F16 weights: only worth it while they stay cache-sized. Q8_0
  // and Q4_0 keep their own type at every size: their int8 kernels beat fp32 panels there too.
  constexpr size_t kMaxF32Bytes = size_t(32) << 20;
  size_t f32_total = 0;
  auto pack = [&](WeightMatrix& m) {
    const size_t f32_bytes = size_t(m.rows) * m.cols * sizeof(float);
    DType type = m.type;
    if (!dtype_is_block_quantized(m.type) && m.cols <= kPackMaxCols && f32_total + f32_bytes <= kMaxF32Bytes) {
      type = DType::F32;
      f32_total += f32_bytes;
    }
    m.packed_type = type;
    if (!build) return;
    w.packed.push_back(pack_panels(m, type));
    m.packed = w.packed.back().data();  // the inner buffer does not move when the outer vector grows
    if (packed) packed(m);
  };
  for (LayerWeights& L : w.layers)
    for (WeightMatrix* m : L.matrices()) pack(*m);
  pack(w.output);
  if (w.draft_output.data) pack(w.draft_output);
  if (w.draft_output_norm)
    for (WeightMatrix* m : w.draft_layer.matrices()) pack(*m);
}

}  // namespace jf
