#include "model/convert.h"

#include "base/error.h"

namespace jf {

TensorSet convert_tensors(const TensorSet& src, DType type, std::vector<std::string>* kept) {
  TensorSet out;
  out.owned = src.owned;  // unchanged tensors keep pointing at the source buffers
  std::vector<float> row;
  for (const auto& [name, t] : src.tensors) {
    DType target = t.dims.size() == 2 ? type : DType::F32;
    if (dtype_is_block_quantized(target) && t.dims[0] % kQ8Block != 0) {
      target = DType::F16;
      if (kept) kept->push_back(name);
    }
    if (target == t.type) {
      out.tensors[name] = t;
      continue;
    }
    const int64_t cols = t.dims[0], rows = t.n_elements() / cols;
    std::vector<uint8_t> bytes(dtype_row_bytes(target, cols) * rows);
    row.resize(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; r++) {
      dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + r * dtype_row_bytes(t.type, cols), row.data(), cols);
      quantize_row(target, row.data(), bytes.data() + r * dtype_row_bytes(target, cols), cols);
    }
    out.add_owned(name, target, t.dims, std::move(bytes));
  }
  return out;
}

void write_model_gguf(const std::string& path, const ModelConfig& cfg, const TensorSet& tensors,
                      const GgufMetadata& extra_meta) {
  GgufWriter w;
  config_to_gguf(cfg, w.meta());
  for (const std::string& key : extra_meta.order()) w.meta().set(key, *extra_meta.find(key));
  std::vector<std::string> names = tensor_names(cfg);
  for (const std::string& name : names) {
    const TensorRef* t = tensors.find(name);
    if (!t) throw Error("cannot write model: tensor '" + name + "' is missing");
    w.add_tensor(name, t->type, t->dims, t->data);
  }
  w.write(path);
}

}  // namespace jf
