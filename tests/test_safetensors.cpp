// safetensors reader and writer: round trips, what the format cannot hold, and every malformed file
// erroring cleanly (including randomly corrupted ones).
#include <cstring>

#include "base/error.h"
#include "base/rng.h"
#include "formats/safetensors.h"
#include "kernels/dtype.h"
#include "test_support.h"

namespace jf {
namespace {

using test::expect_error;
using test::TempDir;

std::vector<uint8_t> raw_file(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0);
  for (int i = 0; i < 8; i++) out[i] = static_cast<uint8_t>(uint64_t(header.size()) >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

void expect_parse_error(const std::vector<uint8_t>& bytes, const std::string& needle) {
  expect_error([&] { SafetensorsFile::parse(bytes.data(), bytes.size(), "bad.safetensors"); }, needle);
}

std::vector<uint8_t> sample_file() {
  static const float a[6] = {1, 2, 3, 4, 5, 6};
  static const uint16_t b[4] = {f32_to_bf16(0.5f), f32_to_bf16(-1), f32_to_bf16(2), f32_to_bf16(3)};
  static const uint16_t c[3] = {f32_to_f16(1.5f), f32_to_f16(-2), f32_to_f16(0.25f)};
  SafetensorsWriter w;
  w.set_metadata("format", "pt");
  w.add_tensor("a", DType::F32, {2, 3}, a);
  w.add_tensor("b", DType::BF16, {4}, b);
  w.add_tensor("c", DType::F16, {3, 1}, c);
  return w.bytes();
}

TEST(Safetensors, WriteReadRoundTrip) {
  TempDir d("rt");
  const std::vector<uint8_t> bytes = sample_file();
  write_file_atomic(d / "x.safetensors", bytes.data(), bytes.size());
  auto f = SafetensorsFile::open(d / "x.safetensors");
  ASSERT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  const SafetensorsTensor* a = f->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->type, DType::F32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a->ggml_dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(reinterpret_cast<const float*>(a->data)[4], 5.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % 8, 0u) << "header is padded to 8 bytes";
  float back[4];
  dequantize_row(DType::BF16, f->find("b")->data, back, 4);
  EXPECT_EQ(back[1], -1.0f);
  dequantize_row(DType::F16, f->find("c")->data, back, 3);
  EXPECT_EQ(back[2], 0.25f);
  EXPECT_EQ(f->find("c")->ggml_dims(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(f->find("nope"), nullptr);
  SafetensorsWriter w;  // the atomic path writes the same bytes
  float one = 1;
  w.add_tensor("t", DType::F32, {}, &one);
  w.write(d / "y.safetensors");
  EXPECT_EQ(SafetensorsFile::open(d / "y.safetensors")->find("t")->n_elements(), 1);
}

TEST(Safetensors, WriterRejectsWhatTheFormatCannotHold) {
  SafetensorsWriter w;
  std::vector<uint8_t> q8(34);
  expect_error([&] { w.add_tensor("q", DType::Q8_0, {32}, q8.data()); }, "cannot store q8_0");
  float x = 0;
  w.add_tensor("x", DType::F32, {1}, &x);
  expect_error([&] { w.add_tensor("x", DType::F32, {1}, &x); }, "duplicate tensor 'x'");
}

TEST(Safetensors, MalformedFilesErrorCleanly) {
  const std::vector<uint8_t> good = sample_file();
  ASSERT_NO_THROW(SafetensorsFile::parse(good.data(), good.size(), "good"));
  {  // truncated: in the data, and inside the 8-byte length
    std::vector<uint8_t> t(good.begin(), good.end() - 3);
    expect_parse_error(t, "outside the data region");
    expect_parse_error(std::vector<uint8_t>(good.begin(), good.begin() + 5), "too small");
    expect_parse_error({}, "too small");
  }
  {  // header length beyond the file
    std::vector<uint8_t> t = good;
    t[5] = 1;
    expect_parse_error(t, "exceeds the file size");
  }
  const std::string a_ok = R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})";
  expect_parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})", 24), "invalid JSON");
  expect_parse_error(raw_file("not json at all", 0), "invalid JSON");
  expect_parse_error(raw_file("[1,2]", 0), "not a JSON object");
  expect_parse_error(raw_file("{" + a_ok + "}", 20), "outside the data region");
  expect_parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,100]}})", 24), "outside the data region");
  expect_parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[8,4]}})", 24), "are reversed");
  expect_parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", 20), "needs 24");
  expect_parse_error(raw_file(R"({"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,24]}})", 24), "needs 12");
  expect_parse_error(raw_file(R"({"w8":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}})", 4), "tensor 'w8': dtype I8 is not supported");
  expect_parse_error(raw_file(R"({"f8":{"dtype":"F8_E4M3","shape":[4],"data_offsets":[0,4]}})", 4), "tensor 'f8': dtype F8_E4M3");
  expect_parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                              R"("b":{"dtype":"F32","shape":[4],"data_offsets":[16,32]}})", 32), "overlap");
  expect_parse_error(raw_file("{" + a_ok + "," + a_ok + "}", 24), "duplicate key 'a'");
  expect_parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                              R"("b":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})", 20), "unused bytes before tensor 'b'");
  expect_parse_error(raw_file("{" + a_ok + "}", 32), "unused bytes after");
  expect_parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[-2,3],"data_offsets":[0,24]}})", 24), "not a non-negative integer");
  expect_parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,24]}})", 24), "not a non-negative integer");
  expect_parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,24]}})", 24), "is too large");
  expect_parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[2,3]}})", 24), "data_offsets");
  expect_parse_error(raw_file(R"({"a":{"shape":[2,3],"data_offsets":[0,24]}})", 24), "dtype");
  expect_parse_error(raw_file(R"({"a":[1,2]})", 0), "not an object");
  expect_parse_error(raw_file("{\"x\\ny\":{\"dtype\":\"I8\",\"shape\":[],\"data_offsets\":[0,1]}}", 1), "tensor 'x?y'");
  expect_parse_error(raw_file(R"({"__metadata__":{"k":1},)" + a_ok + "}", 24), "__metadata__ value of 'k'");
  expect_parse_error(raw_file(R"({"a":{"dtype":"F32","shape":[2,3],"data_offsets":[-1,23]}})", 24), "non-negative");
}

TEST(Safetensors, RandomCorruptionNeverCrashes) {
  const std::vector<uint8_t> good = sample_file();
  Rng rng(7);
  for (int i = 0; i < 2000; i++) {
    std::vector<uint8_t> t = good;
    for (int k = 0; k < 3; k++) t[rng.below(static_cast<uint32_t>(t.size()))] = static_cast<uint8_t>(rng.next_u32());
    if (rng.below(4) == 0) t.resize(rng.below(static_cast<uint32_t>(t.size())));
    try {
      auto f = SafetensorsFile::parse(t.data(), t.size(), "fuzz");
      for (const auto& x : f->tensors()) ASSERT_LE(x.data + x.nbytes, t.data() + t.size());
    } catch (const Error&) {
    }
  }
}

}  // namespace
}  // namespace jf
