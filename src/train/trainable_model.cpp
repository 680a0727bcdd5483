// TrainableModel's parameters: their layout under GGUF names, initialisation, and conversion from / to tensors.
// (The forward and backward passes are in trainable_pass.cpp.)
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/rng.h"
#include "train/trainable_model.h"

namespace jf {

TrainSequence TrainSequence::causal(std::vector<int32_t> tokens) {
  TrainSequence s;
  const int n = static_cast<int>(tokens.size());
  s.tokens = std::move(tokens);
  s.positions.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; i++) s.positions[i] = i;
  s.mask.make_causal(n);
  return s;
}

int64_t TrainableModel::add_tensor(const std::string& name, std::vector<int64_t> dims) {
  int64_t size = 1;
  for (int64_t d : dims) size *= d;
  const int64_t offset = layout_.empty() ? 0 : layout_.back().offset + layout_.back().size;
  layout_.push_back(Entry{name, std::move(dims), offset, size});
  return offset;
}

TrainableModel::TrainableModel(const ModelConfig& cfg) : cfg_(cfg) {
  cfg_.validate();
  if (cfg_.arch != Arch::Llama && cfg_.arch != Arch::Qwen2)
    throw Error("training supports the llama and qwen2 architectures, not " + arch_name(cfg_.arch));
  const int64_t C = cfg_.dim, Q = cfg_.q_dim(), KV = cfg_.kv_dim(), F = cfg_.ffn_dim, V = cfg_.vocab_size;
  // Same order as tensor_names(cfg) (weights.cpp); matrices are {cols, rows} (GGML order).
  tok_embd_ = add_tensor("token_embd.weight", {C, V});
  output_norm_ = add_tensor("output_norm.weight", {C});
  output_ = cfg_.tied_output ? tok_embd_ : add_tensor("output.weight", {C, V});
  if (cfg_.draft_head) draft_output_ = add_tensor("draft_output.weight", {C, V});
  auto add_layer = [&](const std::string& pre) {
    Layer L;
    L.attn_norm = add_tensor(pre + "attn_norm.weight", {C});
    L.wq = add_tensor(pre + "attn_q.weight", {C, Q});
    L.wk = add_tensor(pre + "attn_k.weight", {C, KV});
    L.wv = add_tensor(pre + "attn_v.weight", {C, KV});
    L.wo = add_tensor(pre + "attn_output.weight", {Q, C});
    L.ffn_norm = add_tensor(pre + "ffn_norm.weight", {C});
    L.w_gate = add_tensor(pre + "ffn_gate.weight", {C, F});
    L.w_up = add_tensor(pre + "ffn_up.weight", {C, F});
    L.w_down = add_tensor(pre + "ffn_down.weight", {F, C});
    if (cfg_.attn_bias) {
      L.bq = add_tensor(pre + "attn_q.bias", {Q});
      L.bk = add_tensor(pre + "attn_k.bias", {KV});
      L.bv = add_tensor(pre + "attn_v.bias", {KV});
    }
    layers_.push_back(L);
  };
  for (int l = 0; l < cfg_.n_layers; l++) add_layer("blk." + std::to_string(l) + ".");
  if (cfg_.draft_layer) {  // layers_[n_layers]
    JF_CHECK(cfg_.draft_head, "a draft layer needs a draft head");
    add_layer("draft_blk.");
    draft_token_scale_ = add_tensor("draft_token_scale.weight", {C});
    draft_output_norm_ = add_tensor("draft_output_norm.weight", {C});
  }
  values_.assign(static_cast<size_t>(layout_.back().offset + layout_.back().size), 0.0f);
  grads_.assign(values_.size(), 0.0f);
  for (const Entry& e : layout_)
    if (starts_at_one(e.name)) std::fill_n(values_.data() + e.offset, e.size, 1.0f);
}

bool TrainableModel::starts_at_one(const std::string& name) {
  return name.ends_with("norm.weight") || name == "draft_token_scale.weight";
}

void TrainableModel::set_draft_chain(int depth) {
  JF_CHECK(depth >= 0, "draft chain depth must be >= 0");
  if (depth > 0 && !cfg_.draft_layer) throw Error("a draft chain needs a draft layer (--draft-layer)");
  if (depth > kMaxDraftChain) throw Error("--draft-chain " + std::to_string(depth) + " is more than " + std::to_string(kMaxDraftChain));
  cfg_.draft_chain = depth;
}

TrainableModel TrainableModel::from_tensors(const ModelConfig& cfg_in, const TensorSet& ts, bool with_draft_head,
                                            bool with_draft_layer) {
  ModelConfig cfg = cfg_in;
  bind_weights(ts, cfg);  // validates every tensor's presence and shape; completes cfg
  cfg.draft_head = cfg.draft_head || with_draft_head || with_draft_layer;
  cfg.draft_layer = cfg.draft_layer || with_draft_layer;
  TrainableModel m(cfg);
  for (const Entry& e : m.layout_) {
    float* dst = m.values_.data() + e.offset;
    const TensorRef* t = ts.find(e.name);
    if (!t) t = ts.find(draft_start_tensor(cfg, e.name));
    if (!t) {  // a new draft layer's residual projections start at zero (the layer starts as the identity)
      JF_CHECK(e.name.starts_with("draft_"), "tensor " + e.name + " checked by bind_weights");
      std::fill_n(dst, e.size, starts_at_one(e.name) ? 1.0f : 0.0f);
      continue;
    }
    JF_CHECK(t->n_elements() == e.size, "tensor " + e.name + " checked by bind_weights");
    dequantize_row(t->type, t->data, dst, e.size);
  }
  return m;
}

std::string TrainableModel::draft_start_tensor(const ModelConfig& cfg, const std::string& name) {
  if (name == "draft_output.weight") return cfg.tied_output ? "token_embd.weight" : "output.weight";
  if (name == "draft_output_norm.weight") return "output_norm.weight";
  if (!name.starts_with("draft_blk.") || name.ends_with("attn_output.weight") || name.ends_with("ffn_down.weight"))
    return {};
  return "blk." + std::to_string(cfg.n_layers - 1) + "." + name.substr(std::string("draft_blk.").size());
}

void TrainableModel::init_random(uint64_t seed) {
  Rng rng(seed);
  const float std_dev = 0.02f, residual_std = 0.02f / std::sqrt(2.0f * static_cast<float>(cfg_.n_layers));
  for (const Entry& e : layout_) {
    float* v = values_.data() + e.offset;
    if (starts_at_one(e.name)) {
      std::fill_n(v, e.size, 1.0f);
    } else if (e.name.ends_with(".bias")) {
      std::fill_n(v, e.size, 0.0f);
    } else {
      const bool residual = e.name.ends_with("attn_output.weight") || e.name.ends_with("ffn_down.weight");
      const float s = residual ? residual_std : std_dev;
      for (int64_t i = 0; i < e.size; i++) v[i] = s * rng.normal();
    }
  }
}

std::vector<TrainableModel::Param> TrainableModel::params() {
  std::vector<Param> out;
  out.reserve(layout_.size());
  for (const Entry& e : layout_)
    out.push_back(Param{e.name, e.dims, values_.data() + e.offset, grads_.data() + e.offset, e.size});
  return out;
}

void TrainableModel::zero_grad() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

TensorSet TrainableModel::to_tensor_set(DType type, const std::string& only) const {
  TensorSet ts;
  for (const Entry& e : layout_) {
    if (!only.empty() && e.name != only) continue;
    const float* src = values_.data() + e.offset;
    if (e.dims.size() == 1) {  // norms and biases stay fp32, as the loaders expect
      std::vector<uint8_t> bytes(static_cast<size_t>(e.size) * sizeof(float));
      std::memcpy(bytes.data(), src, bytes.size());
      ts.add_owned(e.name, DType::F32, e.dims, std::move(bytes));
      continue;
    }
    const int64_t cols = e.dims[0], rows = e.dims[1];
    if (cols % dtype_block_size(type) != 0)
      throw Error("tensor '" + e.name + "' has " + std::to_string(cols) + " columns, not a multiple of the " +
                  dtype_name(type) + " block size");
    const size_t row_bytes = dtype_row_bytes(type, cols);
    std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; r++) quantize_row(type, src + r * cols, bytes.data() + r * row_bytes, cols);
    ts.add_owned(e.name, type, e.dims, std::move(bytes));
  }
  if (!cfg_.rope_freq_factors.empty() && only.empty()) {
    const auto& f = cfg_.rope_freq_factors;
    std::vector<uint8_t> bytes(f.size() * sizeof(float));
    std::memcpy(bytes.data(), f.data(), bytes.size());
    ts.add_owned("rope_freqs.weight", DType::F32, {static_cast<int64_t>(f.size())}, std::move(bytes));
  }
  return ts;
}

}  // namespace jf
