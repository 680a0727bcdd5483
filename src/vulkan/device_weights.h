// A model's weights in device memory, uploaded once as stored in the file (GGML block layouts, which the
// shaders read directly), norms and biases as fp32 in one shared buffer.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"
#include "vulkan/buffer.h"

namespace jf::vulkan {

struct DeviceMatrix {
  View data;
  DType type = DType::F32;
  uint32_t rows = 0, cols = 0;
  uint32_t id = 0;  // its index among the uploaded matrices (a tied output shares the embeddings')
  explicit operator bool() const { return data.buffer != VK_NULL_HANDLE; }
};

// Norms and biases: a View with a null buffer is absent. Matrices that read the same input and share a weight
// type and width are uploaded concatenated, as one product (a dispatch, not two or three): wqkv holds wq and wk,
// and wv too where its type matches (qkv_parts 3; Q4_K_M files often make v Q6_K); w_gate_up holds gate and up.
// The parts concatenated are left without data.
struct DeviceLayer {
  View attn_norm, ffn_norm, post_attn_norm, post_ffn_norm, q_norm, k_norm, bq, bk, bv;
  DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
  DeviceMatrix wqkv, w_gate_up;
  int qkv_parts = 0;  // 0 (not concatenated), 2 or 3
};

class DeviceWeights {
 public:
  // Throws jf::Error naming a matrix too large for one binding, or the bytes the
  // model needs against the device memory free, before anything is uploaded.
  DeviceWeights(Context& ctx, const ModelConfig& cfg, const ModelWeights& w);

  DeviceMatrix tok_embd, output, draft_output;
  View output_norm, draft_output_norm, draft_token_scale;
  std::vector<DeviceLayer> layers;
  DeviceLayer draft_layer;
  size_t bytes() const { return bytes_; }
  size_t matrix_count() const { return matrices_.size(); }

 private:
  DeviceMatrix matrix(const WeightMatrix& m);
  DeviceMatrix concatenated(std::initializer_list<const WeightMatrix*> parts);
  View vector(const float* v, int64_t n);
  DeviceLayer layer(const ModelConfig& cfg, const LayerWeights& L);
  void plan(const ModelConfig& cfg, const ModelWeights& w);

  Context& ctx_;
  bool planning_ = true;  // the first pass only counts bytes and checks types
  bool concatenate_ = true;  // JF_VULKAN_FUSE=0: every matrix apart (to compare)
  size_t bytes_ = 0, vector_bytes_ = 0;
  std::vector<Buffer> matrices_;
  std::map<const void*, DeviceMatrix> uploaded_;  // by host data (a tied output shares the embeddings)
  Buffer vectors_;
  std::vector<uint8_t> vector_host_;
};

}  // namespace jf::vulkan
