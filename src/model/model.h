// A loaded model: its config, its tensors (mapped from the file where possible) and the bound weights.
// Immutable after construction (weights() builds the kernels' panel copies once, thread-safely) and safe to
// share between threads; set_panels() is configuration for before the first forward.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/weights.h"

namespace jf {

class GgufFile;
class MappedFile;

class Model {
 public:
  // Binds and validates the weights; `storage` keeps the memory the tensors point into alive.
  Model(ModelConfig cfg, TensorSet tensors, std::string format, std::vector<std::shared_ptr<const void>> storage = {});
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelConfig& config() const { return cfg_; }
  // The bound weights; the first call also builds their panel copies for the SIMD kernels (see
  // pack_matrices), so commands that only read tensors (convert, inspect, train) never pay for them.
  const ModelWeights& weights() const;
  // Whether weights() builds the panel copies (default on). Only effective before the first weights() call.
  void set_panels(bool on) { panels_ = on; }
  const TensorSet& tensors() const { return tensors_; }
  const std::string& format() const { return format_; }  // "gguf", "llama2c", "safetensors", "memory"
  size_t weight_bytes() const;                           // bytes of all tensors (what one forward streams)
  // A read-only file mapping (kept alive by `storage`) that tensors point into: once a matrix has its panel
  // copy, weights() gives back the mapped original's pages, so resident memory holds one copy, not two.
  void add_file_mapping(const MappedFile& f) { mappings_.push_back(&f); }
  // Adds draft tensors (a draft file's, model/draft_file.h) and their chain depth, and binds them; `storage`
  // keeps their memory alive. Only before the first weights() call; throws jf::Error naming a tensor whose
  // shape does not fit.
  void attach_draft(TensorSet draft, int chain, std::shared_ptr<const void> storage);
  // Where its draft tensors came from: "" (none, or in the model's own file), or the draft file's path.
  const std::string& draft_source() const { return draft_source_; }
  void set_draft_source(std::string path) { draft_source_ = std::move(path); }

 private:
  std::vector<std::shared_ptr<const void>> storage_;
  std::vector<const MappedFile*> mappings_;
  ModelConfig cfg_;
  TensorSet tensors_;
  mutable ModelWeights weights_;
  mutable std::once_flag packed_;
  bool panels_ = true;
  mutable bool bound_ = false;  // weights() was called: the bound weights are in use
  std::string format_;
  std::string draft_source_;
};

// GGUF: the file stays mapped for the model's lifetime.
std::unique_ptr<Model> model_from_gguf(std::shared_ptr<const GgufFile> file);
// llama2.c checkpoint (run.c format: 7-int header, fp32 weights, shared classifier when vocab_size > 0).
std::unique_ptr<Model> model_from_llama2c(const std::string& path);

}  // namespace jf
