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

ModelWeights bind_weights(const TensorSet& ts, ModelConfig& cfg) {
  ModelWeights w;
  Binder b(ts, w);
  const TensorRef* emb = b.get("token_embd.weight", true);
  if (emb->dims.size() != 2)
    throw Error("tensor 'token_embd.weight' must be 2-D, has shape " + dims_str(emb->dims));
  if (cfg.vocab_size == 0) cfg.vocab_size = static_cast<int>(emb->dims[1]);
  cfg.tied_output = ts.find("output.weight") == nullptr;
  cfg.attn_bias = ts.find("blk.0.attn_q.bias") != nullptr;
  if (const TensorRef* rf = ts.find("rope_freqs.weight")) {
    cfg.rope_freq_factors.resize(static_cast<size_t>(rf->n_elements()));
    if (dtype_is_block_quantized(rf->type)) throw Error("tensor 'rope_freqs.weight' must not be quantized");
    dequantize_row(rf->type, rf->data, cfg.rope_freq_factors.data(), rf->n_elements());
  }
  cfg.validate();
  // The reserved f32 vector storage must not reallocate while pointers into it are handed out.
  w.f32_vectors.reserve(static_cast<size_t>(cfg.n_layers) * 5 + 2);

  w.tok_embd = b.matrix("token_embd.weight", cfg.vocab_size, cfg.dim);
  w.output_norm = b.vec("output_norm.weight", cfg.dim, true);
  w.output = cfg.tied_output ? w.tok_embd : b.matrix("output.weight", cfg.vocab_size, cfg.dim);
  for (int l = 0; l < cfg.n_layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights L;
    L.attn_norm = b.vec(p + "attn_norm.weight", cfg.dim, true);
    L.wq = b.matrix(p + "attn_q.weight", cfg.q_dim(), cfg.dim);
    L.wk = b.matrix(p + "attn_k.weight", cfg.kv_dim(), cfg.dim);
    L.wv = b.matrix(p + "attn_v.weight", cfg.kv_dim(), cfg.dim);
    L.wo = b.matrix(p + "attn_output.weight", cfg.dim, cfg.q_dim());
    L.bq = b.vec(p + "attn_q.bias", cfg.q_dim(), cfg.attn_bias);
    L.bk = b.vec(p + "attn_k.bias", cfg.kv_dim(), cfg.attn_bias);
    L.bv = b.vec(p + "attn_v.bias", cfg.kv_dim(), cfg.attn_bias);
    L.ffn_norm = b.vec(p + "ffn_norm.weight", cfg.dim, true);
    L.w_gate = b.matrix(p + "ffn_gate.weight", cfg.ffn_dim, cfg.dim);
    L.w_up = b.matrix(p + "ffn_up.weight", cfg.ffn_dim, cfg.dim);
    L.w_down = b.matrix(p + "ffn_down.weight", cfg.dim, cfg.ffn_dim);
    w.layers.push_back(L);
  }
  return w;
}

std::vector<std::string> tensor_names(const ModelConfig& cfg) {
  std::vector<std::string> names = {"token_embd.weight", "output_norm.weight"};
  if (!cfg.tied_output) names.push_back("output.weight");
  if (!cfg.rope_freq_factors.empty()) names.push_back("rope_freqs.weight");
  for (int l = 0; l < cfg.n_layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* n : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
                          "ffn_up", "ffn_down"})
      names.push_back(p + n + ".weight");
    if (cfg.attn_bias)
      for (const char* n : {"attn_q", "attn_k", "attn_v"}) names.push_back(p + n + ".bias");
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
}

}  // namespace jf
