#include "vulkan/device_weights.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/error.h"

namespace jf::vulkan {

namespace {
std::string gib(uint64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return s;
}
}  // namespace

DeviceWeights::DeviceWeights(Context& ctx, const ModelConfig& cfg, const ModelWeights& w) : ctx_(ctx) {
  if (const char* f = std::getenv("JF_VULKAN_FUSE")) concatenate_ = std::strcmp(f, "0") != 0;
  plan(cfg, w);  // count and check first: nothing is uploaded for a model that cannot run
  const uint64_t free = ctx.free_device_memory();
  if (bytes_ + vector_bytes_ > free)
    throw Error("Vulkan: the model needs " + std::to_string(bytes_ + vector_bytes_) + " bytes (" + gib(bytes_ + vector_bytes_) +
                ") of device memory; " + ctx.info().name + " has " + std::to_string(free) + " (" + gib(free) + ") free");
  planning_ = false;
  vectors_ = Buffer(ctx, vector_bytes_, Buffer::Kind::Device);
  vector_host_.assign(vector_bytes_, 0);
  bytes_ = vector_bytes_ = 0;
  uploaded_.clear();
  plan(cfg, w);
  upload(ctx, vectors_, 0, vector_host_.data(), vector_host_.size());
  vector_host_ = {};
  bytes_ += vector_bytes_;
}

void DeviceWeights::plan(const ModelConfig& cfg, const ModelWeights& w) {
  tok_embd = matrix(w.tok_embd);
  output = matrix(w.output);
  output_norm = vector(w.output_norm, cfg.dim);
  layers.clear();
  for (const LayerWeights& L : w.layers) layers.push_back(layer(cfg, L));
  if (w.draft_output.data) draft_output = matrix(w.draft_output);
  if (w.draft_output_norm) {
    draft_layer = layer(cfg, w.draft_layer);
    draft_output_norm = vector(w.draft_output_norm, cfg.dim);
    draft_token_scale = vector(w.draft_token_scale, cfg.dim);
  }
}

DeviceLayer DeviceWeights::layer(const ModelConfig& cfg, const LayerWeights& L) {
  DeviceLayer d;
  const int dim = cfg.dim, hd = cfg.head_dim;
  d.attn_norm = vector(L.attn_norm, dim);
  d.ffn_norm = vector(L.ffn_norm, dim);
  d.post_attn_norm = vector(L.post_attn_norm, dim);
  d.post_ffn_norm = vector(L.post_ffn_norm, dim);
  d.q_norm = vector(L.q_norm, hd);
  d.k_norm = vector(L.k_norm, hd);
  d.bq = vector(L.bq, cfg.q_dim());
  d.bk = vector(L.bk, cfg.kv_dim());
  d.bv = vector(L.bv, cfg.kv_dim());
  // (parts join when they share a type and width, and together fit one binding)
  const auto joins = [&](const WeightMatrix& a, const WeightMatrix& b, const WeightMatrix* c = nullptr) {
    const int64_t rows = a.rows + b.rows + (c ? c->rows : 0);
    return concatenate_ && a.data && b.data && a.type == b.type && a.cols == b.cols && (!c || (c->data && c->type == a.type && c->cols == a.cols)) &&
           a.row_bytes() * static_cast<uint64_t>(rows) + 4 <= ctx_.info().max_binding_bytes;
  };
  if (joins(L.wq, L.wk)) {
    d.qkv_parts = joins(L.wq, L.wk, &L.wv) ? 3 : 2;
    d.wqkv = d.qkv_parts == 3 ? concatenated({&L.wq, &L.wk, &L.wv}) : concatenated({&L.wq, &L.wk});
    if (d.qkv_parts == 2) d.wv = matrix(L.wv);
  } else {
    d.wq = matrix(L.wq), d.wk = matrix(L.wk), d.wv = matrix(L.wv);
  }
  d.wo = matrix(L.wo);
  if (joins(L.w_gate, L.w_up)) {
    d.w_gate_up = concatenated({&L.w_gate, &L.w_up});
  } else {
    d.w_gate = matrix(L.w_gate), d.w_up = matrix(L.w_up);
  }
  d.w_down = matrix(L.w_down);
  return d;
}

// The parts' rows one after another: their bytes concatenated (rows of one type and width).
DeviceMatrix DeviceWeights::concatenated(std::initializer_list<const WeightMatrix*> parts) {
  WeightMatrix all = **parts.begin();
  all.rows = 0;
  for (const WeightMatrix* m : parts) all.rows += m->rows;
  std::vector<uint8_t> bytes;
  if (!planning_) {
    bytes.reserve(all.row_bytes() * static_cast<size_t>(all.rows));
    for (const WeightMatrix* m : parts) {
      const auto* b = static_cast<const uint8_t*>(m->data);
      bytes.insert(bytes.end(), b, b + m->row_bytes() * static_cast<size_t>(m->rows));
    }
  }
  all.data = planning_ ? (*parts.begin())->data : bytes.data();  // (planning only counts)
  DeviceMatrix d = matrix(all);
  uploaded_.erase(all.data);  // (a concatenation is found by no host address)
  return d;
}

DeviceMatrix DeviceWeights::matrix(const WeightMatrix& m) {
  auto it = uploaded_.find(m.data);
  if (it != uploaded_.end()) return it->second;
  const size_t bytes = m.row_bytes() * static_cast<size_t>(m.rows), words = (bytes + 3) / 4 * 4;
  if (words > ctx_.info().max_binding_bytes)
    throw Error("Vulkan: a " + std::to_string(m.rows) + " x " + std::to_string(m.cols) + " " + dtype_name(m.type) + " matrix is " +
                std::to_string(bytes) + " bytes, more than " + ctx_.info().name + " binds at once (" +
                std::to_string(ctx_.info().max_binding_bytes) + ")");
  DeviceMatrix d;
  d.type = m.type, d.rows = static_cast<uint32_t>(m.rows), d.cols = static_cast<uint32_t>(m.cols);
  bytes_ += bytes;
  if (!planning_) {  // padded to whole 32-bit words, which the shaders load (dequant4.glsl)
    d.id = static_cast<uint32_t>(matrices_.size());
    matrices_.emplace_back(ctx_, words, Buffer::Kind::Device);
    upload(ctx_, matrices_.back(), 0, m.data, bytes);
    d.data = matrices_.back().view(0, words);
  }
  uploaded_[m.data] = d;  // (while planning: counted once, not uploaded)
  return d;
}

View DeviceWeights::vector(const float* v, int64_t n) {
  if (!v) return View{};
  const size_t align = ctx_.offset_alignment(), at = (vector_bytes_ + align - 1) / align * align;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  vector_bytes_ = at + bytes;
  if (planning_) return View{};
  std::memcpy(vector_host_.data() + at, v, bytes);
  return vectors_.view(at, bytes);
}

}  // namespace jf::vulkan
