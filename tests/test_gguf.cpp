// GGUF reader/writer: real files, write -> read round trip, and every malformed-file case.
#include <cmath>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "formats/gguf.h"
#include "test_support.h"

namespace jf {
namespace {

using test::temp_path;

std::vector<uint8_t> read_all(const std::string& p) {
  MappedFile m(p);
  return std::vector<uint8_t>(m.data(), m.data() + m.size());
}

// Expects parse() of `bytes` to throw jf::Error whose message contains `needle`.
void expect_parse_error(const std::vector<uint8_t>& bytes, const std::string& needle) {
  test::expect_error([&] { GgufFile::parse(bytes.data(), bytes.size(), "test.gguf"); }, needle);
}

// A small valid file with every metadata type and every tensor type, written by GgufWriter.
std::vector<uint8_t> make_sample(const std::string& path) {
  GgufWriter w;
  w.meta().set("general.architecture", GgufValue::of_string("llama"));
  w.meta().set("u32", GgufValue::of_u32(7));
  w.meta().set("i32", GgufValue::of_i32(-3));
  w.meta().set("u64", GgufValue::of_u64(1ull << 40));
  w.meta().set("f32", GgufValue::of_f32(0.5f));
  w.meta().set("flag", GgufValue::of_bool(true));
  w.meta().set("strs", GgufValue::of_strings({"a", "", "héllo"}));
  w.meta().set("floats", GgufValue::of_f32s({1.5f, -2.0f}));
  w.meta().set("ints", GgufValue::of_i32s({1, -1, 3}));
  std::vector<float> f32(64);
  for (int i = 0; i < 64; i++) f32[i] = 0.25f * i - 3;
  std::vector<uint16_t> f16(64), bf16(64);
  for (int i = 0; i < 64; i++) f16[i] = f32_to_f16(f32[i]), bf16[i] = f32_to_bf16(f32[i]);
  std::vector<BlockQ8_0> q8(2);
  quantize_row(DType::Q8_0, f32.data(), q8.data(), 64);
  std::vector<BlockQ4_0> q4(2);
  quantize_row(DType::Q4_0, f32.data(), q4.data(), 64);
  w.add_tensor_copy("t.f32", DType::F32, {16, 4}, f32.data());
  w.add_tensor_copy("t.f16", DType::F16, {64}, f16.data());
  w.add_tensor_copy("t.bf16", DType::BF16, {32, 2}, bf16.data());
  w.add_tensor_copy("t.q8", DType::Q8_0, {64, 1}, q8.data());
  w.add_tensor_copy("t.q4", DType::Q4_0, {32, 2}, q4.data());
  w.write(path);
  return read_all(path);
}

TEST(Gguf, WriteReadRoundTrip) {
  std::string p = temp_path("rt.gguf");
  make_sample(p);
  auto f = GgufFile::open(p);
  EXPECT_EQ(f->version(), 3u);
  const auto& m = f->meta();
  EXPECT_EQ(m.get_string("general.architecture"), "llama");
  EXPECT_EQ(m.get_int("u32"), 7);
  EXPECT_EQ(m.get_int("i32"), -3);
  EXPECT_EQ(m.get_int("u64"), int64_t(1) << 40);
  EXPECT_FLOAT_EQ(m.get_float("f32"), 0.5);
  EXPECT_TRUE(m.get_bool("flag", false));
  EXPECT_EQ(m.get_strings("strs"), (std::vector<std::string>{"a", "", "héllo"}));
  EXPECT_EQ(m.get_floats("floats"), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(m.get_ints("ints"), (std::vector<int32_t>{1, -1, 3}));
  ASSERT_EQ(f->tensors().size(), 5u);
  const GgufTensor* t = f->find_tensor("t.f32");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->dims, (std::vector<int64_t>{16, 4}));
  EXPECT_EQ(reinterpret_cast<const float*>(t->data)[5], 0.25f * 5 - 3);
  std::vector<float> back(64);
  dequantize_row(DType::F16, f->find_tensor("t.f16")->data, back.data(), 64);
  for (int i = 0; i < 64; i++) EXPECT_EQ(back[i], 0.25f * i - 3);  // exactly representable
  dequantize_row(DType::Q8_0, f->find_tensor("t.q8")->data, back.data(), 64);
  for (int i = 0; i < 64; i++) EXPECT_NEAR(back[i], 0.25f * i - 3, 0.13);
  EXPECT_EQ(f->find_tensor("t.q8")->nbytes, 68u);
  EXPECT_EQ(f->find_tensor("t.q4")->nbytes, 36u);
  EXPECT_EQ(f->find_tensor("t.q4")->type, DType::Q4_0);
  dequantize_row(DType::Q4_0, f->find_tensor("t.q4")->data, back.data(), 64);
  for (int i = 0; i < 64; i++) EXPECT_NEAR(back[i], 0.25f * i - 3, 1.3);  // one step of the larger block's scale

  // Rewriting what was read gives the same bytes (metadata types and order are preserved).
  GgufWriter w2;
  for (const auto& k : m.order()) w2.meta().set(k, *m.find(k));
  for (const auto& tt : f->tensors()) w2.add_tensor(tt.name, tt.type, tt.dims, tt.data);
  std::string p2 = temp_path("rt2.gguf");
  w2.write(p2);
  EXPECT_EQ(read_all(p), read_all(p2));
  std::remove(p.c_str());
  std::remove(p2.c_str());
}

// The legacy and K-quant types: GGML's type ids and block sizes, so a file written here has the tensor
// sizes and offsets the reference reader computes; the bytes come back as written.
TEST(Gguf, QuantizedTypesRoundTrip) {
  struct Case {
    DType t;
    uint32_t ggml_id;
    int64_t cols;
    size_t row_bytes;
  };
  const Case cases[] = {{DType::Q4_1, 3, 64, 40},   {DType::Q5_0, 6, 64, 44},   {DType::Q5_1, 7, 64, 48},
                        {DType::Q4_K, 12, 512, 288}, {DType::Q5_K, 13, 512, 352}, {DType::Q6_K, 14, 512, 420},
                        {DType::Q2_K, 10, 512, 168}, {DType::Q3_K, 11, 512, 220}, {DType::IQ4_NL, 20, 64, 36},
                        {DType::IQ4_XS, 23, 512, 272}};
  std::string p = temp_path("quants.gguf");
  GgufWriter w;
  w.meta().set("general.architecture", GgufValue::of_string("llama"));
  std::vector<std::vector<uint8_t>> data;
  for (const Case& c : cases) {
    DType t;
    ASSERT_TRUE(dtype_from_ggml(c.ggml_id, &t));
    EXPECT_EQ(t, c.t);
    ASSERT_EQ(dtype_row_bytes(c.t, c.cols), c.row_bytes) << dtype_name(c.t);
    std::vector<float> x(static_cast<size_t>(c.cols * 3));
    for (size_t i = 0; i < x.size(); i++) x[i] = std::sin(0.37f * float(i));
    std::vector<uint8_t> bytes(c.row_bytes * 3);
    for (int r = 0; r < 3; r++) quantize_row(c.t, &x[r * c.cols], bytes.data() + r * c.row_bytes, c.cols);
    data.push_back(bytes);
    w.add_tensor_copy("t." + dtype_name(c.t), c.t, {c.cols, 3}, bytes.data());
  }
  w.write(p);
  auto f = GgufFile::open(p);
  for (size_t i = 0; i < std::size(cases); i++) {
    const GgufTensor* t = f->find_tensor("t." + dtype_name(cases[i].t));
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->type, cases[i].t);
    ASSERT_EQ(t->nbytes, data[i].size());
    EXPECT_EQ(std::memcmp(t->data, data[i].data(), t->nbytes), 0) << dtype_name(cases[i].t);
  }
  std::remove(p.c_str());
  // A K-quant row must hold whole super-blocks of 256.
  GgufWriter bad;
  std::vector<uint8_t> z(288);
  EXPECT_THROW(bad.add_tensor_copy("t", DType::Q4_K, {128, 2}, z.data()), Error);
}

TEST(Gguf, OpensSharedModel) {
  JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
  auto f = GgufFile::open(path);
  EXPECT_EQ(f->meta().get_string("general.architecture"), "llama");
  EXPECT_EQ(f->meta().get_int("llama.embedding_length"), 64);
  EXPECT_EQ(f->tensors().size(), 48u);
  EXPECT_EQ(f->find_tensor("token_embd.weight")->dims, (std::vector<int64_t>{64, 512}));
}

TEST(Gguf, MissingFile) {
  EXPECT_THROW(GgufFile::open("/nonexistent/model.gguf"), Error);
}

struct Malformed : ::testing::Test {
  std::vector<uint8_t> good;
  std::string path = temp_path("m.gguf");
  void SetUp() override { good = make_sample(path); }
  void TearDown() override { std::remove(path.c_str()); }
  // Byte offset of the first occurrence of `s` in the file.
  size_t find(const std::string& s) {
    auto it = std::search(good.begin(), good.end(), s.begin(), s.end());
    return static_cast<size_t>(it - good.begin());
  }
  template <class T>
  void poke(std::vector<uint8_t>& b, size_t off, T v) { std::memcpy(b.data() + off, &v, sizeof(T)); }
};

TEST_F(Malformed, BadMagic) {
  auto b = good;
  b[0] = 'X';
  expect_parse_error(b, "bad magic");
}

TEST_F(Malformed, EmptyAndTiny) {
  expect_parse_error({}, "too small");
  expect_parse_error({'G', 'G', 'U', 'F'}, "truncated");
}

TEST_F(Malformed, Versions) {
  auto b = good;
  poke<uint32_t>(b, 4, 1);
  expect_parse_error(b, "version 1");
  poke<uint32_t>(b, 4, 99);
  expect_parse_error(b, "unsupported GGUF version 99");
  poke<uint32_t>(b, 4, 0x03000000);
  expect_parse_error(b, "big-endian");
}

TEST_F(Malformed, TruncatedEverywhere) {
  // Every prefix that cuts into the header or tensor data must be rejected cleanly (never crash, never
  // read out of bounds); only the alignment padding after the last tensor may be missing.
  auto f = GgufFile::parse(good.data(), good.size(), "t");
  size_t needed = 0;
  for (const auto& t : f->tensors()) needed = std::max(needed, static_cast<size_t>(t.data - good.data()) + t.nbytes);
  for (size_t n = 0; n < needed; n += (n < 600 ? 1 : 7)) {
    std::vector<uint8_t> b(good.begin(), good.begin() + n);
    EXPECT_THROW(GgufFile::parse(b.data(), b.size(), "t"), Error) << "prefix " << n;
  }
}

TEST_F(Malformed, AbsurdCounts) {
  auto b = good;
  poke<uint64_t>(b, 8, uint64_t(1) << 60);
  expect_parse_error(b, "tensor count");
  b = good;
  poke<uint64_t>(b, 16, uint64_t(1) << 60);
  expect_parse_error(b, "metadata count");
}

TEST_F(Malformed, AbsurdStringLength) {
  auto b = good;
  poke<uint64_t>(b, 24, uint64_t(1) << 50);  // length of the first key
  expect_parse_error(b, "string length");
}

TEST_F(Malformed, AbsurdArrayLength) {
  auto b = good;
  size_t key = find("strs");
  // key string, then u32 type (ARRAY), u32 elem type, u64 count
  poke<uint64_t>(b, key + 4 + 4 + 4, uint64_t(1) << 40);
  expect_parse_error(b, "array length");
}

TEST_F(Malformed, UnknownValueType) {
  auto b = good;
  poke<uint32_t>(b, find("u32") + 3, 77);
  expect_parse_error(b, "unknown value type 77");
}

TEST_F(Malformed, NestedArray) {
  auto b = good;
  poke<uint32_t>(b, find("strs") + 4 + 4, 9);
  expect_parse_error(b, "nested arrays");
}

TEST_F(Malformed, BadBool) {
  auto b = good;
  b[find("flag") + 4 + 4] = 7;
  expect_parse_error(b, "invalid bool");
}

TEST_F(Malformed, UnsupportedTensorType) {
  auto b = good;
  size_t name = find("t.f16");
  // name, u32 rank (1), u64 dim, u32 type
  poke<uint32_t>(b, name + 5 + 4 + 8, 16);  // IQ2_XXS
  expect_parse_error(b, "unsupported type iq2_xxs (id 16");
}

TEST_F(Malformed, BadRankAndDims) {
  auto b = good;
  size_t name = find("t.f16");
  poke<uint32_t>(b, name + 5, 9);
  expect_parse_error(b, "rank 9");
  b = good;
  poke<uint64_t>(b, name + 5 + 4, 0);
  expect_parse_error(b, "invalid dimension");
}

TEST_F(Malformed, Q8RowNotMultipleOfBlock) {
  auto b = good;
  size_t name = find("t.q8");
  poke<uint64_t>(b, name + 4 + 4, 48);
  expect_parse_error(b, "not a multiple of 32");
}

TEST_F(Malformed, OffsetOutOfRange) {
  auto b = good;
  size_t name = find("t.q8");
  // name, rank 2, two dims, type, offset
  poke<uint64_t>(b, name + 4 + 4 + 16 + 4, uint64_t(1) << 40);
  expect_parse_error(b, "outside the file");
  poke<uint64_t>(b, name + 4 + 4 + 16 + 4, 33);
  expect_parse_error(b, "not aligned");
}

TEST_F(Malformed, TruncatedData) {
  std::vector<uint8_t> b(good.begin(), good.end() - 40);
  expect_parse_error(b, "outside the file");
}

TEST_F(Malformed, DuplicateKeyAndTensor) {
  auto b = good;
  std::memcpy(b.data() + find("i32"), "u32", 3);
  expect_parse_error(b, "duplicate metadata key 'u32'");
  b = good;
  std::memcpy(b.data() + find("t.f32"), "t.f16", 5);
  expect_parse_error(b, "duplicate tensor 't.f16'");
}

TEST_F(Malformed, TypedLookupErrors) {
  auto f = GgufFile::parse(good.data(), good.size(), "t");
  EXPECT_THROW(f->meta().get_int("general.architecture"), Error);
  EXPECT_THROW(f->meta().get_string("u32"), Error);
  EXPECT_THROW(f->meta().get_int("missing.key"), Error);
  EXPECT_EQ(f->meta().get_int("missing.key", 5), 5);
}

}  // namespace
}  // namespace jf
