// GGUF (v2, v3) reader and writer. The reader maps the file and validates every count, length and offset
// against the file size before using it, so a malformed file yields jf::Error, never an out-of-bounds read.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "kernels/dtype.h"

namespace jf {

enum class GgufType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
std::string gguf_type_name(GgufType t);

// One metadata value. Scalars keep their exact GGUF type (so a read -> write round trip is exact);
// numeric values are also available widened. Arrays are typed and flat (arrays of arrays are rejected).
struct GgufValue {
  GgufType type = GgufType::U32;
  GgufType elem = GgufType::U8;  // element type when type == ARRAY
  int64_t i = 0;                 // integer and bool scalars
  uint64_t u = 0;                // U64 scalars (also mirrored in i when it fits)
  double f = 0;                  // F32/F64 scalars
  std::string s;                 // STRING
  std::vector<int64_t> ints;     // integer/bool arrays
  std::vector<double> floats;    // float arrays
  std::vector<std::string> strs; // string arrays

  bool is_array() const { return type == GgufType::ARRAY; }
  size_t array_size() const;

  static GgufValue of_u32(uint32_t v);
  static GgufValue of_i32(int32_t v);
  static GgufValue of_u64(uint64_t v);
  static GgufValue of_f32(float v);
  static GgufValue of_bool(bool v);
  static GgufValue of_string(std::string v);
  static GgufValue of_strings(std::vector<std::string> v);
  static GgufValue of_f32s(const std::vector<float>& v);
  static GgufValue of_i32s(const std::vector<int32_t>& v);
};

struct GgufTensor {
  std::string name;
  std::vector<int64_t> dims;  // GGML order: dims[0] is the contiguous (innermost) dimension
  DType type = DType::F32;
  uint64_t offset = 0;        // relative to the data section
  size_t nbytes = 0;
  const uint8_t* data = nullptr;  // points into the mapped file

  int64_t n_elements() const;
};

// Metadata with typed lookups; every mismatch names the key.
class GgufMetadata {
 public:
  bool has(const std::string& key) const { return kv_.count(key) != 0; }
  const GgufValue* find(const std::string& key) const;
  void set(const std::string& key, GgufValue v);
  void erase(const std::string& key) { kv_.erase(key); }
  const std::map<std::string, GgufValue>& all() const { return kv_; }
  const std::vector<std::string>& order() const { return order_; }  // insertion (= file) order

  int64_t get_int(const std::string& key) const;  // any integer type
  int64_t get_int(const std::string& key, int64_t dflt) const;
  double get_float(const std::string& key) const;  // any float or integer type
  double get_float(const std::string& key, double dflt) const;
  bool get_bool(const std::string& key, bool dflt) const;
  std::string get_string(const std::string& key) const;
  std::string get_string(const std::string& key, const std::string& dflt) const;
  const std::vector<std::string>& get_strings(const std::string& key) const;
  std::vector<float> get_floats(const std::string& key) const;
  std::vector<int32_t> get_ints(const std::string& key) const;

 private:
  const GgufValue& require(const std::string& key) const;
  std::map<std::string, GgufValue> kv_;
  std::vector<std::string> order_;
};

class GgufFile {
 public:
  // Opens and validates; throws jf::Error("<path>: <problem>").
  static std::unique_ptr<GgufFile> open(const std::string& path);
  // Parses an in-memory image (the fuzzer and tests use this; the bytes must outlive the object).
  static std::unique_ptr<GgufFile> parse(const uint8_t* data, size_t size, const std::string& name);

  uint32_t version() const { return version_; }
  size_t alignment() const { return alignment_; }
  const GgufMetadata& meta() const { return meta_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find_tensor(const std::string& name) const;
  const std::string& path() const { return name_; }
  size_t file_size() const { return size_; }
  const MappedFile& mapping() const { return map_; }

 private:
  GgufFile() = default;
  void parse_all();
  MappedFile map_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  uint32_t version_ = 0;
  size_t alignment_ = 32;
  GgufMetadata meta_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> tensor_index_;
};

// Builds a GGUF v3 file. Tensor bytes are taken from caller memory (kept alive until write()) or from
// a callback that produces them; the file is written atomically.
class GgufWriter {
 public:
  GgufMetadata& meta() { return meta_; }
  // dims in GGML order (dims[0] contiguous). `data` must hold exactly the tensor's bytes.
  void add_tensor(const std::string& name, DType type, std::vector<int64_t> dims, const void* data);
  // Owned bytes (copied in).
  void add_tensor_copy(const std::string& name, DType type, std::vector<int64_t> dims, const void* data);
  void write(const std::string& path) const;

 private:
  struct Entry {
    std::string name;
    DType type;
    std::vector<int64_t> dims;
    const void* data;
    std::shared_ptr<std::vector<uint8_t>> owned;
    size_t nbytes;
  };
  GgufMetadata meta_;
  std::vector<Entry> tensors_;
};

// Size in bytes of a tensor of `type` with `dims`; throws jf::Error if the shape is invalid for the type.
size_t gguf_tensor_bytes(DType type, const std::vector<int64_t>& dims, const std::string& name);

}  // namespace jf
