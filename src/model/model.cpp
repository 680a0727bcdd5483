#include "model/model.h"

#include <cstring>

#include "base/error.h"
#include "base/mapped_file.h"
#include "formats/gguf.h"
#include "kernels/cpu.h"
#include "model/draft_file.h"

namespace jf {

Model::Model(ModelConfig cfg, TensorSet tensors, std::string format, std::vector<std::shared_ptr<const void>> storage)
    : storage_(std::move(storage)), cfg_(std::move(cfg)), tensors_(std::move(tensors)), format_(std::move(format)) {
  weights_ = bind_weights(tensors_, cfg_);
}

const ModelWeights& Model::weights() const {
  std::call_once(packed_, [this] {
    bound_ = true;
    if (!panels_) return;
    if (active_isa() == Isa::Scalar) return pack_matrices(weights_, {}, false);
    pack_matrices(weights_, [this](const WeightMatrix& m) {
      if (m.data == weights_.tok_embd.data) return;  // a tied output: the rows are still looked up
      for (const MappedFile* f : mappings_) f->drop_pages(m.data, m.row_bytes() * m.rows);
    });
  });
  return weights_;
}

void Model::attach_draft(TensorSet draft, int chain, std::shared_ptr<const void> storage) {
  JF_CHECK(!bound_, "attach_draft after the weights are in use");
  ModelConfig cfg = cfg_;
  TensorSet ts = tensors_;
  for (auto& [name, t] : draft.tensors) ts.tensors[name] = t;
  ts.owned.insert(ts.owned.end(), draft.owned.begin(), draft.owned.end());
  cfg.draft_chain = chain;
  ModelWeights w = bind_weights(ts, cfg);  // throws before anything changes
  cfg_ = std::move(cfg), tensors_ = std::move(ts), weights_ = std::move(w);
  storage_.push_back(std::move(storage));
}

size_t Model::weight_bytes() const {
  size_t n = 0;
  for (const auto& [name, t] : tensors_.tensors) n += t.nbytes();
  return n;
}

std::unique_ptr<Model> model_from_gguf(std::shared_ptr<const GgufFile> file) {
  if (is_draft_gguf(file->meta()))
    throw Error(file->path() + " is a draft file: give its model with -m and the draft file with --draft");
  if (file->tensors().empty())
    throw Error(file->path() + ": the file has no tensors (a vocabulary-only GGUF?), so it is not a model");
  try {
    ModelConfig cfg = config_from_gguf(file->meta());
    if (cfg.vocab_size == 0 && file->meta().has("tokenizer.ggml.tokens"))
      cfg.vocab_size = static_cast<int>(file->meta().get_strings("tokenizer.ggml.tokens").size());
    TensorSet ts;
    for (const GgufTensor& t : file->tensors()) ts.tensors[t.name] = TensorRef{t.type, t.dims, t.data};
    auto model = std::make_unique<Model>(std::move(cfg), std::move(ts), "gguf", std::vector<std::shared_ptr<const void>>{file});
    model->add_file_mapping(file->mapping());
    return model;
  } catch (const Error& e) {
    throw Error(file->path() + ": " + e.what());
  }
}

std::unique_ptr<Model> model_from_llama2c(const std::string& path) {
  auto file = std::make_shared<MappedFile>(path);
  constexpr size_t kHeader = 7 * sizeof(int32_t);
  if (file->size() < kHeader) throw Error(path + ": too small to be a llama2.c checkpoint");
  int32_t h[7];
  std::memcpy(h, file->data(), kHeader);
  ModelConfig c;
  c.arch = Arch::Llama;
  c.name = "llama2.c";
  c.dim = h[0];
  c.ffn_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  const bool shared = h[5] > 0;
  c.vocab_size = h[5] < 0 ? -h[5] : h[5];
  c.context_length = h[6];
  c.head_dim = c.n_heads > 0 ? c.dim / c.n_heads : 0;
  c.rope_dim = c.head_dim;
  try {
    c.validate();
    if (c.head_dim * c.n_heads != c.dim) throw Error("dim is not a multiple of n_heads");
  } catch (const Error& e) {
    throw Error(path + ": not a valid llama2.c checkpoint (" + e.what() + ")");
  }
  const int64_t L = c.n_layers, D = c.dim, KV = c.kv_dim(), F = c.ffn_dim, V = c.vocab_size;
  const int64_t floats = V * D + L * D + L * D * D + 2 * L * D * KV + L * D * D + L * D + 3 * L * D * F + D +
                         int64_t(c.context_length) * c.head_dim + (shared ? 0 : V * D);
  const uint64_t expected = kHeader + static_cast<uint64_t>(floats) * 4;
  if (file->size() != expected)
    throw Error(path + ": llama2.c checkpoint should be " + std::to_string(expected) + " bytes for its header, file has " +
                std::to_string(file->size()) + " (truncated or not a llama2.c file)");

  TensorSet ts;
  const float* p = reinterpret_cast<const float*>(file->data() + kHeader);
  auto take = [&p](int64_t n) {
    const float* r = p;
    p += n;
    return r;
  };
  auto put = [&ts](const std::string& name, std::vector<int64_t> dims, const float* data) {
    ts.tensors[name] = TensorRef{DType::F32, std::move(dims), data};
  };
  auto per_layer = [&](const std::string& suffix, std::vector<int64_t> dims, int64_t n) {
    const float* base = take(L * n);
    for (int64_t l = 0; l < L; l++) put("blk." + std::to_string(l) + "." + suffix, dims, base + l * n);
  };
  put("token_embd.weight", {D, V}, take(V * D));
  per_layer("attn_norm.weight", {D}, D);
  per_layer("attn_q.weight", {D, D}, D * D);
  per_layer("attn_k.weight", {D, KV}, D * KV);
  per_layer("attn_v.weight", {D, KV}, D * KV);
  per_layer("attn_output.weight", {D, D}, D * D);
  per_layer("ffn_norm.weight", {D}, D);
  per_layer("ffn_gate.weight", {D, F}, D * F);
  per_layer("ffn_down.weight", {F, D}, D * F);
  per_layer("ffn_up.weight", {D, F}, D * F);
  put("output_norm.weight", {D}, take(D));
  take(int64_t(c.context_length) * c.head_dim);  // precomputed RoPE tables (unused: angles are computed)
  if (!shared) put("output.weight", {D, V}, take(V * D));
  auto model = std::make_unique<Model>(std::move(c), std::move(ts), "llama2c", std::vector<std::shared_ptr<const void>>{file});
  model->add_file_mapping(*file);
  return model;
}

}  // namespace jf
