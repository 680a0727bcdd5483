// The forward pass: llama2.c and GGUF files agree, and a token's logits are bit-identical however it is
// batched (alone, in chunks, inside a tree with other tokens, next to other sequences, any thread count).
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/rng.h"
#include "formats/gguf.h"
#include "kernels/cpu.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "model/convert.h"
#include "model/model.h"
#include "model/quant_mix.h"
#include "model/random_model.h"
#include "model/transformer.h"
#include "model_helpers.h"
#include "test_support.h"

namespace jf {
namespace {

using test::Logits;
using test::random_tokens;
using test::stepwise;

void expect_rows_equal(const float* got, const std::vector<float>& want, const std::string& what) {
  for (size_t i = 0; i < want.size(); i++)
    ASSERT_EQ(got[i], want[i]) << what << " (vocab index " << i << ")";
}

// Chunked causal prefill with logits for every row.
void check_chunks(const Model& m, const std::vector<int32_t>& toks, const Logits& ref, int chunk) {
  Transformer tf(m.config(), m.weights());
  KvCache cache(m.config(), 256);
  SequenceInput in;
  for (size_t b = 0; b < toks.size(); b += chunk) {
    size_t e = std::min(toks.size(), b + chunk);
    std::vector<int32_t> rows;
    for (size_t i = 0; i < e - b; i++) rows.push_back(static_cast<int32_t>(i));
    in.set_causal(&cache, std::vector<int32_t>(toks.begin() + b, toks.begin() + e), rows);
    const std::vector<float> l_rows = test::all_logits(tf.forward(in));
    const float* l = l_rows.data();
    for (size_t i = b; i < e; i++)
      expect_rows_equal(l + (i - b) * m.config().vocab_size, ref[i], "chunk " + std::to_string(chunk) + " token " + std::to_string(i));
  }
}

// Real tokens interleaved with distractor tokens they cannot see; afterwards keep() moves the real
// tokens' cache entries into place and decoding continues, as a tree-verifying decoder does.
void check_tree(const Model& m, const std::vector<int32_t>& toks, const Logits& ref) {
  Transformer tf(m.config(), m.weights());
  KvCache cache(m.config(), 256);
  const int V = m.config().vocab_size;
  Rng rng(99);
  SequenceInput in;
  size_t done = 0;
  while (done < toks.size()) {
    const int past = cache.size();
    const int n_real = static_cast<int>(std::min<size_t>(3, toks.size() - done));
    // layout: junk, real0, junk, real1, junk, real2 ...
    in.cache = &cache;
    in.tokens.clear();
    in.positions.clear();
    std::vector<int32_t> real_idx;
    for (int i = 0; i < n_real; i++) {
      in.tokens.push_back(static_cast<int32_t>(rng.below(V)));
      in.positions.push_back(past + i);
      real_idx.push_back(static_cast<int32_t>(in.tokens.size()));
      in.tokens.push_back(toks[done + i]);
      in.positions.push_back(past + i);
    }
    const int M = static_cast<int>(in.tokens.size());
    in.mask.reset(M);
    for (int i = 0; i < M; i++) in.mask.set(i, i);
    for (int a = 0; a < n_real; a++)
      for (int b = 0; b <= a; b++) in.mask.set(real_idx[a], real_idx[b]);
    for (int i = 0; i < M; i++)  // junk sees the real tokens before it (like a sibling branch would)
      if (i % 2 == 0)
        for (int b = 0; b < n_real && real_idx[b] < i; b++) in.mask.set(i, real_idx[b]);
    in.logit_rows = real_idx;
    const std::vector<float> l_rows = test::all_logits(tf.forward(in));
    const float* l = l_rows.data();
    for (int i = 0; i < n_real; i++) expect_rows_equal(l + i * V, ref[done + i], "tree token " + std::to_string(done + i));
    std::vector<int32_t> slots;
    for (int32_t r : real_idx) slots.push_back(past + r);
    cache.keep(past, slots);
    ASSERT_EQ(cache.size(), past + n_real);
    done += n_real;
  }
}

// Two sequences with different histories decoded in the same forward.
void check_two_sequences(const Model& m, const std::vector<int32_t>& toks, const Logits& ref) {
  Transformer tf(m.config(), m.weights());
  KvCache a(m.config(), 256), b(m.config(), 256);
  const int V = m.config().vocab_size;
  auto other = random_tokens(static_cast<int>(toks.size()), V, 4242);
  Logits ref_b = stepwise(m, other);
  SequenceInput sa, sb;
  for (size_t i = 0; i + 1 < toks.size(); i += 2) {
    sa.set_causal(&a, std::vector<int32_t>{toks[i], toks[i + 1]}, std::vector<int32_t>{0, 1});
    sb.set_causal(&b, std::vector<int32_t>{other[i], other[i + 1]}, std::vector<int32_t>{1, 0});  // rows in a different order
    SequenceInput* both[] = {&sb, &sa};
    const std::vector<float> l_rows = test::all_logits(tf.forward(both));
    const float* l = l_rows.data();
    expect_rows_equal(l + 0 * V, ref_b[i + 1], "seq b");
    expect_rows_equal(l + 1 * V, ref_b[i], "seq b");
    expect_rows_equal(l + 2 * V, ref[i], "seq a");
    expect_rows_equal(l + 3 * V, ref[i + 1], "seq a");
  }
}

struct ModelCase {
  std::string label;
  std::function<std::unique_ptr<Model>()> make;
};

ModelConfig qwen_like() {
  ModelConfig c = preset_config("tiny");
  c.arch = Arch::Qwen2;
  c.n_heads = 8, c.n_kv_heads = 2, c.head_dim = 8, c.rope_dim = 8;
  c.rope_style = RopeStyle::Neox;
  c.rope_theta = 1000000.0f;
  c.attn_bias = true, c.tied_output = true;
  return c;
}

ModelConfig llama_mha_untied() {
  ModelConfig c = preset_config("tiny");
  c.n_heads = 2, c.n_kv_heads = 2, c.head_dim = 32, c.rope_dim = 32;
  c.dim = 64, c.n_layers = 3;
  c.rope_freq_factors = std::vector<float>(16, 1.0f);
  for (int i = 0; i < 16; i++) c.rope_freq_factors[i] = 1.0f + 0.25f * i;
  return c;
}

// Feed-forward wider than kPackMaxCols: ffn_down keeps its own type's panels (F16, BF16) where the other
// matrices get fp32 ones.
ModelConfig llama_wide_ffn() {
  ModelConfig c = preset_config("tiny");
  c.ffn_dim = 576;
  return c;
}

// Rows of 256 and 512: every K-quant fits, so each matrix keeps the type asked for.
ModelConfig llama_256() {
  ModelConfig c = preset_config("tiny");
  c.dim = 256, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64, c.rope_dim = 64, c.ffn_dim = 512;
  return c;
}

// A model of llama_256's shape in one of GGML's file types (its per-tensor mix).
std::unique_ptr<Model> file_type_model(const std::string& scheme_name, uint64_t seed) {
  WeightScheme scheme;
  EXPECT_TRUE(weight_scheme_from_name(scheme_name, &scheme));
  return std::make_unique<Model>(llama_256(), random_tensors(llama_256(), scheme, seed), "memory");
}

class BatchInvariance : public ::testing::TestWithParam<std::tuple<std::string, DType, Isa>> {};

TEST_P(BatchInvariance, LogitsBitIdenticalAcrossBatchShapes) {
  auto [which, type, isa] = GetParam();
  if (!isa_supported(isa)) GTEST_SKIP() << "SKIPPED: CPU lacks " << isa_name(isa);
  Isa saved = active_isa();
  set_active_isa(isa);
  std::unique_ptr<Model> m;
  if (which == "stories260K") {
    JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
    auto f = std::shared_ptr<const GgufFile>(GgufFile::open(path));
    auto base = model_from_gguf(f);
    m = std::make_unique<Model>(base->config(), convert_tensors(base->tensors(), type), "memory",
                                std::vector<std::shared_ptr<const void>>{f});
  } else if (which == "llama-gqa") {
    m = random_model(preset_config("tiny"), type, 1);
  } else if (which == "llama-256") {
    m = random_model(llama_256(), type, 4);
  } else if (which == "llama-mha-untied-ropefreqs") {
    m = random_model(llama_mha_untied(), type, 2);
  } else if (which.ends_with("-tiny")) {  // the other architectures' test shapes
    m = random_model(preset_config(which), type, 6);
  } else {
    m = random_model(qwen_like(), type, 3);
  }
  auto toks = random_tokens(24, m->config().vocab_size, 17);
  set_num_threads(1);
  Logits ref = stepwise(*m, toks);
  for (int threads : {1, 2, 3})
    for (MultiRowSchedule s : {MultiRowSchedule::Serial, MultiRowSchedule::SplitRows, MultiRowSchedule::SplitMatrices,
                               MultiRowSchedule::Auto}) {
      set_num_threads(threads);
      set_multirow_schedule(s);
      SCOPED_TRACE("threads=" + std::to_string(threads) + " schedule=" + std::to_string(static_cast<int>(s)));
      for (int chunk : {2, 5, 24}) check_chunks(*m, toks, ref, chunk);
      check_tree(*m, toks, ref);
      check_two_sequences(*m, toks, ref);
    }
  set_multirow_schedule(MultiRowSchedule::Auto);
  set_num_threads(0);
  set_active_isa(saved);
}

INSTANTIATE_TEST_SUITE_P(
    Models, BatchInvariance,
    ::testing::Combine(::testing::Values("stories260K", "llama-gqa", "llama-mha-untied-ropefreqs", "qwen2-bias-tied",
                                         "qwen3-tiny", "phi3-tiny", "gemma2-tiny",
                                         "gemma3-tiny"),
                       ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0),
                       ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx2Vnni, Isa::Avx512)),
    [](const auto& info) {
      std::string s = std::get<0>(info.param) + "_" + dtype_name(std::get<1>(info.param)) + "_" + isa_name(std::get<2>(info.param));
      for (char& c : s)
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return s;
    });

// The legacy and K-quant types on a shape where each keeps its own type (int8 tiles with mins and Q6_K's
// half blocks).
INSTANTIATE_TEST_SUITE_P(
    Quants, BatchInvariance,
    ::testing::Combine(::testing::Values("llama-256"),
                       ::testing::Values(DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                                         DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS),
                       ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx2Vnni, Isa::Avx512)),
    [](const auto& info) {
      std::string s = std::get<0>(info.param) + "_" + dtype_name(std::get<1>(info.param)) + "_" + isa_name(std::get<2>(info.param));
      for (char& c : s)
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return s;
    });

TEST(KvCache, TruncateThenReforwardEqualsFresh) {
  auto m = random_model(qwen_like(), DType::F16, 5);
  auto toks = random_tokens(20, m->config().vocab_size, 8);
  Logits ref = stepwise(*m, toks);
  Transformer tf(m->config(), m->weights());
  KvCache cache(m->config(), 64);
  SequenceInput in;
  in.set_causal(&cache, std::vector<int32_t>(toks.begin(), toks.begin() + 10), SequenceInput::Logits::None);
  tf.forward(in);
  in.set_causal(&cache, random_tokens(7, m->config().vocab_size, 9), SequenceInput::Logits::Last);  // a rejected draft
  tf.forward(in);
  cache.truncate(10);
  in.set_causal(&cache, std::vector<int32_t>(toks.begin() + 10, toks.end()), SequenceInput::Logits::None);
  for (int i = 0; i < 10; i++) in.logit_rows.push_back(i);
  const std::vector<float> l_rows = test::all_logits(tf.forward(in));
  const float* l = l_rows.data();
  for (int i = 0; i < 10; i++) expect_rows_equal(l + i * m->config().vocab_size, ref[10 + i], "after truncate");
}

// An F16 cache rounds every key and value to fp16: the logits stay within a small tolerance of the F32
// cache's (stated here: 2% of the logit range), and differ from them (the cache really is fp16).
TEST(KvCache, F16CacheStaysCloseToF32) {
  auto m = random_model(qwen_like(), DType::F32, 6);
  const int V = m->config().vocab_size;
  auto toks = random_tokens(40, V, 4);
  Transformer tf(m->config(), m->weights());
  std::vector<float> logits[2];
  for (int t = 0; t < 2; t++) {
    KvCache cache(m->config(), 64, t == 0 ? DType::F32 : DType::F16);
    SequenceInput in;
    in.set_causal(&cache, toks, SequenceInput::Logits::All);
    const std::vector<float> l_rows = test::all_logits(tf.forward(in));
    const float* l = l_rows.data();
    logits[t].assign(l, l + toks.size() * V);
  }
  float range = 0, worst = 0;
  for (size_t i = 0; i < logits[0].size(); i++) {
    range = std::max(range, std::fabs(logits[0][i]));
    worst = std::max(worst, std::fabs(logits[0][i] - logits[1][i]));
  }
  EXPECT_GT(worst, 0.0f);
  EXPECT_LT(worst, 0.02f * range);
}

// Keys live transposed in blocks of kKeyBlock slots: store, keep (moves across block boundaries) and
// copy_prefix must carry every element of every head to the right slot.
TEST(KvCache, KeepAndCopyMoveEveryKeyAndValueElement) {
  ModelConfig cfg = preset_config("tiny");
  cfg.n_layers = 2, cfg.n_heads = 4, cfg.n_kv_heads = 2, cfg.head_dim = 8;
  const int kvd = cfg.kv_dim(), cap = 70;
  for (DType type : {DType::F32, DType::F16}) {
    SCOPED_TRACE(dtype_name(type));
    KvCache cache(cfg, cap, type);
    // Distinct in both types: integers below 2048 are exact in fp16.
    auto value_of = [&](int l, int slot, int i, int kv) { return float((l * 70 + slot) * 8 + i / 2) * (kv ? -1 : 1); };
    auto stored = [&](float x) { return type == DType::F32 ? x : f16_to_f32(f32_to_f16(x)); };
    cache.append(60);
    std::vector<float> row(kvd);
    for (int l = 0; l < cfg.n_layers; l++)
      for (int s = 0; s < 60; s++) {
        for (int i = 0; i < kvd; i++) row[i] = value_of(l, s, i, 0) + (i % 2) * 0.25f;
        cache.store_key(l, s, row.data());
        for (int i = 0; i < kvd; i++) row[i] = value_of(l, s, i, 1) - (i % 2) * 0.25f;
        cache.store_value(l, s, row.data());
      }
    auto key_of = [&](int l, int s, int i) { return stored(value_of(l, s, i, 0) + (i % 2) * 0.25f); };
    auto val_of = [&](int l, int s, int i) { return stored(value_of(l, s, i, 1) - (i % 2) * 0.25f); };
    // The layout the attention kernels read.
    for (int h = 0; h < cfg.n_kv_heads; h++)
      for (int i = 0; i < cfg.head_dim; i++) {
        const int e = h * cfg.head_dim + i;
        const size_t k = key_offset(37, i, cfg.head_dim), v = 37 * cfg.head_dim + i;
        ASSERT_EQ(type == DType::F32 ? cache.keys<float>(1, h)[k] : f16_to_f32(cache.keys<uint16_t>(1, h)[k]),
                  key_of(1, 37, e));
        ASSERT_EQ(type == DType::F32 ? cache.values<float>(1, h)[v] : f16_to_f32(cache.values<uint16_t>(1, h)[v]),
                  val_of(1, 37, e));
      }
    const std::vector<int32_t> keep = {12, 15, 16, 31, 33, 47, 48, 59};  // into slots 10..17
    cache.keep(10, keep);
    ASSERT_EQ(cache.size(), 18);
    KvCache copy(cfg, cap, type);
    copy.copy_prefix(cache, 18);
    for (const KvCache* c : {&cache, &copy})
      for (int l = 0; l < cfg.n_layers; l++)
        for (int s = 0; s < 18; s++) {
          const int from = s < 10 ? s : keep[s - 10];
          for (int i = 0; i < kvd; i++) {
            ASSERT_EQ(c->key(l, s, i), key_of(l, from, i)) << "layer " << l << " slot " << s << " elem " << i;
            ASSERT_EQ(c->value(l, s, i), val_of(l, from, i)) << "layer " << l << " slot " << s << " elem " << i;
          }
        }
  }
  ModelConfig other = cfg;
  EXPECT_THROW(KvCache(other, cap, DType::Q8_0), Error);
}

TEST(KvCache, ContextFullIsAnError) {
  auto m = random_model(preset_config("tiny"), DType::F32, 5);
  Transformer tf(m->config(), m->weights());
  KvCache cache(m->config(), 8);
  SequenceInput in;
  in.set_causal(&cache, random_tokens(6, 256, 1), SequenceInput::Logits::None);
  tf.forward(in);
  in.set_causal(&cache, random_tokens(3, 256, 2), SequenceInput::Logits::None);
  EXPECT_THROW(tf.forward(in), Error);
  EXPECT_EQ(cache.size(), 6);
  in.set_causal(&cache, std::vector<int32_t>{999}, SequenceInput::Logits::None);
  EXPECT_THROW(tf.forward(in), Error);  // token outside the vocabulary
}

// A forward's result answers by row until the next forward of its pass; after that any use is an error (its
// rows live in the pass's buffers, which the next forward overwrites), as is a row outside it.
TEST(ForwardResult, IsRefusedAfterTheNextForward) {
  auto m = random_model(preset_config("tiny"), DType::F32, 5);
  Transformer tf(m->config(), m->weights());
  KvCache a(m->config(), 16), b(m->config(), 16);
  SequenceInput in;
  in.set_causal(&a, random_tokens(3, 256, 1), SequenceInput::Logits::All);
  const ForwardResult first = tf.forward(in);
  const ForwardResult mine = first.slice(1, 2);
  EXPECT_EQ(mine.greedy(0), first.greedy(1));
  EXPECT_EQ(mine.logits(1), first.logits(2));
  EXPECT_THROW(first.logits(3), std::logic_error);  // not a row of it
  EXPECT_THROW(mine.greedy(2), std::logic_error);
  in.set_causal(&b, random_tokens(2, 256, 2), SequenceInput::Logits::All);
  const ForwardResult second = tf.forward(in);
  EXPECT_NO_THROW(second.greedy(1));
  EXPECT_THROW(first.greedy(0), std::logic_error);
  EXPECT_THROW(mine.logits(0), std::logic_error);
  EXPECT_THROW(first.drafted(), std::logic_error);
}

// Every SIMD instruction set computes the same forward, bit for bit (the panel tiles and attention are
// written to agree, and Q8_0 matrices use exact integer sums), so a model decodes alike on machines with
// and without AVX-512 or VNNI. The wide feed-forward puts fp32 and own-type panels in one model.
TEST(SimdInstructionSets, GiveBitIdenticalLogits) {
  const Isa saved = active_isa();
  for (DType type : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0}) {
    auto toks = random_tokens(12, 256, 9);
    std::optional<Logits> first;
    for (Isa isa : {Isa::Avx2, Isa::Avx2Vnni, Isa::Avx512}) {
      if (!isa_supported(isa)) {
        std::printf("SKIPPED: CPU lacks %s\n", isa_name(isa).c_str());
        continue;
      }
      set_active_isa(isa);
      auto m = random_model(llama_wide_ffn(), type, 8);  // packed under this instruction set
      Logits got = stepwise(*m, toks);
      if (!first) first = got;
      for (size_t t = 0; t < got.size(); t++)
        for (size_t i = 0; i < got[t].size(); i++)
          ASSERT_EQ(got[t][i], (*first)[t][i]) << dtype_name(type) << " " << isa_name(isa) << " t=" << t << " i=" << i;
    }
  }
  // GGML's file types' mixes (Q4_K with Q6_K, Q5_K with Q6_K, Q5_1 with Q6_K, IQ4_XS with Q5_K and Q6_K).
  for (const char* scheme : {"q4_k_m", "q5_k_m", "q5_1", "iq4_xs"}) {
    auto toks = random_tokens(12, 256, 9);
    std::optional<Logits> first;
    for (Isa isa : {Isa::Avx2, Isa::Avx2Vnni, Isa::Avx512}) {
      if (!isa_supported(isa)) continue;
      set_active_isa(isa);
      auto m = file_type_model(scheme, 8);
      Logits got = stepwise(*m, toks);
      if (!first) first = got;
      for (size_t t = 0; t < got.size(); t++)
        for (size_t i = 0; i < got[t].size(); i++)
          ASSERT_EQ(got[t][i], (*first)[t][i]) << scheme << " " << isa_name(isa) << " t=" << t << " i=" << i;
    }
  }
  set_active_isa(saved);
}

// The largest |got - want| over each position's logits, in units of that position's logit standard deviation.
double max_logit_error_over_sd(const Logits& want, const Logits& got) {
  double worst = 0;
  for (size_t t = 0; t < want.size(); t++) {
    double mean = 0, var = 0, maxd = 0;
    for (float v : want[t]) mean += v;
    mean /= want[t].size();
    for (float v : want[t]) var += (v - mean) * (v - mean);
    for (size_t i = 0; i < want[t].size(); i++) maxd = std::max(maxd, std::fabs(double(got[t][i]) - want[t][i]));
    worst = std::max(worst, maxd / std::sqrt(var / want[t].size()));
  }
  return worst;
}

// Reduced-precision weights stay close to fp32. Stated tolerance: max |logit difference| relative to the
// logits' standard deviation below 3% for F16, 8% for BF16, 20% for Q8_0 (int8 activations included) on
// random 2-layer models.
TEST(Quantization, LogitsWithinToleranceOfF32) {
  for (const ModelConfig& cfg : {preset_config("tiny"), llama_wide_ffn()}) {
  SCOPED_TRACE("ffn_dim " + std::to_string(cfg.ffn_dim));
  auto ref_model = random_model(cfg, DType::F32, 21);
  auto toks = random_tokens(16, 256, 3);
  Logits ref = stepwise(*ref_model, toks);
  for (auto [type, tol] : {std::pair{DType::F16, 0.03}, {DType::BF16, 0.08}, {DType::Q8_0, 0.2}}) {
    Model q(ref_model->config(), convert_tensors(ref_model->tensors(), type), "memory");
    const double worst = max_logit_error_over_sd(ref, stepwise(q, toks));
    EXPECT_LT(worst, tol) << dtype_name(type);
    std::printf("%s: max |logit error| / logit sd = %.4f (tolerance %.2f)\n", dtype_name(type).c_str(), worst, tol);
    RecordProperty(dtype_name(type) + "_max_rel_logit_error_ffn" + std::to_string(cfg.ffn_dim), std::to_string(worst));
  }
  }
}

// Q4_0's 16 levels move a random model's logits by more than its spread, so its test separates the kernels
// from the weights: a Q4_0 model (int8 activations) against the fp32 model of its own dequantized weights,
// within the Q8_0 tolerance above (the activations' quantization is the only difference).
TEST(Quantization, Q4_0ComputesItsDequantizedWeights) {
  for (const ModelConfig& cfg : {preset_config("tiny"), llama_wide_ffn()}) {
    auto base = random_model(cfg, DType::F32, 21);
    Model q4(base->config(), convert_tensors(base->tensors(), DType::Q4_0), "memory");
    Model ref(base->config(), convert_tensors(q4.tensors(), DType::F32), "memory");
    auto toks = random_tokens(16, 256, 3);
    const double worst = max_logit_error_over_sd(stepwise(ref, toks), stepwise(q4, toks));
    EXPECT_LT(worst, 0.2) << "ffn_dim " << cfg.ffn_dim;
    std::printf("q4_0 against its dequantized weights: max |logit error| / logit sd = %.4f (tolerance 0.20)\n", worst);
  }
}

// The same for every legacy and K-quant type: a model in the type against the fp32 model of its own
// dequantized weights (the reference engine's values, see block32), differing only by activation rounding.
TEST(Quantization, QuantTypesComputeTheirDequantizedWeights) {
  auto base = random_model(llama_256(), DType::F32, 21);
  auto toks = random_tokens(16, 256, 3);
  for (DType t : {DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                  DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS}) {
    Model q(base->config(), convert_tensors(base->tensors(), t), "memory");
    ASSERT_EQ(q.tensors().find("blk.0.ffn_down.weight")->type, t);
    Model ref(base->config(), convert_tensors(q.tensors(), DType::F32), "memory");
    const double worst = max_logit_error_over_sd(stepwise(ref, toks), stepwise(q, toks));
    EXPECT_LT(worst, 0.2) << dtype_name(t);
    std::printf("%s against its dequantized weights: max |logit error| / logit sd = %.4f (tolerance 0.20)\n",
                dtype_name(t).c_str(), worst);
  }
}

TEST(Stories260K, Llama2cAndGgufGiveIdenticalLogits) {
  JF_SHARED_PATH(gguf, "models/stories260K/stories260K.gguf");
  JF_SHARED_PATH(bin, "models/stories260K/stories260K.bin");
  auto a = model_from_gguf(std::shared_ptr<const GgufFile>(GgufFile::open(gguf)));
  auto b = model_from_llama2c(bin);
  // The GGUF conversion stored the shared classifier as its own tensor and a longer context; the math is the same.
  EXPECT_EQ(a->config().dim, b->config().dim);
  EXPECT_TRUE(b->config().tied_output);
  auto toks = random_tokens(30, 512, 1);
  toks[0] = 1;
  Logits la = stepwise(*a, toks), lb = stepwise(*b, toks);
  for (size_t i = 0; i < la.size(); i++) expect_rows_equal(la[i].data(), lb[i], "llama2c vs gguf");
}

TEST(Stories260K, MalformedLlama2cCheckpoint) {
  JF_SHARED_PATH(bin, "models/stories260K/stories260K.bin");
  MappedFile f(bin);
  std::string tmp = ::testing::TempDir() + "/trunc.bin";
  write_file_atomic(tmp, f.data(), f.size() - 100);
  EXPECT_THROW(model_from_llama2c(tmp), Error);
  std::vector<uint8_t> junk(64, 0xff);
  write_file_atomic(tmp, junk.data(), junk.size());
  EXPECT_THROW(model_from_llama2c(tmp), Error);
  std::remove(tmp.c_str());
}


// Auto takes the candidate schedules in turn while measuring, then keeps the fastest per class of row
// counts; one row never tries splitting rows; an override wins over all.
TEST(ScheduleChooser, KeepsTheFastestScheduleForEachBatchClass) {
  using S = MultiRowSchedule;
  ScheduleChooser c;
  std::map<S, int> tried2, tried1;
  auto seconds = [](int64_t n, S s, int i) {
    switch (n) {
      case 1: return s == S::Serial ? 1e-3 : 2e-3;                                        // serial wins
      case 2: return s == S::SplitRows ? 1e-3 : s == S::Serial ? 1.5e-3 : 2e-3;           // rows win
      default: return s == S::SplitMatrices ? 3e-3 : (i == 1 ? 1e-4 : 4e-3);  // matrices win (one outlier)
    }
  };
  for (int i = 0; i < 3 * ScheduleChooser::kTrials; i++) {
    for (int64_t n : {1, 2, 8}) {
      const S s = c.choose(n);
      ASSERT_NE(s, S::Auto);
      if (n == 1) tried1[s]++;
      if (n == 2) tried2[s]++;
      c.record(n, s, seconds(n, s, i));
    }
  }
  EXPECT_EQ(tried1[S::SplitRows], 0);
  EXPECT_GE(tried1[S::Serial], ScheduleChooser::kTrials);
  for (S s : {S::Serial, S::SplitRows, S::SplitMatrices}) EXPECT_EQ(tried2[s], ScheduleChooser::kTrials);
  for (int i = 0; i < 5; i++) {
    EXPECT_EQ(c.choose(1), S::Serial);
    EXPECT_EQ(c.choose(2), S::SplitRows);
    EXPECT_EQ(c.choose(8), S::SplitMatrices);
    EXPECT_EQ(c.choose(5), S::SplitMatrices);
    c.record(2, S::Serial, 1e-9);  // later times no longer change the choice
  }
  EXPECT_EQ(c.choose(2), S::SplitRows);
  set_multirow_schedule(S::SplitMatrices);
  EXPECT_EQ(c.choose(2), S::SplitMatrices);
  set_multirow_schedule(S::Serial);
  EXPECT_EQ(c.choose(8), S::Serial);
  set_multirow_schedule(S::Auto);
  EXPECT_EQ(c.choose(8), S::SplitMatrices);
}

}  // namespace
}  // namespace jf

namespace jf {
namespace {

// The distinct rows of a matrix tensor.
size_t distinct_rows(const TensorRef& t) {
  const size_t row = dtype_row_bytes(t.type, t.dims[0]);
  const auto* p = static_cast<const uint8_t*>(t.data);
  std::set<std::string> rows;
  for (int64_t r = 0; r < t.dims[1]; r++) rows.emplace(reinterpret_cast<const char*>(p + r * row), row);
  return rows.size();
}

// jf random --fast: every matrix repeats a pool of rows (the file a speed check makes in seconds) and keeps
// its shape and type; without a pool every row is drawn.
TEST(RandomTensors, ARowPoolRepeatsItsRowsAndKeepsEveryShape) {
  const ModelConfig cfg = preset_config("tiny-256");
  WeightScheme scheme;
  ASSERT_TRUE(weight_scheme_from_name("q4_k_m", &scheme));
  const TensorSet drawn = random_tensors(cfg, scheme, 3), pooled = random_tensors(cfg, scheme, 3, 4);
  ASSERT_EQ(drawn.tensors.size(), pooled.tensors.size());
  int matrices = 0;
  for (const auto& [name, t] : drawn.tensors) {
    const TensorRef* p = pooled.find(name);
    ASSERT_NE(p, nullptr) << name;
    EXPECT_EQ(p->type, t.type) << name;
    EXPECT_EQ(p->dims, t.dims) << name;
    if (t.dims.size() < 2 || t.dims[1] <= 4) continue;
    matrices++;
    EXPECT_EQ(distinct_rows(*p), 4u) << name;
    EXPECT_EQ(distinct_rows(t), static_cast<size_t>(t.dims[1])) << name;
  }
  EXPECT_GT(matrices, 5);
}

}  // namespace
}  // namespace jf
