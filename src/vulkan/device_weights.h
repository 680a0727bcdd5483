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
  explicit operator bool() const { return data.buffer != VK_NULL_HANDLE; }
};

// Norms and biases: a View with a null buffer is absent.
struct DeviceLayer {
  View attn_norm, ffn_norm, post_attn_norm, post_ffn_norm, q_norm, k_norm, bq, bk, bv;
  DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
};

class DeviceWeights {
 public:
  // Throws jf::Error naming an unsupported weight type, a matrix too large for one binding, or the bytes the
  // model needs against the device memory free, before anything is uploaded.
  DeviceWeights(Context& ctx, const ModelConfig& cfg, const ModelWeights& w);

  DeviceMatrix tok_embd, output, draft_output;
  View output_norm, draft_output_norm, draft_token_scale;
  std::vector<DeviceLayer> layers;
  DeviceLayer draft_layer;
  size_t bytes() const { return bytes_; }

 private:
  DeviceMatrix matrix(const WeightMatrix& m);
  View vector(const float* v, int64_t n);
  DeviceLayer layer(const ModelConfig& cfg, const LayerWeights& L);
  void plan(const ModelConfig& cfg, const ModelWeights& w);

  Context& ctx_;
  bool planning_ = true;  // the first pass only counts bytes and checks types
  size_t bytes_ = 0, vector_bytes_ = 0;
  std::vector<Buffer> matrices_;
  std::map<const void*, DeviceMatrix> uploaded_;  // by host data (a tied output shares the embeddings)
  Buffer vectors_;
  std::vector<uint8_t> vector_host_;
};

// Whether the Vulkan backend runs matrices of this type; the list for messages.
bool supported_weight_type(DType t);
std::string supported_weight_types();

}  // namespace jf::vulkan
