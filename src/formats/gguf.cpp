#include "formats/gguf.h"

#include <cstring>
#include <iterator>
#include <limits>

#include "base/error.h"

namespace jf {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr int kMaxDims = 4;
constexpr uint64_t kMaxStringBytes = 1u << 30;

size_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
    case GgufType::U16: case GgufType::I16: return 2;
    case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
    case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
    default: return 0;
  }
}

bool is_int_type(GgufType t) {
  switch (t) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16:
    case GgufType::U32: case GgufType::I32: case GgufType::U64: case GgufType::I64: case GgufType::BOOL:
      return true;
    default: return false;
  }
}

bool is_float_type(GgufType t) { return t == GgufType::F32 || t == GgufType::F64; }

// GGML's names for its tensor types, so an unsupported one is named in the error (K-quants are the usual).
std::string ggml_type_name(uint32_t id) {
  static const char* const kNames[] = {"f32",  "f16",  "q4_0", "q4_1", "q4_2", "q4_3", "q5_0", "q5_1",
                                       "q8_0", "q8_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "q8_K",
                                       "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s",
                                       "iq4_xs", "i8", "i16", "i32", "i64", "f64", "iq1_m", "bf16"};
  return id < std::size(kNames) ? kNames[id] : "unknown";
}

// Bounds-checked little-endian reader over the file image.
class Cursor {
 public:
  Cursor(const uint8_t* d, size_t n, const std::string& name) : d_(d), n_(n), name_(name) {}
  size_t pos() const { return pos_; }
  size_t left() const { return n_ - pos_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(name_ + ": " + what + " (at byte " + std::to_string(pos_) + ")");
  }
  void need(uint64_t k, const char* what) const {
    if (k > left()) fail(std::string("truncated file while reading ") + what);
  }
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, d_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str(const char* what) {
    uint64_t len = get<uint64_t>(what);
    if (len > kMaxStringBytes) fail(std::string("absurd string length ") + std::to_string(len) + " in " + what);
    need(len, what);
    std::string s(reinterpret_cast<const char*>(d_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t pos_ = 0;
  const std::string& name_;
};

int64_t read_int_scalar(Cursor& c, GgufType t, uint64_t* u_out) {
  *u_out = 0;
  switch (t) {
    case GgufType::U8: return c.get<uint8_t>("u8");
    case GgufType::I8: return c.get<int8_t>("i8");
    case GgufType::U16: return c.get<uint16_t>("u16");
    case GgufType::I16: return c.get<int16_t>("i16");
    case GgufType::U32: return c.get<uint32_t>("u32");
    case GgufType::I32: return c.get<int32_t>("i32");
    case GgufType::I64: return c.get<int64_t>("i64");
    case GgufType::BOOL: {
      uint8_t b = c.get<uint8_t>("bool");
      if (b > 1) c.fail("invalid bool value " + std::to_string(b));
      return b;
    }
    case GgufType::U64: {
      uint64_t v = c.get<uint64_t>("u64");
      *u_out = v;
      return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? -1 : static_cast<int64_t>(v);
    }
    default: c.fail("not an integer type");
  }
}

GgufType read_type(Cursor& c, const std::string& key) {
  uint32_t t = c.get<uint32_t>("value type");
  if (t > static_cast<uint32_t>(GgufType::F64)) c.fail("unknown value type " + std::to_string(t) + " for key '" + key + "'");
  return static_cast<GgufType>(t);
}

GgufValue read_value(Cursor& c, GgufType t, const std::string& key) {
  GgufValue v;
  v.type = t;
  if (t == GgufType::STRING) {
    v.s = c.str("string value");
  } else if (is_int_type(t)) {
    v.i = read_int_scalar(c, t, &v.u);
    if (t != GgufType::U64) v.u = static_cast<uint64_t>(v.i);
  } else if (t == GgufType::F32) {
    v.f = c.get<float>("f32");
  } else if (t == GgufType::F64) {
    v.f = c.get<double>("f64");
  } else if (t == GgufType::ARRAY) {
    v.elem = read_type(c, key);
    uint64_t n = c.get<uint64_t>("array length");
    if (v.elem == GgufType::ARRAY) c.fail("nested arrays are not supported (key '" + key + "')");
    // Each element takes at least its scalar size (strings: 8-byte length), so the count is bounded by the bytes left.
    size_t min_elem = v.elem == GgufType::STRING ? 8 : scalar_size(v.elem);
    if (n > c.left() / min_elem) c.fail("array length " + std::to_string(n) + " exceeds file size (key '" + key + "')");
    if (v.elem == GgufType::STRING) {
      v.strs.reserve(n);
      for (uint64_t k = 0; k < n; k++) v.strs.push_back(c.str("string array element"));
    } else if (is_float_type(v.elem)) {
      v.floats.resize(n);
      for (uint64_t k = 0; k < n; k++) v.floats[k] = v.elem == GgufType::F32 ? c.get<float>("f32") : c.get<double>("f64");
    } else {
      v.ints.resize(n);
      uint64_t u;
      for (uint64_t k = 0; k < n; k++) v.ints[k] = read_int_scalar(c, v.elem, &u);
    }
  }
  return v;
}

}  // namespace

std::string gguf_type_name(GgufType t) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64"};
  auto i = static_cast<uint32_t>(t);
  return i <= 12 ? names[i] : "?";
}

// ---------------------------------------------------------------- GgufValue

size_t GgufValue::array_size() const {
  if (!is_array()) return 0;
  if (elem == GgufType::STRING) return strs.size();
  if (is_float_type(elem)) return floats.size();
  return ints.size();
}

GgufValue GgufValue::of_u32(uint32_t x) { GgufValue v; v.type = GgufType::U32; v.i = x; v.u = x; return v; }
GgufValue GgufValue::of_i32(int32_t x) { GgufValue v; v.type = GgufType::I32; v.i = x; v.u = static_cast<uint64_t>(x); return v; }
GgufValue GgufValue::of_u64(uint64_t x) {
  GgufValue v; v.type = GgufType::U64; v.u = x;
  v.i = x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? -1 : static_cast<int64_t>(x);
  return v;
}
GgufValue GgufValue::of_f32(float x) { GgufValue v; v.type = GgufType::F32; v.f = x; return v; }
GgufValue GgufValue::of_bool(bool x) { GgufValue v; v.type = GgufType::BOOL; v.i = x; v.u = x; return v; }
GgufValue GgufValue::of_string(std::string x) { GgufValue v; v.type = GgufType::STRING; v.s = std::move(x); return v; }
GgufValue GgufValue::of_strings(std::vector<std::string> x) {
  GgufValue v; v.type = GgufType::ARRAY; v.elem = GgufType::STRING; v.strs = std::move(x); return v;
}
GgufValue GgufValue::of_f32s(const std::vector<float>& x) {
  GgufValue v; v.type = GgufType::ARRAY; v.elem = GgufType::F32; v.floats.assign(x.begin(), x.end()); return v;
}
GgufValue GgufValue::of_i32s(const std::vector<int32_t>& x) {
  GgufValue v; v.type = GgufType::ARRAY; v.elem = GgufType::I32; v.ints.assign(x.begin(), x.end()); return v;
}

// ---------------------------------------------------------------- GgufMetadata

const GgufValue* GgufMetadata::find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

void GgufMetadata::set(const std::string& key, GgufValue v) {
  if (!kv_.count(key)) order_.push_back(key);
  kv_[key] = std::move(v);
}

const GgufValue& GgufMetadata::require(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) throw Error("missing metadata key '" + key + "'");
  return *v;
}

int64_t GgufMetadata::get_int(const std::string& key) const {
  const GgufValue& v = require(key);
  if (!is_int_type(v.type)) throw Error("metadata key '" + key + "' has type " + gguf_type_name(v.type) + ", expected an integer");
  if (v.type == GgufType::U64 && v.i < 0) throw Error("metadata key '" + key + "' is out of range");
  return v.i;
}

int64_t GgufMetadata::get_int(const std::string& key, int64_t dflt) const { return has(key) ? get_int(key) : dflt; }

double GgufMetadata::get_float(const std::string& key) const {
  const GgufValue& v = require(key);
  if (is_float_type(v.type)) return v.f;
  if (is_int_type(v.type) && v.type != GgufType::BOOL) return static_cast<double>(v.i);
  throw Error("metadata key '" + key + "' has type " + gguf_type_name(v.type) + ", expected a number");
}

double GgufMetadata::get_float(const std::string& key, double dflt) const { return has(key) ? get_float(key) : dflt; }

bool GgufMetadata::get_bool(const std::string& key, bool dflt) const {
  const GgufValue* v = find(key);
  if (!v) return dflt;
  if (!is_int_type(v->type)) throw Error("metadata key '" + key + "' has type " + gguf_type_name(v->type) + ", expected bool");
  return v->i != 0;
}

std::string GgufMetadata::get_string(const std::string& key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufType::STRING) throw Error("metadata key '" + key + "' has type " + gguf_type_name(v.type) + ", expected string");
  return v.s;
}

std::string GgufMetadata::get_string(const std::string& key, const std::string& dflt) const {
  return has(key) ? get_string(key) : dflt;
}

const std::vector<std::string>& GgufMetadata::get_strings(const std::string& key) const {
  const GgufValue& v = require(key);
  if (!v.is_array() || v.elem != GgufType::STRING) throw Error("metadata key '" + key + "' is not a string array");
  return v.strs;
}

std::vector<float> GgufMetadata::get_floats(const std::string& key) const {
  const GgufValue& v = require(key);
  if (!v.is_array() || !is_float_type(v.elem)) throw Error("metadata key '" + key + "' is not a float array");
  return std::vector<float>(v.floats.begin(), v.floats.end());
}

std::vector<int32_t> GgufMetadata::get_ints(const std::string& key) const {
  const GgufValue& v = require(key);
  if (!v.is_array() || !is_int_type(v.elem)) throw Error("metadata key '" + key + "' is not an integer array");
  std::vector<int32_t> out(v.ints.size());
  for (size_t k = 0; k < out.size(); k++) out[k] = static_cast<int32_t>(v.ints[k]);
  return out;
}

// ---------------------------------------------------------------- tensors

int64_t GgufTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

size_t gguf_tensor_bytes(DType type, const std::vector<int64_t>& dims, const std::string& name) {
  if (dims.empty() || dims.size() > kMaxDims) throw Error("tensor '" + name + "' has " + std::to_string(dims.size()) + " dimensions (1-4 supported)");
  // Bound every product by 2^62 bytes so nothing overflows.
  const uint64_t limit = uint64_t(1) << 62;
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d <= 0) throw Error("tensor '" + name + "' has a non-positive dimension " + std::to_string(d));
    if (static_cast<uint64_t>(d) > limit / n) throw Error("tensor '" + name + "' is absurdly large");
    n *= static_cast<uint64_t>(d);
  }
  int bs = dtype_block_size(type);
  if (dims[0] % bs != 0)
    throw Error("tensor '" + name + "' of type " + dtype_name(type) + " has row length " + std::to_string(dims[0]) +
                ", not a multiple of " + std::to_string(bs));
  uint64_t bytes = n / bs;
  if (bytes > limit / dtype_block_bytes(type)) throw Error("tensor '" + name + "' is absurdly large");
  return static_cast<size_t>(bytes * dtype_block_bytes(type));
}

// ---------------------------------------------------------------- GgufFile

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->map_ = MappedFile(path);
  f->data_ = f->map_.data();
  f->size_ = f->map_.size();
  f->name_ = path;
  f->parse_all();
  return f;
}

std::unique_ptr<GgufFile> GgufFile::parse(const uint8_t* data, size_t size, const std::string& name) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->data_ = data;
  f->size_ = size;
  f->name_ = name;
  f->parse_all();
  return f;
}

const GgufTensor* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::parse_all() {
  Cursor c(data_, size_, name_);
  if (size_ < 4) c.fail("file too small to be GGUF");
  uint32_t magic = c.get<uint32_t>("magic");
  if (magic != kMagic) c.fail("not a GGUF file (bad magic)");
  version_ = c.get<uint32_t>("version");
  if (version_ == 1) c.fail("GGUF version 1 is not supported (only 2 and 3)");
  if (version_ == 0x02000000 || version_ == 0x03000000) c.fail("big-endian GGUF is not supported");
  if (version_ != 2 && version_ != 3) c.fail("unsupported GGUF version " + std::to_string(version_));
  uint64_t n_tensors = c.get<uint64_t>("tensor count");
  uint64_t n_kv = c.get<uint64_t>("metadata count");
  // A key/value pair takes at least 8 + 4 + 1 bytes and a tensor record at least 8 + 4 + 8 + 4 + 8.
  if (n_kv > c.left() / 13) c.fail("metadata count " + std::to_string(n_kv) + " exceeds file size");
  if (n_tensors > c.left() / 32) c.fail("tensor count " + std::to_string(n_tensors) + " exceeds file size");

  for (uint64_t k = 0; k < n_kv; k++) {
    std::string key = c.str("metadata key");
    if (meta_.has(key)) c.fail("duplicate metadata key '" + key + "'");
    GgufType t = read_type(c, key);
    meta_.set(key, read_value(c, t, key));
  }

  if (const GgufValue* a = meta_.find("general.alignment")) {
    if (!is_int_type(a->type) || a->i <= 0 || (a->i & (a->i - 1)) != 0 || a->i > (1 << 20))
      c.fail("general.alignment must be a power of two");
    alignment_ = static_cast<size_t>(a->i);
  }

  tensors_.reserve(n_tensors);
  for (uint64_t k = 0; k < n_tensors; k++) {
    GgufTensor t;
    t.name = c.str("tensor name");
    if (tensor_index_.count(t.name)) c.fail("duplicate tensor '" + t.name + "'");
    uint32_t nd = c.get<uint32_t>("tensor rank");
    if (nd == 0 || nd > kMaxDims) c.fail("tensor '" + t.name + "' has rank " + std::to_string(nd) + " (1-4 supported)");
    for (uint32_t d = 0; d < nd; d++) {
      uint64_t dim = c.get<uint64_t>("tensor dimension");
      if (dim == 0 || dim > (uint64_t(1) << 40)) c.fail("tensor '" + t.name + "' has invalid dimension " + std::to_string(dim));
      t.dims.push_back(static_cast<int64_t>(dim));
    }
    uint32_t type_id = c.get<uint32_t>("tensor type");
    if (!dtype_from_ggml(type_id, &t.type))
      c.fail("tensor '" + t.name + "' has unsupported type " + ggml_type_name(type_id) + " (id " + std::to_string(type_id) +
             "; supported: f32, f16, bf16, q8_0, q4_0)");
    t.offset = c.get<uint64_t>("tensor offset");
    try {
      t.nbytes = gguf_tensor_bytes(t.type, t.dims, t.name);
    } catch (const Error& e) {
      c.fail(e.what());
    }
    if (t.offset % alignment_ != 0) c.fail("tensor '" + t.name + "' offset is not aligned to " + std::to_string(alignment_));
    tensor_index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }

  size_t data_start = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
  if (tensors_.empty()) return;
  if (data_start > size_) c.fail("truncated file: tensor data section missing");
  size_t data_size = size_ - data_start;
  for (GgufTensor& t : tensors_) {
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      throw Error(name_ + ": tensor '" + t.name + "' data [" + std::to_string(t.offset) + ", +" + std::to_string(t.nbytes) +
                  ") lies outside the file (truncated or corrupt)");
    t.data = data_ + data_start + t.offset;
  }
}

// ---------------------------------------------------------------- GgufWriter

void GgufWriter::add_tensor(const std::string& name, DType type, std::vector<int64_t> dims, const void* data) {
  for (const Entry& e : tensors_)
    if (e.name == name) throw Error("duplicate tensor '" + name + "'");
  size_t nb = gguf_tensor_bytes(type, dims, name);
  tensors_.push_back(Entry{name, type, std::move(dims), data, nullptr, nb});
}

void GgufWriter::add_tensor_copy(const std::string& name, DType type, std::vector<int64_t> dims, const void* data) {
  size_t nb = gguf_tensor_bytes(type, dims, name);
  auto owned = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + nb);
  add_tensor(name, type, std::move(dims), owned->data());
  tensors_.back().owned = owned;
}

namespace {

class ByteSink {
 public:
  std::vector<uint8_t> buf;
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    buf.insert(buf.end(), p, p + sizeof(T));
  }
  void str(const std::string& s) {
    put<uint64_t>(s.size());
    buf.insert(buf.end(), s.begin(), s.end());
  }
};

void put_int(ByteSink& o, GgufType t, int64_t i, uint64_t u) {
  switch (t) {
    case GgufType::U8: case GgufType::BOOL: o.put<uint8_t>(static_cast<uint8_t>(i)); break;
    case GgufType::I8: o.put<int8_t>(static_cast<int8_t>(i)); break;
    case GgufType::U16: o.put<uint16_t>(static_cast<uint16_t>(i)); break;
    case GgufType::I16: o.put<int16_t>(static_cast<int16_t>(i)); break;
    case GgufType::U32: o.put<uint32_t>(static_cast<uint32_t>(i)); break;
    case GgufType::I32: o.put<int32_t>(static_cast<int32_t>(i)); break;
    case GgufType::U64: o.put<uint64_t>(u); break;
    case GgufType::I64: o.put<int64_t>(i); break;
    default: JF_CHECK(false, "not an integer type");
  }
}

void put_value(ByteSink& o, const GgufValue& v) {
  o.put<uint32_t>(static_cast<uint32_t>(v.type));
  if (v.type == GgufType::STRING) {
    o.str(v.s);
  } else if (v.type == GgufType::F32) {
    o.put<float>(static_cast<float>(v.f));
  } else if (v.type == GgufType::F64) {
    o.put<double>(v.f);
  } else if (v.type == GgufType::ARRAY) {
    o.put<uint32_t>(static_cast<uint32_t>(v.elem));
    o.put<uint64_t>(v.array_size());
    if (v.elem == GgufType::STRING) {
      for (const auto& s : v.strs) o.str(s);
    } else if (v.elem == GgufType::F32) {
      for (double f : v.floats) o.put<float>(static_cast<float>(f));
    } else if (v.elem == GgufType::F64) {
      for (double f : v.floats) o.put<double>(f);
    } else {
      for (int64_t x : v.ints) put_int(o, v.elem, x, static_cast<uint64_t>(x));
    }
  } else {
    put_int(o, v.type, v.i, v.u);
  }
}

}  // namespace

void GgufWriter::write(const std::string& path) const {
  size_t align = 32;
  if (const GgufValue* a = meta_.find("general.alignment")) align = static_cast<size_t>(a->i);
  ByteSink h;
  h.put<uint32_t>(kMagic);
  h.put<uint32_t>(3);
  h.put<uint64_t>(tensors_.size());
  h.put<uint64_t>(meta_.order().size());
  for (const std::string& key : meta_.order()) {
    h.str(key);
    put_value(h, *meta_.find(key));
  }
  uint64_t offset = 0;
  std::vector<uint64_t> offsets;
  for (const Entry& e : tensors_) {
    h.str(e.name);
    h.put<uint32_t>(static_cast<uint32_t>(e.dims.size()));
    for (int64_t d : e.dims) h.put<uint64_t>(static_cast<uint64_t>(d));
    h.put<uint32_t>(static_cast<uint32_t>(e.type));
    h.put<uint64_t>(offset);
    offsets.push_back(offset);
    offset += (e.nbytes + align - 1) / align * align;
  }
  h.buf.resize((h.buf.size() + align - 1) / align * align, 0);

  AtomicFileWriter out(path);
  out.write(h.buf.data(), h.buf.size());
  const std::vector<uint8_t> zeros(align, 0);
  for (const Entry& e : tensors_) {
    out.write(e.data, e.nbytes);
    size_t pad = (align - e.nbytes % align) % align;
    out.write(zeros.data(), pad);
  }
  out.commit();
}

}  // namespace jf
