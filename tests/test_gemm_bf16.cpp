// The bfloat16 training product: exactly the sums it documents (operands rounded to bfloat16, pairs of
// products added in fp32) for every operand layout, ragged shapes and odd K, whether split over threads or
// not; and linear layers in bf16 mode within bfloat16's rounding of fp32 mode.
#include <cmath>
#include <cstring>

#include "base/rng.h"
#include "kernels/parallel.h"
#include "test_support.h"
#include "train/gemm.h"
#include "train/layers.h"
#include "train/trainable_model.h"

namespace jf {
namespace {

std::vector<float> random_vec(int64_t n, uint64_t seed) {
  Rng r(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = 2.0f * r.uniform() - 1.0f;
  return v;
}

float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

// C[m][n] + sum over pairs j of (A(m,2j+1) B(2j+1,n), then A(m,2j) B(2j,n)), in fp32 from zero, as
// vdpbf16ps adds them; the products of bfloat16 values are exact, so each fma is one rounded addition.
std::vector<float> reference(int64_t M, int64_t N, int64_t K, const float* a, int64_t a_ms, int64_t a_ks,
                             const float* b, int64_t b_ks, int64_t b_ns, std::vector<float> c) {
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) {
      float acc = 0;
      for (int64_t j = 0; 2 * j < K; j++) {
        if (2 * j + 1 < K)
          acc = std::fma(round_bf16(a[m * a_ms + (2 * j + 1) * a_ks]), round_bf16(b[(2 * j + 1) * b_ks + n * b_ns]), acc);
        acc = std::fma(round_bf16(a[m * a_ms + 2 * j * a_ks]), round_bf16(b[2 * j * b_ks + n * b_ns]), acc);
      }
      c[m * N + n] += acc;
    }
  return c;
}

struct Layout {
  bool a_transposed, b_transposed;
};

TEST(GemmBf16, SumsExactlyAsDocumentedForEveryLayoutAndShape) {
  set_num_threads(2);
  for (Layout l : {Layout{false, false}, Layout{true, false}, Layout{false, true}, Layout{true, true}})
    for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{8, 32, 32}, {13, 45, 37}, {1, 7, 1}, {40, 100, 65}}) {
      SCOPED_TRACE(testing::Message() << "M " << M << " N " << N << " K " << K << " A^T " << l.a_transposed
                                      << " B^T " << l.b_transposed);
      const std::vector<float> a = random_vec(M * K, 1), b = random_vec(K * N, 2), c0 = random_vec(M * N, 3);
      const int64_t a_ms = l.a_transposed ? 1 : K, a_ks = l.a_transposed ? M : 1;
      const int64_t b_ks = l.b_transposed ? 1 : N, b_ns = l.b_transposed ? K : 1;
      const std::vector<float> want = reference(M, N, K, a.data(), a_ms, a_ks, b.data(), b_ks, b_ns, c0);
      for (bool parallel : {false, true}) {
        std::vector<float> c = c0;
        gemm_accumulate_bf16(parallel, M, N, K, a.data(), a_ms, a_ks, b.data(), b_ks, b_ns, c.data(), N);
        // Bit for bit: the CPU's dot product (AMD Zen 5 checked) and the emulation both add exactly so.
        EXPECT_EQ(c, want) << "parallel " << parallel << ", native " << gemm_bf16_native();
      }
    }
}

TEST(GemmBf16, SplittingOverThreadsChangesNoBit) {
  const int64_t M = 77, N = 130, K = 91;
  const std::vector<float> a = random_vec(M * K, 4), b = random_vec(K * N, 5);
  std::vector<float> serial(M * N, 0), threaded(M * N, 0);
  set_num_threads(1);
  gemm_accumulate_bf16(false, M, N, K, a.data(), K, 1, b.data(), N, 1, serial.data(), N);
  set_num_threads(2);
  gemm_accumulate_bf16(true, M, N, K, a.data(), K, 1, b.data(), N, 1, threaded.data(), N);
  EXPECT_EQ(serial, threaded);
}

// A linear layer's three products in bf16 mode stay within bfloat16's rounding (8 bits) of fp32 mode, and
// are not fp32 mode (the setting takes effect).
TEST(GemmBf16, LinearLayersFollowThePrecisionSetting) {
  const int64_t T = 24, K = 48, N = 40;
  const std::vector<float> x = random_vec(T * K, 6), w = random_vec(N * K, 7), dy = random_vec(T * N, 8);
  auto run = [&](LinearPrecision p) {
    set_linear_precision(p);
    std::vector<float> y(T * N), dx(T * K, 0), dw(N * K, 0);
    linear_forward(y.data(), x.data(), w.data(), nullptr, T, K, N);
    linear_backward(dx.data(), dw.data(), nullptr, dy.data(), x.data(), w.data(), T, K, N);
    set_linear_precision(LinearPrecision::F32);
    std::vector<float> all = y;
    all.insert(all.end(), dx.begin(), dx.end());
    all.insert(all.end(), dw.begin(), dw.end());
    return all;
  };
  const std::vector<float> f32 = run(LinearPrecision::F32), bf16 = run(LinearPrecision::Bf16);
  ASSERT_EQ(f32.size(), bf16.size());
  double worst = 0;
  for (size_t i = 0; i < f32.size(); i++) worst = std::max(worst, static_cast<double>(std::fabs(f32[i] - bf16[i])));
  EXPECT_GT(worst, 0.0);
  EXPECT_LT(worst, 0.05 * std::sqrt(static_cast<double>(std::max(T, std::max(K, N)))) * 0.1);
}

ModelConfig small_llama() {
  ModelConfig c;
  c.arch = Arch::Llama;
  c.vocab_size = 32, c.dim = 64, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 16, c.rope_dim = 16;
  c.ffn_dim = 96, c.context_length = 64;
  return c;
}

// Whole-model gradients in bf16 mode: the same bits for 1 and 2 threads, and pointing where fp32's do.
TEST(GemmBf16, ModelGradientsAreDeterministicAndCloseToFp32) {
  const ModelConfig cfg = small_llama();
  std::vector<int32_t> tokens;
  for (int i = 0; i < 40; i++) tokens.push_back((i * 7 + 3) % cfg.vocab_size);
  const TrainSequence s = TrainSequence::causal(tokens);
  std::vector<int32_t> targets(tokens.begin() + 1, tokens.end());
  targets.push_back(-1);
  auto grads = [&](LinearPrecision p, int threads) {
    set_linear_precision(p);
    set_num_threads(threads);
    TrainableModel m(cfg);
    m.init_random(3);
    std::vector<float> d(tokens.size() * cfg.vocab_size);
    cross_entropy_mean(m.forward(s), static_cast<int64_t>(tokens.size()), cfg.vocab_size, targets.data(), d.data());
    m.zero_grad();
    m.backward(d.data());
    set_linear_precision(LinearPrecision::F32);
    return std::vector<float>(m.grad_data(), m.grad_data() + m.n_params());
  };
  const std::vector<float> f32 = grads(LinearPrecision::F32, 1);
  const std::vector<float> bf16 = grads(LinearPrecision::Bf16, 1);
  EXPECT_EQ(bf16, grads(LinearPrecision::Bf16, 2));
  double dot = 0, n1 = 0, n2 = 0;
  for (size_t i = 0; i < f32.size(); i++) dot += f32[i] * bf16[i], n1 += f32[i] * f32[i], n2 += bf16[i] * bf16[i];
  EXPECT_GT(dot / std::sqrt(n1 * n2), 0.995);
  EXPECT_NE(f32, bf16);
}

// Adam on a repeating sequence: bf16 mode learns it as fp32 does (3.36 -> 0.006 for both; asserted: a
// 100-fold fall, and within 1.5x of fp32's final loss).
TEST(GemmBf16, TrainingInBf16LearnsAsFp32Does) {
  const ModelConfig cfg = small_llama();
  std::vector<int32_t> tokens;
  for (int i = 0; i < 48; i++) tokens.push_back(std::vector<int32_t>{3, 17, 5, 29, 11, 2}[i % 6]);
  const TrainSequence s = TrainSequence::causal(tokens);
  std::vector<int32_t> targets(tokens.begin() + 1, tokens.end());
  targets.push_back(-1);
  auto train = [&](LinearPrecision p) {
    set_linear_precision(p);
    TrainableModel m(cfg);
    m.init_random(1);
    std::vector<float> d(tokens.size() * cfg.vocab_size), mom(m.n_params(), 0.0f), var(m.n_params(), 0.0f);
    float first = 0, last = 0;
    for (int step = 1; step <= 120; step++) {
      last = cross_entropy_mean(m.forward(s), static_cast<int64_t>(tokens.size()), cfg.vocab_size, targets.data(),
                                d.data());
      if (step == 1) first = last;
      m.zero_grad();
      m.backward(d.data());
      const float lr = 3e-3f, b1 = 0.9f, b2 = 0.999f;
      for (int64_t i = 0; i < m.n_params(); i++) {
        const float g = m.grad_data()[i];
        mom[i] = b1 * mom[i] + (1 - b1) * g;
        var[i] = b2 * var[i] + (1 - b2) * g * g;
        const float mh = mom[i] / (1 - std::pow(b1, step)), vh = var[i] / (1 - std::pow(b2, step));
        m.param_data()[i] -= lr * mh / (std::sqrt(vh) + 1e-8f);
      }
    }
    set_linear_precision(LinearPrecision::F32);
    return std::pair<float, float>(first, last);
  };
  const auto [f32_first, f32_last] = train(LinearPrecision::F32);
  const auto [bf16_first, bf16_last] = train(LinearPrecision::Bf16);
  EXPECT_LT(bf16_last, bf16_first / 100) << "bf16 loss " << bf16_first << " -> " << bf16_last;
  EXPECT_LT(bf16_last, 1.5f * f32_last + 0.01f) << "fp32 " << f32_first << " -> " << f32_last;
}
}  // namespace
}  // namespace jf
