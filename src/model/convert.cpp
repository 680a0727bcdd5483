#include "model/convert.h"

#include "base/error.h"
#include "kernels/parallel.h"

namespace jf {

TensorSet convert_tensors(const TensorSet& src, const WeightScheme& scheme, const ModelConfig& cfg,
                          std::vector<std::string>* notes) {
  const int n_layers = cfg.n_layers, n_gqa = cfg.gqa_ratio();
  const bool class_70b = reference_70b_class(cfg);
  TensorSet out;
  out.owned = src.owned;  // unchanged tensors keep pointing at the source buffers
  const bool has_output = src.find("output.weight") != nullptr;
  for (const auto& [name, t] : src.tensors) {
    DType target = DType::F32;
    if (t.dims.size() == 2) {
      target = scheme_tensor_type(scheme, name, t.dims[0], n_layers, has_output, n_gqa, class_70b);
      const int64_t any_width = kQ8Block * kQK;  // fits every block size
      const DType wanted = scheme_tensor_type(scheme, name, any_width, n_layers, has_output, n_gqa, class_70b);
      if (notes && target != wanted)
        notes->push_back(name + ": row length " + std::to_string(t.dims[0]) + " does not fit " + dtype_name(wanted) +
                         " blocks, " + dtype_name(target) + " instead");
    }
    if (target == t.type) {
      out.tensors[name] = t;
      continue;
    }
    const int64_t cols = t.dims[0], rows = t.n_elements() / cols;
    std::vector<uint8_t> bytes(dtype_row_bytes(target, cols) * rows);
    const DType from = t.type;  // (a lambda may not name a structured binding before C++20's P1091 in clang)
    const auto* src_bytes = static_cast<const uint8_t*>(t.data);
    parallel_for(rows, rows > 1, [&](int64_t r0, int64_t r1) {  // rows are independent: any split, same bytes
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = r0; r < r1; r++) {
        dequantize_row(from, src_bytes + r * dtype_row_bytes(from, cols), row.data(), cols);
        quantize_row(target, row.data(), bytes.data() + r * dtype_row_bytes(target, cols), cols);
      }
    });
    out.add_owned(name, target, t.dims, std::move(bytes));
  }
  return out;
}

TensorSet convert_tensors(const TensorSet& src, DType type, std::vector<std::string>* kept) {
  std::vector<std::string> notes;
  TensorSet out = convert_tensors(src, pure_scheme(type), ModelConfig{}, &notes);  // a pure scheme reads no shape
  if (kept)
    for (const std::string& n : notes) kept->push_back(n.substr(0, n.find(':')));
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
