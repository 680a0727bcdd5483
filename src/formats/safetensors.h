// safetensors reader and writer (Hugging Face weight files). The reader maps the file and validates the
// header, every dtype, shape and offset against the file before use, so a malformed file yields jf::Error.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "kernels/dtype.h"

namespace jf {

struct SafetensorsTensor {
  std::string name;
  DType type = DType::F32;
  std::vector<int64_t> shape;     // as stored: row-major, shape[0] outermost
  uint64_t offset = 0;            // start within the data region (after the header)
  const uint8_t* data = nullptr;  // points into the mapped file
  size_t nbytes = 0;

  int64_t n_elements() const;
  std::vector<int64_t> ggml_dims() const;  // shape reversed: dims[0] contiguous, as jf's TensorRef wants
};

// Immutable after open(): safe to share between threads; tensors point into the mapping it owns.
class SafetensorsFile {
 public:
  // Opens and validates; throws jf::Error("<path>: <problem>").
  static std::unique_ptr<SafetensorsFile> open(const std::string& path);
  // Parses an in-memory image (tests, fuzzing); the bytes must outlive the object.
  static std::unique_ptr<SafetensorsFile> parse(const uint8_t* data, size_t size, const std::string& name);

  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }  // in data-offset order
  const SafetensorsTensor* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }  // "__metadata__"
  const std::string& path() const { return name_; }
  const MappedFile& mapping() const { return map_; }

 private:
  SafetensorsFile() = default;
  void parse_all();
  void parse_header(const std::string& json_text, size_t data_size);
  MappedFile map_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// "F32", "F16", "BF16"; false for any other name (Q8_0 has no safetensors dtype).
bool dtype_from_safetensors(const std::string& name, DType* out);
std::string dtype_to_safetensors(DType t);  // throws jf::Error for types safetensors cannot hold

// Builds a safetensors file from caller memory (kept alive until write()); written atomically with the
// header padded to 8 bytes, tensors in the order added.
class SafetensorsWriter {
 public:
  void set_metadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
  // `shape` row-major as stored (reverse GGML dims first). `data` holds exactly the tensor's bytes.
  void add_tensor(const std::string& name, DType type, std::vector<int64_t> shape, const void* data);
  void write(const std::string& path) const;
  std::vector<uint8_t> bytes() const;  // the whole file image (tests build malformed variants from it)

 private:
  struct Entry {
    std::string name;
    DType type;
    std::vector<int64_t> shape;
    const void* data;
    size_t nbytes;
  };
  std::string header_json() const;
  std::map<std::string, std::string> metadata_;
  std::vector<Entry> tensors_;
};

}  // namespace jf
