// Architectures beyond Llama / Qwen2: each new operation against a hand-computed case, each feature shown to
// change the logits (so deleting it would fail a test), GGUF round trips, and bad files erroring in one line.
// (Batch invariance of every architecture is in test_model.cpp, decoders' losslessness in test_decoders.cpp.)
#include <cmath>
#include <memory>
#include <numbers>

#include "base/error.h"
#include "formats/gguf.h"
#include "kernels/cpu.h"
#include "kernels/ops.h"
#include "model/arch_ops.h"
#include "model/convert.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/transformer.h"
#include "model_helpers.h"
#include "test_support.h"

namespace jf {
namespace {

using test::expect_error;
using test::Logits;
using test::random_tokens;
using test::stepwise;

// ---------------------------------------------------------------- new operations, hand-computed

TEST(ArchOps, HeadRmsNormNormalisesEachHeadWithSharedWeights) {
  float v[4] = {3, 4, 1, 1};  // two heads of 2
  const float w[2] = {1, 2};
  head_rmsnorm(v, 2, 2, w, 0.0f);
  // head 0: rms = sqrt((9 + 16) / 2) = 3.5355; head 1: rms = 1
  EXPECT_NEAR(v[0], 0.8485281f, 1e-6);
  EXPECT_NEAR(v[1], 2.2627417f, 1e-6);
  EXPECT_NEAR(v[2], 1.0f, 1e-6);
  EXPECT_NEAR(v[3], 2.0f, 1e-6);
}

TEST(ArchOps, GeluTanhTimesUp) {
  float gate[4] = {1, 0, -1, 2.5f};
  const float up[4] = {2, 3, 4, 1};
  gelu_tanh_mul(gate, up, 4);
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) * up
  EXPECT_NEAR(gate[0], 1.6823840f, 1e-6);
  EXPECT_EQ(gate[1], 0.0f);
  EXPECT_NEAR(gate[2], -0.6352320f, 1e-6);
  EXPECT_NEAR(gate[3], 2.4849157f, 1e-6);
}

TEST(ArchOps, SoftcapSquashesIntoTheCap) {
  float x[3] = {30, 0, -60};
  softcap(x, 3, 30.0f);
  EXPECT_NEAR(x[0], 22.847825f, 1e-5);  // 30 tanh(1)
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_NEAR(x[2], -28.920827f, 1e-5);  // 30 tanh(-2)
}

TEST(ArchOps, SlidingWindowIsByPosition) {
  EXPECT_TRUE(in_sliding_window(10, 10, 8));
  EXPECT_TRUE(in_sliding_window(10, 3, 8));   // 7 positions back: inside a window of 8
  EXPECT_FALSE(in_sliding_window(10, 2, 8));  // 8 back: outside
  EXPECT_TRUE(in_sliding_window(10, 0, 0));   // no window
  ModelConfig c;
  c.sliding_window = 8, c.sliding_period = 6;  // gemma3: five local layers, then a global one
  for (int l = 0; l < 12; l++) EXPECT_EQ(c.local_layer(l), l % 6 != 5) << l;
  c.sliding_period = 2;  // gemma2: even layers local
  EXPECT_TRUE(c.local_layer(0));
  EXPECT_FALSE(c.local_layer(1));
  c.sliding_window = 0;
  EXPECT_FALSE(c.local_layer(0));
}

// On every instruction set (the SIMD sets soft-cap with the vector tanh, scalar with std::tanh).
TEST(ArchOps, SoftcappedAttentionOfOneHead) {
  const int hd = 2;
  std::vector<float> keys(kKeyBlock * hd, 0.0f);
  keys[key_offset(0, 0, hd)] = 2.0f;  // k0 = (2, 0), k1 = (0, 0)
  const float values[4] = {1, 0, 0, 1};  // v0 = (1, 0), v1 = (0, 1)
  const float q[2] = {1, 0};
  const int32_t slots[2] = {0, 1};
  const Isa was = active_isa();
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx2Vnni, Isa::Avx512}) {
    if (!isa_supported(isa)) continue;
    set_active_isa(isa);
    std::vector<float> scores(static_cast<size_t>(attention_scratch(1, 2)));
    float out[2];
    attend_group(q, 1, keys.data(), values, hd, hd, slots, 2, 1.0f, scores.data(), out, 1.0f);
    // scores tanh(2) and 0: p0 = e^tanh(2) / (e^tanh(2) + 1)
    EXPECT_NEAR(out[0], 0.7239275f, 1e-6) << isa_name(isa);
    EXPECT_NEAR(out[1], 0.2760725f, 1e-6) << isa_name(isa);
    attend_group(q, 1, keys.data(), values, hd, hd, slots, 2, 1.0f, scores.data(), out);  // no cap: e^2 / (e^2 + 1)
    EXPECT_NEAR(out[0], 0.8807971f, 1e-6) << isa_name(isa);
  }
  set_active_isa(was);
}

// NEOX pairs (i, i + rope_dim / 2) among the first rope_dim dims; the rest of the head passes through.
TEST(ArchOps, PartialRotaryNeox) {
  float x[6] = {1, 2, 3, 4, 5, 6};
  const float cos[2] = {0, 1}, sin[2] = {1, 0};  // 90 degrees, 0 degrees
  rope(x, 1, 6, 4, cos, sin, RopeStyle::Neox);
  const float want[6] = {-3, 2, 1, 4, 5, 6};
  for (int i = 0; i < 6; i++) EXPECT_EQ(x[i], want[i]) << i;
}

// Phi-3: short divisors while the context fits the original one, long beyond; cos and sin times attn_factor.
TEST(ArchOps, LongRopeFactorsByContextAndAttentionFactor) {
  ModelConfig c;
  c.rope_dim = 4, c.rope_theta = 100.0f;
  c.rope_factors_short = {1, 2}, c.rope_factors_long = {4, 8};
  c.rope_orig_context = 16, c.rope_attn_factor = 1.5f;
  EXPECT_EQ(rope_table(c, 16).factors, c.rope_factors_short.data());
  EXPECT_EQ(rope_table(c, 17).factors, c.rope_factors_long.data());
  float cs[2], sn[2];
  rope_angles(rope_table(c, 4096), 4, 2, cs, sn);  // freqs 1 / 4 and 0.1 / 8 at position 2
  EXPECT_NEAR(cs[0], 1.3163738f, 1e-6);
  EXPECT_NEAR(sn[0], 0.7191383f, 1e-6);
  EXPECT_NEAR(cs[1], 1.4995313f, 1e-6);
  EXPECT_NEAR(sn[1], 0.0374961f, 1e-6);
  rope_angles(rope_table(c, 16), 4, 2, cs, sn);  // short: freqs 1 and 0.1 / 2
  EXPECT_NEAR(cs[0], 1.5f * std::cos(2.0f), 1e-6);
  EXPECT_NEAR(sn[1], 1.5f * std::sin(0.1f), 1e-6);
}

// YaRN (Qwen2.5's long-context configs): factor 4 over an original context of 64, rope_dim 8, base 10000,
// betas 32 / 1. The dims where 64 positions make 32 and 1 turns: 8 ln(64 / (r 2 pi)) / (2 ln 10000) = -0.50
// and 1.01, so the ramp runs from dim 0 (floor, clamped at 0) to dim 2 (ceil): dim 0 keeps the unscaled
// angle, dim 1 blends half and half, dims 2 and 3 take the scaled one; cos and sin times 1 + 0.1 ln 4.
TEST(ArchOps, YarnRampAndMagnitude) {
  ModelConfig c;
  c.rope_dim = 8, c.rope_theta = 10000.0f, c.rope_freq_scale = 0.25f, c.rope_orig_context = 64;
  c.rope_yarn = true;
  const RopeTable t = rope_table(c, 4096);
  EXPECT_EQ(t.yarn_low, 0.0f);
  EXPECT_EQ(t.yarn_high, 2.0f);
  float cs[4], sn[4];
  rope_angles(t, 8, 5, cs, sn);  // freqs 1, 0.1, 0.01, 0.001 at position 5
  const double m = 1 + 0.1 * std::log(4.0);
  const double angle[4] = {5.0, 0.5 * (0.25 * 0.5) + 0.5 * 0.5, 0.25 * 0.05, 0.25 * 0.005};
  for (int i = 0; i < 4; i++) {
    EXPECT_NEAR(cs[i], m * std::cos(angle[i]), 1e-5) << i;
    EXPECT_NEAR(sn[i], m * std::sin(angle[i]), 1e-5) << i;
  }
  // Its GGUF keys come back, and the model line says so.
  c.arch = Arch::Qwen2, c.dim = 64, c.n_layers = 1, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 16;
  c.ffn_dim = 128, c.vocab_size = 32, c.context_length = 256, c.rope_dim = 16, c.rope_yarn_beta_fast = 16.0f;
  GgufMetadata meta;
  config_to_gguf(c, meta);
  const ModelConfig back = config_from_gguf(meta);
  EXPECT_TRUE(back.rope_yarn);
  EXPECT_EQ(back.rope_freq_scale, 0.25f);
  EXPECT_EQ(back.rope_orig_context, 64);
  EXPECT_EQ(back.rope_yarn_beta_fast, 16.0f);
  EXPECT_EQ(back.rope_yarn_beta_slow, 1.0f);
  EXPECT_NE(back.summary().find("yarn x4 from 64"), std::string::npos) << back.summary();
  meta.set("qwen2.rope.scaling.original_context_length", GgufValue::of_u32(0));
  expect_error([&] { config_from_gguf(meta).validate(); }, "YaRN needs rope.scaling.original_context_length");
  // Without the key, the trained context is the original one (llama.cpp's n_ctx_orig_yarn default).
  ModelConfig no_key = c;
  no_key.rope_orig_context = 0;
  GgufMetadata meta2;
  config_to_gguf(no_key, meta2);
  ASSERT_FALSE(meta2.has("qwen2.rope.scaling.original_context_length"));
  EXPECT_EQ(config_from_gguf(meta2).rope_orig_context, no_key.context_length);
}

TEST(ArchGguf, Gemma3WithoutWindowHasNoLocalLayersAndMayCapLogits) {
  ModelConfig g = preset_config("gemma3-tiny");
  GgufMetadata meta;
  config_to_gguf(g, meta);
  ASSERT_GT(config_from_gguf(meta).sliding_window, 0);
  EXPECT_EQ(config_from_gguf(meta).rope_theta_local, 10000.0f);
  EXPECT_EQ(config_from_gguf(meta).final_softcap, 0.0f);
  g.sliding_window = 0;
  g.final_softcap = 30.0f;  // a fine-tune that writes gemma3.final_logit_softcapping
  GgufMetadata meta2;
  config_to_gguf(g, meta2);
  const ModelConfig back = config_from_gguf(meta2);
  EXPECT_EQ(back.sliding_window, 0);
  EXPECT_EQ(back.rope_theta_local, 0.0f);  // every layer rotates with the file's base
  EXPECT_EQ(back.final_softcap, 30.0f);
}

// Gemma 3: local layers rotate with base 10000 and no scaling, global ones with the file's base and scaling.
TEST(ArchOps, PerLayerRopeBase) {
  ModelConfig c;
  c.rope_dim = 4, c.rope_theta = 1000000.0f, c.rope_theta_local = 10000.0f, c.rope_freq_scale = 0.125f;
  float cs[2], sn[2];
  rope_angles(local_rope_table(c), 4, 3, cs, sn);  // freqs 1 and 0.01
  EXPECT_NEAR(cs[0], -0.9899925f, 1e-6);
  EXPECT_NEAR(cs[1], 0.9995500f, 1e-6);
  rope_angles(rope_table(c, 0), 4, 3, cs, sn);  // freqs 1 and 0.001, times 0.125
  EXPECT_NEAR(cs[0], 0.9305076f, 1e-6);
  EXPECT_NEAR(cs[1], 0.9999999f, 1e-6);
}

// ---------------------------------------------------------------- whole models

void expect_differ(const Logits& a, const Logits& b, const std::string& what) {
  double diff = 0;
  for (size_t t = 0; t < a.size(); t++)
    for (size_t i = 0; i < a[t].size(); i++) diff = std::max(diff, std::fabs(double(a[t][i]) - b[t][i]));
  EXPECT_GT(diff, 1e-3) << what << " changed nothing";
}

void expect_same(const Logits& a, const Logits& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t t = 0; t < a.size(); t++)
    for (size_t i = 0; i < a[t].size(); i++) ASSERT_EQ(a[t][i], b[t][i]) << what << ": token " << t << " index " << i;
}

// Logits of a model whose cache holds `capacity` slots (LongRoPE depends on it).
Logits logits_with_context(const Model& m, const std::vector<int32_t>& toks, int capacity) {
  Transformer tf(m.config(), m.weights());
  KvCache cache(m.config(), capacity);
  SequenceInput in;
  in.set_causal(&cache, toks, SequenceInput::Logits::All);
  const std::vector<float> l_rows = test::all_logits(tf.forward(in));
  const float* l = l_rows.data();
  Logits out;
  for (size_t t = 0; t < toks.size(); t++) out.emplace_back(l + t * m.config().vocab_size, l + (t + 1) * m.config().vocab_size);
  return out;
}

TEST(Qwen3, QkNormChangesTheLogits) {
  const ModelConfig cfg = preset_config("qwen3-tiny");
  ASSERT_NE(cfg.head_dim * cfg.n_heads, cfg.dim);  // head size from key_length, not dim / heads
  TensorSet ts = random_tensors(cfg, DType::F32, 3);
  Model with(cfg, ts, "memory");
  ModelConfig plain = cfg;
  plain.arch = Arch::Qwen2;  // the same weights without the per-head norms
  Model without(plain, ts, "memory");
  auto toks = random_tokens(8, cfg.vocab_size, 1);
  expect_differ(stepwise(with, toks), stepwise(without, toks), "qwen3 q/k norm");
  TensorSet missing = ts;
  missing.tensors.erase("blk.1.attn_k_norm.weight");
  expect_error([&] { Model m(cfg, missing, "memory"); }, "model is missing tensor 'blk.1.attn_k_norm.weight'");
}

// The fused tensors are cut into the same matrices a model with separate tensors has: gate is the first half
// of ffn_up, and q, k, v follow each other in attn_qkv. Same matrices, same kernels: the same bits.
TEST(Phi3, FusedTensorsSplitAsSeparateOnes) {
  const ModelConfig cfg = preset_config("phi3-tiny");
  TensorSet fused = random_tensors(cfg, DType::F16, 4);
  TensorSet split;
  split.owned = fused.owned;
  auto rows = [&](const std::string& from, const std::string& to, int64_t r0, int64_t n) {
    const TensorRef& t = *fused.find(from);
    const size_t rb = dtype_row_bytes(t.type, t.dims[0]);
    split.tensors[to] = TensorRef{t.type, {t.dims[0], n}, static_cast<const uint8_t*>(t.data) + r0 * rb};
  };
  for (const auto& [name, t] : fused.tensors) {
    const std::string p = name.substr(0, name.find('.', 4) + 1);
    if (name.ends_with("attn_qkv.weight")) {
      rows(name, p + "attn_q.weight", 0, cfg.q_dim());
      rows(name, p + "attn_k.weight", cfg.q_dim(), cfg.kv_dim());
      rows(name, p + "attn_v.weight", cfg.q_dim() + cfg.kv_dim(), cfg.kv_dim());
    } else if (name.ends_with("ffn_up.weight")) {
      rows(name, p + "ffn_gate.weight", 0, cfg.ffn_dim);
      rows(name, p + "ffn_up.weight", cfg.ffn_dim, cfg.ffn_dim);
    } else {
      split.tensors[name] = t;
    }
  }
  ModelConfig separate = cfg;
  separate.arch = Arch::Qwen2;  // Neox, separate tensors, no biases; the LongRoPE tensors still bind
  Model a(cfg, fused, "memory"), b(separate, split, "memory");
  EXPECT_EQ(b.config().rope_factors_long, cfg.rope_factors_long);
  auto toks = random_tokens(10, cfg.vocab_size, 2);
  expect_same(stepwise(a, toks), stepwise(b, toks), "fused vs separate");
}

TEST(Phi3, LongRopeFactorsAndPartialRotaryChangeTheLogits) {
  const ModelConfig cfg = preset_config("phi3-tiny");
  ASSERT_LT(cfg.rope_dim, cfg.head_dim);
  TensorSet ts = random_tensors(cfg, DType::F32, 5);
  Model m(cfg, ts, "memory");
  auto toks = random_tokens(12, cfg.vocab_size, 3);
  // A cache beyond the original context (64) rotates with the long factors, one within it with the short ones.
  expect_differ(logits_with_context(m, toks, 65), logits_with_context(m, toks, 64), "long vs short factors");
  expect_same(logits_with_context(m, toks, 256), logits_with_context(m, toks, 65), "two long contexts");
  ModelConfig full = cfg;
  full.rope_dim = cfg.head_dim;
  TensorSet no_factors = ts;
  no_factors.tensors.erase("rope_factors_long.weight");
  no_factors.tensors.erase("rope_factors_short.weight");
  full.rope_factors_long.clear(), full.rope_factors_short.clear();
  Model whole(full, no_factors, "memory");
  expect_differ(stepwise(m, toks), stepwise(whole, toks), "partial rotary + longrope");
}

// Gemma 2: a token sees only the last 8 positions on local layers, so the first 8 tokens' logits are those of
// the model without a window, bit for bit, and later ones differ; soft-caps and post-norms change the logits.
TEST(Gemma2, SlidingWindowSoftcapsAndPostNorms) {
  const ModelConfig cfg = preset_config("gemma2-tiny");
  ASSERT_EQ(cfg.sliding_window, 8);
  TensorSet ts = random_tensors(cfg, DType::F32, 7);
  Model m(cfg, ts, "memory");
  auto toks = random_tokens(20, cfg.vocab_size, 4);
  const Logits ref = stepwise(m, toks);
  ModelConfig no_window = cfg;
  no_window.sliding_window = 0;
  const Logits wide = stepwise(Model(no_window, ts, "memory"), toks);
  expect_same(Logits(ref.begin(), ref.begin() + 8), Logits(wide.begin(), wide.begin() + 8), "inside the window");
  expect_differ(Logits(ref.begin() + 8, ref.end()), Logits(wide.begin() + 8, wide.end()), "sliding window");
  ModelConfig caps = cfg;
  caps.attn_softcap = 0.5f, caps.final_softcap = 2.0f;
  ModelConfig no_caps = cfg;
  no_caps.attn_softcap = 0.0f, no_caps.final_softcap = 0.0f;
  const Logits capped = stepwise(Model(caps, ts, "memory"), toks);
  expect_differ(capped, stepwise(Model(no_caps, ts, "memory"), toks), "soft-caps");
  for (const auto& row : capped)
    for (float v : row) ASSERT_LT(std::fabs(v), 2.0f);
  TensorSet missing = ts;
  missing.tensors.erase("blk.1.post_ffw_norm.weight");
  expect_error([&] { Model bad(cfg, missing, "memory"); }, "model is missing tensor 'blk.1.post_ffw_norm.weight'");
}

// A first token attends only to itself (its attention output is its value), so Gemma 2's whole layer stack can
// be written out plainly: embedding x sqrt(dim), norm, value, output, post-attention norm, residual, norm,
// GeGLU, post-FFN norm, residual; final norm, tied output, soft-cap. The forward must agree with it.
TEST(Gemma2, FirstTokenMatchesAPlainReference) {
  const ModelConfig cfg = preset_config("gemma2-tiny");
  TensorSet ts = random_tensors(cfg, DType::F32, 9);
  const int D = cfg.dim, F = cfg.ffn_dim, token = 17;
  auto w = [&](const std::string& name) { return static_cast<const float*>(ts.find(name)->data); };
  auto matvec = [](const float* W, int rows, int cols, const std::vector<double>& x) {
    std::vector<double> y(rows, 0.0);
    for (int r = 0; r < rows; r++)
      for (int c = 0; c < cols; c++) y[r] += double(W[int64_t(r) * cols + c]) * x[c];
    return y;
  };
  auto norm = [&](std::vector<double> x, const float* g) {
    double ss = 0;
    for (double v : x) ss += v * v;
    const double inv = 1.0 / std::sqrt(ss / x.size() + cfg.norm_eps);
    for (size_t i = 0; i < x.size(); i++) x[i] *= inv * g[i];
    return x;
  };
  std::vector<double> x(D);
  for (int i = 0; i < D; i++) x[i] = w("token_embd.weight")[int64_t(token) * D + i] * std::sqrt(double(D));
  for (int l = 0; l < cfg.n_layers; l++) {
    const std::string p = "blk." + std::to_string(l) + ".";
    const std::vector<double> v = matvec(w(p + "attn_v.weight"), cfg.kv_dim(), D, norm(x, w(p + "attn_norm.weight")));
    std::vector<double> att(cfg.q_dim());
    const int group = cfg.n_heads / cfg.n_kv_heads;
    for (int h = 0; h < cfg.n_heads; h++)
      for (int i = 0; i < cfg.head_dim; i++) att[h * cfg.head_dim + i] = v[(h / group) * cfg.head_dim + i];
    const std::vector<double> o = norm(matvec(w(p + "attn_output.weight"), D, cfg.q_dim(), att), w(p + "post_attention_norm.weight"));
    for (int i = 0; i < D; i++) x[i] += o[i];
    const std::vector<double> h = norm(x, w(p + "ffn_norm.weight"));
    const std::vector<double> g = matvec(w(p + "ffn_gate.weight"), F, D, h), u = matvec(w(p + "ffn_up.weight"), F, D, h);
    std::vector<double> a(F);
    for (int i = 0; i < F; i++)
      a[i] = 0.5 * g[i] * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (g[i] + 0.044715 * g[i] * g[i] * g[i]))) * u[i];
    const std::vector<double> d = norm(matvec(w(p + "ffn_down.weight"), D, F, a), w(p + "post_ffw_norm.weight"));
    for (int i = 0; i < D; i++) x[i] += d[i];
  }
  std::vector<double> want = matvec(w("token_embd.weight"), cfg.vocab_size, D, norm(x, w("output_norm.weight")));
  for (double& v : want) v = cfg.final_softcap * std::tanh(v / cfg.final_softcap);
  const Logits got = stepwise(Model(cfg, ts, "memory"), {token});
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  for (int i = 0; i < cfg.vocab_size; i++) ASSERT_NEAR(got[0][i], want[i], 1e-4 * scale) << i;
}

// Gemma 3: q/k norms and the local layers' own RoPE base both change the logits.
TEST(Gemma3, QkNormAndLocalRopeBase) {
  const ModelConfig cfg = preset_config("gemma3-tiny");
  ASSERT_TRUE(cfg.local_layer(0));
  ASSERT_FALSE(cfg.local_layer(5));
  TensorSet ts = random_tensors(cfg, DType::F32, 8);
  auto toks = random_tokens(12, cfg.vocab_size, 5);
  const Logits ref = stepwise(Model(cfg, ts, "memory"), toks);
  ModelConfig one_base = cfg;
  one_base.rope_theta_local = 0.0f;  // every layer with the global base and scaling
  expect_differ(ref, stepwise(Model(one_base, ts, "memory"), toks), "local rope base");
  TensorSet flat = ts;  // q/k norm weights 1 instead of random: still normalised, so a different result
  std::vector<uint8_t> ones(size_t(cfg.head_dim) * 4);
  for (int i = 0; i < cfg.head_dim; i++) reinterpret_cast<float*>(ones.data())[i] = 1.0f;
  for (int l = 0; l < cfg.n_layers; l++)
    flat.add_owned("blk." + std::to_string(l) + ".attn_q_norm.weight", DType::F32, {cfg.head_dim}, ones);
  expect_differ(ref, stepwise(Model(cfg, flat, "memory"), toks), "q norm weights");
}

// GGUF out and back: the same config and the same logits, bit for bit.
TEST(ArchGguf, WriteAndLoadEveryArchitecture) {
  for (const char* preset : {"qwen3-tiny", "phi3-tiny", "gemma2-tiny", "gemma3-tiny"}) {
    SCOPED_TRACE(preset);
    const ModelConfig cfg = preset_config(preset);
    Model ref(cfg, random_tensors(cfg, DType::Q8_0, 6), "memory");
    test::TempDir d(std::string("arch_") + preset);
    write_model_gguf(d / "m.gguf", ref.config(), ref.tensors(), GgufMetadata{});
    auto back = model_from_gguf(std::shared_ptr<const GgufFile>(GgufFile::open(d / "m.gguf")));
    const ModelConfig& got = back->config();
    EXPECT_EQ(got.arch, cfg.arch);
    EXPECT_EQ(got.head_dim, cfg.head_dim);
    EXPECT_EQ(got.rope_dim, cfg.rope_dim);
    EXPECT_EQ(got.rope_style, RopeStyle::Neox);
    EXPECT_EQ(got.rope_factors_long, cfg.rope_factors_long);
    EXPECT_EQ(got.rope_factors_short, cfg.rope_factors_short);
    EXPECT_EQ(got.rope_orig_context, cfg.rope_orig_context);
    EXPECT_EQ(got.rope_attn_factor, cfg.rope_attn_factor);
    EXPECT_EQ(got.tied_output, cfg.tied_output);
    EXPECT_EQ(got.sliding_window, cfg.sliding_window);
    EXPECT_EQ(got.sliding_period, cfg.sliding_period);
    EXPECT_EQ(got.attn_softcap, cfg.attn_softcap);
    EXPECT_EQ(got.final_softcap, cfg.final_softcap);
    EXPECT_EQ(got.query_scale, cfg.query_scale);
    EXPECT_EQ(got.rope_theta_local, cfg.rope_theta_local);
    EXPECT_EQ(got.rope_freq_scale, cfg.rope_freq_scale);
    auto toks = random_tokens(10, cfg.vocab_size, 7);
    expect_same(stepwise(*back, toks), stepwise(ref, toks), preset);
  }
}

// YaRN changes a model's logits against plain linear scaling of the same factor.
TEST(Yarn, ChangesTheLogitsAgainstLinearScaling) {
  ModelConfig c = preset_config("qwen3-tiny");
  c.rope_freq_scale = 0.25f, c.rope_orig_context = 32;
  TensorSet ts = random_tensors(c, DType::F32, 4);
  Model linear(c, ts, "memory");
  c.rope_yarn = true;
  Model yarn(c, ts, "memory");
  auto toks = random_tokens(40, c.vocab_size, 2);
  expect_differ(stepwise(yarn, toks), stepwise(linear, toks), "yarn");
}

TEST(ArchGguf, BadFilesAreOneLineErrors) {
  GgufMetadata meta;
  config_to_gguf(preset_config("qwen3-tiny"), meta);
  meta.set("general.architecture", GgufValue::of_string("mamba"));
  expect_error([&] { config_from_gguf(meta); }, "unsupported architecture 'mamba' (supported: llama, qwen2, qwen3, phi3, gemma2, gemma3)");
  const ModelConfig phi = preset_config("phi3-tiny");
  TensorSet ts = random_tensors(phi, DType::F32, 1);
  TensorSet bad = ts;
  bad.tensors["blk.0.attn_qkv.weight"].dims[1] -= 1;
  expect_error([&] { Model m(phi, bad, "memory"); }, "tensor 'blk.0.attn_qkv.weight' has shape");
  bad = ts;
  bad.tensors["rope_factors_long.weight"].dims[0] = 2;
  expect_error([&] { Model m(phi, bad, "memory"); }, "LongRoPE factors have 2 entries, expected 6");
  ModelConfig no_orig = phi;
  no_orig.rope_orig_context = 0;
  expect_error([&] { Model m(no_orig, ts, "memory"); }, "original_context_length");
}

}  // namespace
}  // namespace jf
