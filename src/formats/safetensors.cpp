// safetensors parsing (with full validation) and writing; see safetensors.h.
#include "formats/safetensors.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace jf {

using nlohmann::json;

namespace {

constexpr size_t kMaxHeader = 100u << 20;  // the format's own limit on the JSON header

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

size_t element_bytes(DType t) { return dtype_row_bytes(t, 1); }

// Names come from the file: keep error messages on one line whatever they contain.
std::string printable(const std::string& s) {
  std::string out = s.size() > 200 ? s.substr(0, 200) + "..." : s;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

// Parses JSON text, rejecting duplicate keys in any object (nlohmann would silently keep the last one).
json parse_json_strict(const std::string& text, std::string* duplicate) {
  std::vector<std::set<std::string>> keys;  // one key set per open object
  auto cb = [&](int, json::parse_event_t ev, json& v) {
    if (ev == json::parse_event_t::object_start) keys.emplace_back();
    else if (ev == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    else if (ev == json::parse_event_t::key && !keys.empty() && !keys.back().insert(v.get<std::string>()).second &&
             duplicate->empty())
      *duplicate = v.get<std::string>();
    return true;
  };
  return json::parse(text, cb);
}

// A non-negative integer that fits int64 (JSON numbers may be negative, fractional or huge).
bool get_count(const json& v, int64_t* out) {
  if (v.is_number_unsigned()) {
    if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(v.get<uint64_t>());
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    *out = v.get<int64_t>();
    return true;
  }
  return false;
}

}  // namespace

bool dtype_from_safetensors(const std::string& name, DType* out) {
  if (name == "F32") *out = DType::F32;
  else if (name == "F16") *out = DType::F16;
  else if (name == "BF16") *out = DType::BF16;
  else return false;
  return true;
}

std::string dtype_to_safetensors(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    default: throw Error("safetensors cannot store " + dtype_name(t) + " tensors (only F32, F16, BF16)");
  }
}

int64_t SafetensorsTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> SafetensorsTensor::ggml_dims() const { return std::vector<int64_t>(shape.rbegin(), shape.rend()); }

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->map_ = MappedFile(path);
  f->data_ = f->map_.data();
  f->size_ = f->map_.size();
  f->name_ = path;
  f->parse_all();
  return f;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::parse(const uint8_t* data, size_t size, const std::string& name) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->data_ = data;
  f->size_ = size;
  f->name_ = name;
  f->parse_all();
  return f;
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void SafetensorsFile::parse_all() {
  auto fail = [this](const std::string& what) { throw Error(name_ + ": " + what); };
  if (size_ < 8) fail("file too small to be safetensors (" + std::to_string(size_) + " bytes, truncated?)");
  const uint64_t n = read_u64_le(data_);
  if (n > size_ - 8)
    fail("header length " + std::to_string(n) + " exceeds the file size " + std::to_string(size_) + " (truncated or not safetensors)");
  if (n > kMaxHeader) fail("header length " + std::to_string(n) + " exceeds the 100 MB limit");
  try {
    parse_header(std::string(reinterpret_cast<const char*>(data_ + 8), n), size_ - 8 - n);
  } catch (const Error& e) {
    fail(e.what());
  }
  for (SafetensorsTensor& t : tensors_) t.data = data_ + 8 + n + t.offset;
}

namespace {

[[noreturn]] void tensor_error(const std::string& name, const std::string& what) {
  throw Error("tensor '" + printable(name) + "': " + what);
}

// The element count of a shape (row-major, as stored); every dimension a non-negative integer.
uint64_t parse_shape(const std::string& name, const json& shape, std::vector<int64_t>* out) {
  auto fail = [&name](const std::string& what) { tensor_error(name, what); };
  constexpr uint64_t kLimit = uint64_t(1) << 56;  // elements; far beyond any file, and count * 8 cannot overflow
  uint64_t count = 1;
  for (const json& d : shape) {
    int64_t v = 0;
    if (!get_count(d, &v)) fail("shape has a dimension that is not a non-negative integer");
    out->push_back(v);
    if (v != 0 && count > kLimit / static_cast<uint64_t>(v)) fail("shape is too large (more than 2^56 elements)");
    count *= static_cast<uint64_t>(v);
  }
  return count;
}

// Checks one header entry against the data region's size; `data` is set later, from `offset`.
SafetensorsTensor parse_entry(const std::string& name, const json& e, size_t data_size) {
  auto fail = [&name](const std::string& what) { tensor_error(name, what); };
  if (!e.is_object()) fail("header entry is not an object");
  if (!e.contains("dtype") || !e["dtype"].is_string()) fail("missing string field 'dtype'");
  if (!e.contains("shape") || !e["shape"].is_array()) fail("missing array field 'shape'");
  if (!e.contains("data_offsets") || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2)
    fail("missing field 'data_offsets' [begin, end]");
  SafetensorsTensor t;
  t.name = name;
  const std::string dt = e["dtype"].get<std::string>();
  if (!dtype_from_safetensors(dt, &t.type))
    fail("dtype " + printable(dt) + " is not supported (supported: F32, F16, BF16)");
  const uint64_t count = parse_shape(name, e["shape"], &t.shape);
  int64_t begin = 0, end = 0;
  if (!get_count(e["data_offsets"][0], &begin) || !get_count(e["data_offsets"][1], &end))
    fail("data_offsets must be non-negative integers");
  const std::string range = "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
  if (begin > end) fail("data_offsets " + range + " are reversed");
  if (static_cast<uint64_t>(end) > data_size)
    fail("data_offsets " + range + " outside the data region of " + std::to_string(data_size) + " bytes (truncated file?)");
  if (count * element_bytes(t.type) != static_cast<uint64_t>(end - begin))
    fail("holds " + std::to_string(end - begin) + " bytes, but dtype " + dt + " with shape " + shape_str(t.shape) +
         " needs " + std::to_string(count * element_bytes(t.type)));
  t.offset = static_cast<uint64_t>(begin);
  t.nbytes = static_cast<size_t>(end - begin);
  return t;
}

std::map<std::string, std::string> parse_metadata(const json& m) {
  if (!m.is_object()) throw Error("__metadata__ is not an object");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : m.items()) {
    if (!v.is_string()) throw Error("__metadata__ value of '" + printable(k) + "' is not a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

}  // namespace

void SafetensorsFile::parse_header(const std::string& text, size_t data_size) {
  json h;
  std::string duplicate;
  try {
    h = parse_json_strict(text, &duplicate);
  } catch (const json::exception& e) {
    throw Error(std::string("invalid JSON header: ") + e.what());
  }
  if (!duplicate.empty()) throw Error("header has duplicate key '" + printable(duplicate) + "'");
  if (!h.is_object()) throw Error("header is not a JSON object");
  for (const auto& [name, entry] : h.items()) {
    if (name == "__metadata__") metadata_ = parse_metadata(entry);
    else tensors_.push_back(parse_entry(name, entry, data_size));
  }
  // The tensors must tile the data region exactly: no overlaps (aliasing), no gaps, nothing after.
  std::stable_sort(tensors_.begin(), tensors_.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
    return a.offset != b.offset ? a.offset < b.offset : a.nbytes < b.nbytes;
  });
  uint64_t pos = 0;
  for (size_t i = 0; i < tensors_.size(); i++) {
    const SafetensorsTensor& t = tensors_[i];
    if (t.offset < pos)
      throw Error("tensors '" + printable(tensors_[i - 1].name) + "' and '" + printable(t.name) + "' overlap");
    if (t.offset > pos)
      throw Error(std::to_string(t.offset - pos) + " unused bytes before tensor '" + printable(t.name) + "'");
    pos = t.offset + t.nbytes;
  }
  if (pos != data_size) throw Error(std::to_string(data_size - pos) + " unused bytes after the last tensor");
  for (size_t i = 0; i < tensors_.size(); i++) index_[tensors_[i].name] = i;
}

// ---- writer ----

void SafetensorsWriter::add_tensor(const std::string& name, DType type, std::vector<int64_t> shape, const void* data) {
  for (const Entry& e : tensors_)
    if (e.name == name) throw Error("safetensors writer: duplicate tensor '" + name + "'");
  if (name == "__metadata__") throw Error("safetensors writer: '__metadata__' is not a valid tensor name");
  dtype_to_safetensors(type);  // rejects types the format cannot hold
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error("safetensors writer: tensor '" + name + "' has a negative dimension");
    n *= d;
  }
  tensors_.push_back(Entry{name, type, std::move(shape), data, dtype_row_bytes(type, n)});
}

std::string SafetensorsWriter::header_json() const {
  json h = json::object();
  if (!metadata_.empty()) h["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const Entry& e : tensors_) {
    h[e.name] = {{"dtype", dtype_to_safetensors(e.type)}, {"shape", e.shape}, {"data_offsets", {offset, offset + e.nbytes}}};
    offset += e.nbytes;
  }
  std::string s = h.dump();
  s.resize((s.size() + 7) / 8 * 8, ' ');  // keeps the data region 8-byte aligned
  return s;
}

std::vector<uint8_t> SafetensorsWriter::bytes() const {
  const std::string h = header_json();
  size_t total = 8 + h.size();
  for (const Entry& e : tensors_) total += e.nbytes;
  std::vector<uint8_t> out(total);
  for (int i = 0; i < 8; i++) out[i] = static_cast<uint8_t>(static_cast<uint64_t>(h.size()) >> (8 * i));
  std::memcpy(out.data() + 8, h.data(), h.size());
  size_t pos = 8 + h.size();
  for (const Entry& e : tensors_) {
    if (e.nbytes) std::memcpy(out.data() + pos, e.data, e.nbytes);
    pos += e.nbytes;
  }
  return out;
}

void SafetensorsWriter::write(const std::string& path) const {
  const std::string h = header_json();
  uint8_t len[8];
  for (int i = 0; i < 8; i++) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(h.size()) >> (8 * i));
  AtomicFileWriter out(path);
  out.write(len, 8);
  out.write(h.data(), h.size());
  for (const Entry& e : tensors_) out.write(e.data, e.nbytes);
  out.commit();
}

}  // namespace jf
