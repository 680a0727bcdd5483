// GGML's per-tensor mixes of its file types (model/quant_mix.h) on TinyLlama's 22-layer shape, and the
// fallbacks for rows that do not fit a type's blocks.
#include <string>

#include "model/quant_mix.h"
#include "test_support.h"

namespace jf {
namespace {

WeightScheme scheme(const std::string& name) {
  WeightScheme w;
  EXPECT_TRUE(weight_scheme_from_name(name, &w)) << name;
  return w;
}

// GGML's per-tensor mix of its file types on a 22-layer model (TinyLlama's shape): output Q6_K; attn_v and
// ffn_down Q6_K on the layers i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2 (q4_k_m); q4_k_s's Q5_K on the
// first layers; and the reference's fallbacks for rows that do not fit the blocks.
TEST(QuantMix, FileTypesFollowTheReferenceMix) {
  WeightScheme m, s, q6, q50, pure;
  ASSERT_TRUE(weight_scheme_from_name("Q4_K_M", &m));
  ASSERT_TRUE(weight_scheme_from_name("q4_k_s", &s));
  ASSERT_TRUE(weight_scheme_from_name("q6_k", &q6));
  ASSERT_TRUE(weight_scheme_from_name("q5_0", &q50));
  ASSERT_TRUE(weight_scheme_from_name("q4_k", &pure));
  EXPECT_FALSE(weight_scheme_from_name("q3_k_x", &pure));
  const int n = 22;
  std::string more;
  for (int i = 0; i < n; i++) {
    const std::string p = "blk." + std::to_string(i) + ".";
    const DType v = scheme_tensor_type(m, p + "attn_v.weight", 2048, n, true);
    EXPECT_EQ(scheme_tensor_type(m, p + "ffn_down.weight", 5632, n, true), v);
    EXPECT_EQ(scheme_tensor_type(m, p + "attn_q.weight", 2048, n, true), DType::Q4_K);
    EXPECT_EQ(scheme_tensor_type(s, p + "attn_v.weight", 2048, n, true), i < 4 ? DType::Q5_K : DType::Q4_K);
    EXPECT_EQ(scheme_tensor_type(s, p + "ffn_down.weight", 5632, n, true), i < 2 ? DType::Q5_K : DType::Q4_K);
    EXPECT_EQ(scheme_tensor_type(s, p + "attn_v.weight", 896, n, true), i < 4 ? DType::Q5_1 : DType::Q5_0);
    more += v == DType::Q6_K ? '6' : '4';
  }
  // n / 8 = 2, 7n / 8 = 19: layers 0, 1, 4, 7, 10, 13, 16, 19, 20, 21
  EXPECT_EQ(more, "6644644644644644644666");
  EXPECT_EQ(scheme_tensor_type(m, "output.weight", 2048, n, true), DType::Q6_K);
  EXPECT_EQ(scheme_tensor_type(m, "token_embd.weight", 2048, n, true), DType::Q4_K);
  EXPECT_EQ(scheme_tensor_type(m, "token_embd.weight", 2048, n, false), DType::Q6_K);  // tied: the output's type
  EXPECT_EQ(scheme_tensor_type(m, "output.weight", 896, n, true), DType::Q8_0);       // Qwen2.5-0.5B's width
  EXPECT_EQ(scheme_tensor_type(m, "blk.0.attn_q.weight", 896, n, true), DType::Q5_0);
  EXPECT_EQ(scheme_tensor_type(m, "blk.3.attn_v.weight", 896, n, true), DType::Q5_0);
  EXPECT_EQ(scheme_tensor_type(m, "blk.0.attn_v.weight", 896, n, true), DType::Q8_0);  // Q6_K's fallback
  EXPECT_EQ(scheme_tensor_type(m, "blk.0.ffn_down.weight", 4864, n, true), DType::Q6_K);
  // Fused qkv (Phi-3) follows attn_v's rules, as current llama.cpp sorts it with attn_v.
  EXPECT_EQ(scheme_tensor_type(m, "blk.0.attn_qkv.weight", 3072, n, true), DType::Q6_K);
  EXPECT_EQ(scheme_tensor_type(m, "blk.2.attn_qkv.weight", 3072, n, true), DType::Q4_K);
  EXPECT_EQ(scheme_tensor_type(m, "blk.0.attn_q.weight", 100, n, true), DType::F16);
  EXPECT_EQ(scheme_tensor_type(q6, "blk.5.ffn_up.weight", 2048, n, true), DType::Q6_K);
  EXPECT_EQ(scheme_tensor_type(q50, "output.weight", 2048, n, true), DType::Q6_K);
  EXPECT_EQ(scheme_tensor_type(q50, "output.weight", 576, n, true), DType::Q8_0);
  EXPECT_EQ(scheme_tensor_type(q50, "blk.0.ffn_down.weight", 5632, n, true), DType::Q5_0);
  EXPECT_EQ(scheme_tensor_type(pure, "output.weight", 2048, n, true), DType::Q4_K);
  EXPECT_EQ(scheme_tensor_type(pure, "output.weight", 960, n, true), DType::Q5_0);
}

// The 2- and 3-bit file types on the same 22 layers (n / 16 = 1): q2_k's attn_v by GQA ratio (TinyLlama has 8
// query heads per key-value head, Llama-2-7B 1), ffn_down and attn_output one step up; q3_k_m's attn_v Q5_K on
// two layers, ffn_down Q5_K below n/16, attn_output / fused qkv Q4_K; q3_k_l's Q5_K; q3_k_s only the output.
TEST(QuantMix, TwoAndThreeBitFileTypes) {
  const WeightScheme q2 = scheme("q2_k"), q3s = scheme("Q3_K_S"), q3m = scheme("q3_k_m"), q3l = scheme("q3_k_l");
  const int n = 22;
  for (int i = 0; i < n; i++) {
    SCOPED_TRACE(i);
    const std::string p = "blk." + std::to_string(i) + ".";
    EXPECT_EQ(scheme_tensor_type(q2, p + "attn_v.weight", 2048, n, true, 8), DType::Q4_K);
    EXPECT_EQ(scheme_tensor_type(q2, p + "attn_v.weight", 2048, n, true, 1), DType::Q3_K);
    EXPECT_EQ(scheme_tensor_type(q2, p + "ffn_down.weight", 5632, n, true, 8), DType::Q3_K);
    EXPECT_EQ(scheme_tensor_type(q2, p + "attn_output.weight", 2048, n, true, 8), DType::Q3_K);
    EXPECT_EQ(scheme_tensor_type(q2, p + "attn_q.weight", 2048, n, true, 8), DType::Q2_K);
    EXPECT_EQ(scheme_tensor_type(q2, p + "ffn_up.weight", 2048, n, true, 8), DType::Q2_K);
    EXPECT_EQ(scheme_tensor_type(q3m, p + "attn_v.weight", 2048, n, true, 8), i < 2 ? DType::Q5_K : DType::Q4_K);
    EXPECT_EQ(scheme_tensor_type(q3m, p + "ffn_down.weight", 5632, n, true, 8), i < 1 ? DType::Q5_K : DType::Q4_K);
    EXPECT_EQ(scheme_tensor_type(q3m, p + "attn_output.weight", 2048, n, true, 8), DType::Q4_K);
    EXPECT_EQ(scheme_tensor_type(q3m, p + "ffn_gate.weight", 2048, n, true, 8), DType::Q3_K);
    for (const char* t : {"attn_v.weight", "ffn_down.weight", "attn_output.weight"})
      EXPECT_EQ(scheme_tensor_type(q3l, p + t, 2048, n, true, 8), DType::Q5_K);
    EXPECT_EQ(scheme_tensor_type(q3l, p + "attn_k.weight", 2048, n, true, 8), DType::Q3_K);
    for (const char* t : {"attn_v.weight", "ffn_down.weight", "attn_output.weight", "attn_q.weight"})
      EXPECT_EQ(scheme_tensor_type(q3s, p + t, 2048, n, true, 8), DType::Q3_K);
  }
  EXPECT_EQ(scheme_tensor_type(q3m, "blk.0.attn_qkv.weight", 3072, n, true, 1), DType::Q5_K);  // fused: attn_v's
  EXPECT_EQ(scheme_tensor_type(q3m, "blk.5.attn_qkv.weight", 3072, n, true, 1), DType::Q4_K);
  EXPECT_EQ(scheme_tensor_type(q3l, "blk.0.attn_qkv.weight", 3072, n, true, 1), DType::Q5_K);
  EXPECT_EQ(scheme_tensor_type(q2, "blk.0.attn_qkv.weight", 3072, n, true, 1), DType::Q3_K);
  for (const WeightScheme* w : {&q2, &q3s, &q3m, &q3l}) {
    EXPECT_EQ(scheme_tensor_type(*w, "output.weight", 2048, n, true, 8), DType::Q6_K);
    EXPECT_EQ(scheme_tensor_type(*w, "token_embd.weight", 2048, n, false, 8), DType::Q6_K);
    EXPECT_EQ(scheme_tensor_type(*w, "output.weight", 896, n, true, 8), DType::Q8_0);
  }
  // Rows that fit no 256-block: Q2_K / Q3_K -> Q4_0, F16 below 32.
  EXPECT_EQ(scheme_tensor_type(q2, "blk.3.attn_q.weight", 896, n, true, 8), DType::Q4_0);
  EXPECT_EQ(scheme_tensor_type(q3s, "blk.3.ffn_up.weight", 896, n, true, 8), DType::Q4_0);
  EXPECT_EQ(scheme_tensor_type(q3m, "blk.3.attn_v.weight", 896, n, true, 8), DType::Q5_0);  // Q4_K's fallback
  EXPECT_EQ(scheme_tensor_type(q2, "blk.3.attn_q.weight", 100, n, true, 8), DType::F16);
  // iq4_nl / iq4_xs: attn_v Q5_K with GQA >= 4, ffn_down Q5_K below n/8 (2 layers), IQ4_XS -> IQ4_NL at 896.
  const WeightScheme nl = scheme("iq4_nl"), xs = scheme("IQ4_XS");
  for (int i = 0; i < n; i++) {
    const std::string p = "blk." + std::to_string(i) + ".";
    EXPECT_EQ(scheme_tensor_type(xs, p + "attn_v.weight", 2048, n, true, 8), DType::Q5_K);
    EXPECT_EQ(scheme_tensor_type(xs, p + "attn_v.weight", 2048, n, true, 1), DType::IQ4_XS);
    EXPECT_EQ(scheme_tensor_type(nl, p + "ffn_down.weight", 5632, n, true, 1), i < 2 ? DType::Q5_K : DType::IQ4_NL);
    EXPECT_EQ(scheme_tensor_type(xs, p + "attn_q.weight", 2048, n, true, 8), DType::IQ4_XS);
  }
  EXPECT_EQ(scheme_tensor_type(nl, "output.weight", 2048, n, true, 8), DType::Q6_K);
  EXPECT_EQ(scheme_tensor_type(xs, "blk.3.attn_q.weight", 896, n, true, 8), DType::IQ4_NL);
  EXPECT_EQ(scheme_tensor_type(nl, "blk.3.attn_q.weight", 896, n, true, 8), DType::IQ4_NL);
}

// The reference's 70B class (80 layers: llama with grouped keys and values, or qwen2) gets attn_v in Q5_K
// where its mix says Q3_K or Q4_K; other types and other models keep theirs.
TEST(QuantMix, SeventyBClassAttnVBonus) {
  ModelConfig llama70;
  llama70.arch = Arch::Llama, llama70.n_layers = 80, llama70.n_heads = 64, llama70.n_kv_heads = 8;
  EXPECT_TRUE(reference_70b_class(llama70));
  ModelConfig mha = llama70;
  mha.n_kv_heads = 64;  // LLaMA-65B: no bonus
  EXPECT_FALSE(reference_70b_class(mha));
  ModelConfig qwen72 = llama70;
  qwen72.arch = Arch::Qwen2;
  EXPECT_TRUE(reference_70b_class(qwen72));
  ModelConfig qwen3 = llama70;
  qwen3.arch = Arch::Qwen3;
  EXPECT_FALSE(reference_70b_class(qwen3));
  llama70.n_layers = 81;
  EXPECT_FALSE(reference_70b_class(llama70));

  const WeightScheme m = scheme("q4_k_m"), s = scheme("q4_k_s"), q2 = scheme("q2_k"), q3s = scheme("q3_k_s"),
                     xs = scheme("iq4_xs");
  const int n = 80;
  for (int i = 0; i < n; i++) {
    SCOPED_TRACE(i);
    const std::string v = "blk." + std::to_string(i) + ".attn_v.weight";
    const bool more = scheme_tensor_type(m, v, 8192, n, true, 8) == DType::Q6_K;
    EXPECT_EQ(scheme_tensor_type(m, v, 8192, n, true, 8, true), more ? DType::Q6_K : DType::Q5_K);
    EXPECT_EQ(scheme_tensor_type(s, v, 8192, n, true, 8, true), DType::Q5_K);
    EXPECT_EQ(scheme_tensor_type(q2, v, 8192, n, true, 8, true), DType::Q5_K);
    EXPECT_EQ(scheme_tensor_type(q3s, v, 8192, n, true, 8, true), DType::Q5_K);
    EXPECT_EQ(scheme_tensor_type(xs, v, 8192, n, true, 1, true), DType::IQ4_XS);  // not Q3_K / Q4_K
    EXPECT_EQ(scheme_tensor_type(m, "blk." + std::to_string(i) + ".attn_q.weight", 8192, n, true, 8, true),
              DType::Q4_K);
  }
}

}  // namespace
}  // namespace jf
