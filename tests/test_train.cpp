// Training forward/backward: every op's backward against central finite differences, the whole model's
// gradients, agreement with the inference forward, a smoke training run, determinism and a throughput probe.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "base/error.h"
#include "base/rng.h"
#include "kernels/parallel.h"
#include "model/model.h"
#include "model/random_model.h"
#include "model/transformer.h"
#include "test_support.h"
#include "train/gemm.h"
#include "train/layers.h"
#include "train/trainable_model.h"

namespace jf {
namespace {

// ---------------------------------------------------------------- helpers

std::vector<float> random_vec(int64_t n, uint64_t seed, float scale = 1.0f) {
  Rng r(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = scale * (2.0f * r.uniform() - 1.0f);
  return v;
}

double dot(const float* a, const std::vector<float>& r) {
  double s = 0.0;
  for (size_t i = 0; i < r.size(); i++) s += static_cast<double>(a[i]) * r[i];
  return s;
}

float max_abs(const float* x, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; i++) m = std::max(m, std::fabs(x[i]));
  return m;
}

// Gradient-check bound: |numeric - analytic| <= kRelTol * max(|numeric|, |analytic|, floor) + abs_tol, where
// floor is 1% of the largest analytic gradient of the tensor (entries near zero are judged on the tensor's
// scale) and abs_tol covers the rounding noise of fp32 forwards in the central difference (0 for single ops;
// for the whole model with eps = 1e-2 that noise measures ~3e-4, against gradients of order 1 to 30).
constexpr double kRelTol = 1e-2;
constexpr float kEps = 1e-2f;

// Central differences of loss() at x[i] for each i in idx, against analytic[i].
void check_gradient(const std::string& what, const std::function<double()>& loss, float* x, const float* analytic,
                    int64_t n, const std::vector<int64_t>& idx, double abs_tol = 0.0) {
  const double floor = 1e-2 * max_abs(analytic, n);
  double worst = 0.0;
  for (int64_t i : idx) {
    const float orig = x[i], up = orig + kEps, down = orig - kEps;
    x[i] = up;
    const double lp = loss();
    x[i] = down;
    const double lm = loss();
    x[i] = orig;
    const double numeric = (lp - lm) / (static_cast<double>(up) - static_cast<double>(down));
    const double scale = std::max({std::fabs(numeric), std::fabs(static_cast<double>(analytic[i])), floor});
    const double err = std::fabs(numeric - analytic[i]);
    worst = std::max(worst, err / std::max(scale, 1e-30));
    EXPECT_LE(err, kRelTol * scale + abs_tol) << what << "[" << i << "]: analytic " << analytic[i] << ", numeric " << numeric;
  }
  ::testing::Test::RecordProperty(what, std::to_string(worst));
}

std::vector<int64_t> all_indices(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) v[i] = i;
  return v;
}

// ---------------------------------------------------------------- gemm

TEST(Gemm, MatchesReferenceForRaggedShapesAndStrides) {
  for (auto [M, N, K] : {std::tuple{1, 1, 1}, {3, 17, 5}, {8, 32, 9}, {13, 70, 33}, {20, 49, 64}}) {
    for (bool transposed : {false, true}) {
      auto a = random_vec(M * K, 1), b = random_vec(K * N, 2), c = random_vec(M * N, 3);
      std::vector<float> got = c;
      const int64_t a_ms = transposed ? 1 : K, a_ks = transposed ? M : 1;
      gemm_accumulate(true, M, N, K, a.data(), a_ms, a_ks, b.data(), N, got.data(), N);
      for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
          double s = c[m * N + n];
          for (int k = 0; k < K; k++) s += static_cast<double>(a[m * a_ms + k * a_ks]) * b[k * N + n];
          ASSERT_NEAR(got[m * N + n], s, 1e-5 * (1 + std::fabs(s))) << M << "x" << N << "x" << K << " at " << m << "," << n;
        }
    }
  }
}

// ---------------------------------------------------------------- ops vs finite differences

TEST(OpGradients, Linear) {
  const int64_t T = 11, K = 37, N = 19;  // ragged against the gemm tiles
  auto x = random_vec(T * K, 1), w = random_vec(N * K, 2, 0.3f), b = random_vec(N, 3), r = random_vec(T * N, 4);
  std::vector<float> out(T * N), dx(T * K, 0.0f), dw(N * K, 0.0f), db(N, 0.0f);
  auto loss = [&] {
    linear_forward(out.data(), x.data(), w.data(), b.data(), T, K, N);
    return dot(out.data(), r);
  };
  linear_backward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), T, K, N);
  check_gradient("linear dx", loss, x.data(), dx.data(), T * K, all_indices(T * K));
  check_gradient("linear dw", loss, w.data(), dw.data(), N * K, all_indices(N * K));
  check_gradient("linear db", loss, b.data(), db.data(), N, all_indices(N));
}

TEST(OpGradients, EmbeddingScatterAddsRepeatedTokens) {
  const int64_t V = 10, C = 6, T = 7;
  const std::vector<int32_t> tokens = {3, 1, 3, 9, 0, 3, 1};
  auto table = random_vec(V * C, 1), r = random_vec(T * C, 2);
  std::vector<float> out(T * C), dtable(V * C, 0.0f);
  auto loss = [&] {
    embedding_forward(out.data(), tokens.data(), T, table.data(), C);
    return dot(out.data(), r);
  };
  embedding_backward(dtable.data(), r.data(), tokens.data(), T, C);
  check_gradient("embedding dtable", loss, table.data(), dtable.data(), V * C, all_indices(V * C));
}

TEST(OpGradients, RmsNorm) {
  const int64_t T = 4, C = 33;
  auto x = random_vec(T * C, 1, 2.0f), g = random_vec(C, 2), r = random_vec(T * C, 3);
  std::vector<float> out(T * C), rstd(T), dx(T * C, 0.0f), dg(C, 0.0f);
  auto loss = [&] {
    rmsnorm_forward(out.data(), rstd.data(), x.data(), g.data(), T, C, 1e-5f);
    return dot(out.data(), r);
  };
  loss();
  rmsnorm_backward(dx.data(), dg.data(), r.data(), x.data(), g.data(), rstd.data(), T, C);
  check_gradient("rmsnorm dx", loss, x.data(), dx.data(), T * C, all_indices(T * C));
  check_gradient("rmsnorm dg", loss, g.data(), dg.data(), C, all_indices(C));
}

TEST(OpGradients, RopeBothStylesAndPartialRotation) {
  for (RopeStyle style : {RopeStyle::Interleaved, RopeStyle::Neox}) {
    for (int rope_dim : {8, 6}) {
      const int64_t T = 3;
      const RopeShape shape{2, 8, rope_dim, style};
      const int64_t n = T * 2 * 8, half = rope_dim / 2;
      auto angles = random_vec(T * half, 7, 3.0f);
      std::vector<float> cos(T * half), sin(T * half);
      for (int64_t i = 0; i < T * half; i++) cos[i] = std::cos(angles[i]), sin[i] = std::sin(angles[i]);
      auto x = random_vec(n, 1), r = random_vec(n, 2);
      std::vector<float> tmp(n);
      auto loss = [&] {
        tmp = x;
        rope_forward(tmp.data(), T, shape, cos.data(), sin.data());
        return dot(tmp.data(), r);
      };
      std::vector<float> dx = r;
      rope_backward(dx.data(), T, shape, cos.data(), sin.data());
      check_gradient("rope dx", loss, x.data(), dx.data(), n, all_indices(n));
    }
  }
}

TEST(OpGradients, SwiGlu) {
  const int64_t n = 64;
  auto gate = random_vec(n, 1, 5.0f), up = random_vec(n, 2, 2.0f), r = random_vec(n, 3);
  std::vector<float> h(n), dgate(n, 0.0f), dup(n, 0.0f);
  auto loss = [&] {
    swiglu_forward(h.data(), gate.data(), up.data(), n);
    return dot(h.data(), r);
  };
  swiglu_backward(dgate.data(), dup.data(), r.data(), gate.data(), up.data(), n);
  check_gradient("swiglu dgate", loss, gate.data(), dgate.data(), n, all_indices(n));
  check_gradient("swiglu dup", loss, up.data(), dup.data(), n, all_indices(n));
}

// Two interleaved streams at shared positions: X_n (index 2n) sees X_m and Y_m for m <= n — including Y_n,
// which comes later in the packing (not causal) — and Y_n (index 2n+1) sees Y_m for m <= n only.
VisibilityMask two_stream_mask(int T) {
  VisibilityMask m;
  m.reset(T);
  for (int i = 0; i < T; i++)
    for (int j = 0; j < T; j++) {
      const bool x_query = i % 2 == 0, x_key = j % 2 == 0;
      const int ni = i / 2, nj = j / 2;
      if (nj <= ni && (x_query || !x_key)) m.set(i, j);
    }
  return m;
}

// Reference attention in double: out[i][h] = sum_j softmax_j(q.k / sqrt(hd)) v_j over visible j.
std::vector<double> reference_attention(const std::vector<float>& q, const std::vector<float>& k,
                                        const std::vector<float>& v, const VisibilityMask& mask,
                                        const AttentionShape& s) {
  const int64_t hd = s.head_dim, qd = s.n_heads * hd, kvd = s.n_kv_heads * hd;
  std::vector<double> out(s.T * qd, 0.0);
  for (int64_t i = 0; i < s.T; i++)
    for (int h = 0; h < s.n_heads; h++) {
      const int kvh = h / (s.n_heads / s.n_kv_heads);
      std::vector<double> w(s.T, 0.0);
      double mx = -1e300, sum = 0.0;
      for (int64_t j = 0; j < s.T; j++) {
        if (!mask.get(i, j)) continue;
        double d = 0;
        for (int64_t c = 0; c < hd; c++) d += static_cast<double>(q[i * qd + h * hd + c]) * k[j * kvd + kvh * hd + c];
        w[j] = d / std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, w[j]);
      }
      for (int64_t j = 0; j < s.T; j++) sum += mask.get(i, j) ? (w[j] = std::exp(w[j] - mx)) : (w[j] = 0.0);
      for (int64_t j = 0; j < s.T; j++)
        for (int64_t c = 0; c < hd; c++) out[i * qd + h * hd + c] += w[j] / sum * v[j * kvd + kvh * hd + c];
    }
  return out;
}

void check_attention(const VisibilityMask& mask, const AttentionShape& s) {
  const int64_t qd = s.n_heads * s.head_dim, kvd = s.n_kv_heads * s.head_dim;
  auto q = random_vec(s.T * qd, 1, 1.5f), k = random_vec(s.T * kvd, 2, 1.5f), v = random_vec(s.T * kvd, 3);
  auto r = random_vec(s.T * qd, 4);
  std::vector<float> out(s.T * qd), probs(s.n_heads * s.T * s.T);
  AttentionScratch scratch;
  auto loss = [&] {
    attention_forward(out.data(), probs.data(), q.data(), k.data(), v.data(), mask, s, scratch);
    return dot(out.data(), r);
  };
  loss();
  const std::vector<double> ref = reference_attention(q, k, v, mask, s);
  for (size_t i = 0; i < ref.size(); i++) ASSERT_NEAR(out[i], ref[i], 1e-5) << "attention output " << i;
  for (int64_t row = 0; row < s.n_heads * s.T; row++) {
    double sum = 0;
    for (int64_t j = 0; j < s.T; j++) {
      const float p = probs[row * s.T + j];
      if (!mask.get(static_cast<int>(row % s.T), static_cast<int>(j))) {
        ASSERT_EQ(p, 0.0f);
      }
      sum += p;
    }
    ASSERT_NEAR(sum, 1.0, 1e-5);
  }
  std::vector<float> dq(q.size(), 0.0f), dk(k.size(), 0.0f), dv(v.size(), 0.0f);
  attention_backward(dq.data(), dk.data(), dv.data(), r.data(), q.data(), k.data(), v.data(), probs.data(), mask, s,
                     scratch);
  check_gradient("attention dq", loss, q.data(), dq.data(), q.size(), all_indices(q.size()));
  check_gradient("attention dk", loss, k.data(), dk.data(), k.size(), all_indices(k.size()));
  check_gradient("attention dv", loss, v.data(), dv.data(), v.size(), all_indices(v.size()));
}

TEST(OpGradients, AttentionCausalGqa) {
  VisibilityMask mask;
  mask.make_causal(13);
  check_attention(mask, AttentionShape{13, 4, 2, 8});
}

TEST(OpGradients, AttentionTwoStreamDagMaskGqa) {
  check_attention(two_stream_mask(14), AttentionShape{14, 6, 2, 8});
  check_attention(two_stream_mask(10), AttentionShape{10, 2, 1, 4});  // one kv head shared by all
}

TEST(OpGradients, CrossEntropy) {
  const int64_t V = 13;
  auto logits = random_vec(V, 1, 3.0f);
  std::vector<float> d(V);
  const float loss0 = cross_entropy(logits.data(), V, 5, 0.5f, d.data());
  double lse = 0;
  for (float x : logits) lse += std::exp(static_cast<double>(x));
  EXPECT_NEAR(loss0, std::log(lse) - logits[5], 1e-5);
  for (auto& x : d) x /= 0.5f;  // dlogits carry the weight
  auto loss = [&] { return static_cast<double>(cross_entropy(logits.data(), V, 5, 1.0f, nullptr)); };
  check_gradient("cross-entropy dlogits", loss, logits.data(), d.data(), V, all_indices(V));
}

TEST(OpGradients, SoftCrossEntropyAndKl) {
  const int64_t V = 11;
  auto logits = random_vec(V, 1, 3.0f), t = random_vec(V, 2, 2.0f);
  std::vector<float> p(V);
  double z = 0;
  for (float x : t) z += std::exp(x);
  z -= std::exp(t[3]);  // a zero-probability entry contributes nothing
  for (int64_t v = 0; v < V; v++) p[v] = v == 3 ? 0.0f : static_cast<float>(std::exp(t[v]) / z);
  std::vector<float> d(V);
  float kl = -1.0f;
  const float ce = soft_cross_entropy(logits.data(), p.data(), V, 2.0f, d.data(), &kl);
  double entropy = 0;
  for (float x : p)
    if (x > 0) entropy -= x * std::log(static_cast<double>(x));
  EXPECT_NEAR(kl, ce - entropy, 1e-5);
  EXPECT_GT(kl, 0.0f);
  for (auto& x : d) x /= 2.0f;
  auto loss = [&] { return static_cast<double>(soft_cross_entropy(logits.data(), p.data(), V, 1.0f, nullptr)); };
  check_gradient("soft cross-entropy dlogits", loss, logits.data(), d.data(), V, all_indices(V));
  // KL(p || p) = 0 and the gradient vanishes at the teacher.
  std::vector<float> logp(V);
  for (int64_t v = 0; v < V; v++) logp[v] = std::log(std::max(p[v], 1e-30f));
  soft_cross_entropy(logp.data(), p.data(), V, 1.0f, d.data(), &kl);
  EXPECT_NEAR(kl, 0.0f, 1e-5);
  EXPECT_LT(max_abs(d.data(), V), 1e-6f);
}

TEST(OpGradients, CrossEntropyMeanIgnoresNegativeTargets) {
  const int64_t T = 4, V = 7;
  auto logits = random_vec(T * V, 1, 2.0f);
  const std::vector<int32_t> targets = {2, -1, 6, 0};
  std::vector<float> d(T * V, 9.0f);
  const float mean = cross_entropy_mean(logits.data(), T, V, targets.data(), d.data());
  float expect = 0;
  for (int t : {0, 2, 3}) expect += cross_entropy(&logits[t * V], V, targets[t], 1.0f, nullptr) / 3.0f;
  EXPECT_NEAR(mean, expect, 1e-6);
  for (int64_t v = 0; v < V; v++) EXPECT_EQ(d[V + v], 0.0f);
  auto loss = [&] { return static_cast<double>(cross_entropy_mean(logits.data(), T, V, targets.data(), nullptr)); };
  check_gradient("mean cross-entropy dlogits", loss, logits.data(), d.data(), T * V, all_indices(T * V));
}

// ---------------------------------------------------------------- whole model

ModelConfig tiny_llama() {  // GQA, untied output, interleaved RoPE
  ModelConfig c;
  c.arch = Arch::Llama;
  c.vocab_size = 61, c.dim = 32, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 8, c.ffn_dim = 48;
  c.context_length = 128, c.rope_dim = 8;
  return c;
}

ModelConfig tiny_qwen2() {  // biases, tied output, Neox RoPE, one kv head
  ModelConfig c;
  c.arch = Arch::Qwen2;
  c.vocab_size = 53, c.dim = 24, c.n_layers = 2, c.n_heads = 3, c.n_kv_heads = 1, c.head_dim = 8, c.ffn_dim = 40;
  c.context_length = 128, c.rope_dim = 8, c.rope_theta = 1e6f, c.norm_eps = 1e-6f;
  c.attn_bias = true, c.tied_output = true, c.rope_style = RopeStyle::Neox;
  return c;
}

ModelConfig small(ModelConfig c) {  // big enough for the tiled and threaded paths
  c.dim = 64, c.n_heads = 8, c.head_dim = 8, c.ffn_dim = 160, c.vocab_size = 300;
  return c;
}

std::vector<int32_t> random_tokens(int n, int vocab, uint64_t seed) {
  Rng r(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(r.below(vocab));
  return t;
}

// A Jacobi-style packing: two streams of n tokens each at positions p0..p0+n-1, interleaved.
TrainSequence two_stream_sequence(int n, int vocab, int p0, uint64_t seed) {
  TrainSequence s;
  s.tokens = random_tokens(2 * n, vocab, seed);
  for (int i = 0; i < 2 * n; i++) s.positions.push_back(p0 + i / 2);
  s.mask = two_stream_mask(2 * n);
  return s;
}

void check_model_gradients(const ModelConfig& cfg, const TrainSequence& seq) {
  TrainableModel m = TrainableModel::from_tensors(cfg, random_tensors(cfg, DType::F32, 7));
  const int64_t V = m.config().vocab_size, T = static_cast<int64_t>(seq.tokens.size());
  const auto r = random_vec(T * V, 11);
  auto loss = [&] { return dot(m.forward(seq), r); };
  loss();
  m.zero_grad();
  m.backward(r.data());
  Rng pick(5);
  for (const TrainableModel::Param& p : m.params()) {
    std::vector<int64_t> idx = {static_cast<int64_t>(std::max_element(p.grad, p.grad + p.size, [](float a, float b) {
                                  return std::fabs(a) < std::fabs(b);
                                }) - p.grad)};
    for (int i = 0; i < 6; i++) idx.push_back(pick.below(static_cast<uint32_t>(p.size)));
    check_gradient(p.name, loss, p.data, p.grad, p.size, idx, 1e-3);  // forwards leave the gradients alone
  }
}

TEST(ModelGradients, LlamaGqaUntiedCausal) {
  check_model_gradients(tiny_llama(), TrainSequence::causal(random_tokens(9, 61, 3)));
}

TEST(ModelGradients, LlamaGqaUntiedTwoStreamMask) {
  check_model_gradients(tiny_llama(), two_stream_sequence(5, 61, 4, 3));
}

TEST(ModelGradients, Qwen2BiasesTiedNeox) {
  check_model_gradients(tiny_qwen2(), two_stream_sequence(5, 53, 2, 4));
  check_model_gradients(tiny_qwen2(), TrainSequence::causal(random_tokens(8, 53, 4)));
}

TEST(TrainableModel, ParamsAreExactlyTheGgufTensors) {
  ModelConfig with_rope_freqs = tiny_llama();
  with_rope_freqs.rope_freq_factors = {1.0f, 1.0f, 2.0f, 4.0f};
  for (ModelConfig cfg : {tiny_llama(), tiny_qwen2(), with_rope_freqs}) {
    TrainableModel m(cfg);
    const TensorSet ts = random_tensors(cfg, DType::F32, 1);
    std::vector<std::string> names;
    int64_t total = 0;
    for (const auto& p : m.params()) {
      names.push_back(p.name);
      total += p.size;
      const TensorRef* t = ts.find(p.name);
      ASSERT_TRUE(t) << p.name;
      EXPECT_EQ(t->dims, p.dims) << p.name;
    }
    // rope_freqs is a constant of the config: written by to_tensor_set, not a trainable parameter.
    std::vector<std::string> want = tensor_names(cfg);
    std::erase(want, "rope_freqs.weight");
    EXPECT_EQ(names, want);
    EXPECT_EQ(total, m.n_params());
    const TensorSet out = m.to_tensor_set(DType::F32);
    EXPECT_EQ(out.tensors.size(), tensor_names(cfg).size());
    for (const std::string& n : tensor_names(cfg)) EXPECT_TRUE(out.find(n)) << n;
  }
}

TEST(TrainableModel, TensorRoundTripAndDequantization) {
  const ModelConfig cfg = small(tiny_llama());  // dims multiples of the Q8_0 block
  TrainableModel a(cfg);
  a.init_random(3);
  TrainableModel b = TrainableModel::from_tensors(cfg, a.to_tensor_set(DType::F32));
  ASSERT_EQ(a.n_params(), b.n_params());
  for (int64_t i = 0; i < a.n_params(); i++) ASSERT_EQ(a.param_data()[i], b.param_data()[i]);
  // Any dtype is dequantized to what the inference kernels would see.
  const TensorSet q8 = a.to_tensor_set(DType::Q8_0);
  TrainableModel c = TrainableModel::from_tensors(cfg, q8);
  for (const auto& p : c.params()) {
    const TensorRef* t = q8.find(p.name);
    std::vector<float> want(static_cast<size_t>(p.size));
    dequantize_row(t->type, t->data, want.data(), p.size);
    for (int64_t i = 0; i < p.size; i++) ASSERT_EQ(p.data[i], want[i]) << p.name;
  }
}

TEST(TrainableModel, InitRandomIsSensible) {
  TrainableModel m(tiny_llama());
  m.init_random(9);
  for (const auto& p : m.params()) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < p.size; i++) sum += p.data[i], sq += p.data[i] * p.data[i];
    const double mean = sum / p.size, sd = std::sqrt(sq / p.size - mean * mean);
    if (p.name.ends_with("norm.weight")) {
      EXPECT_EQ(mean, 1.0) << p.name;
    } else if (p.name.ends_with("attn_output.weight") || p.name.ends_with("ffn_down.weight")) {
      EXPECT_NEAR(sd, 0.01, 0.003) << p.name;  // 0.02 / sqrt(2 * 2 layers)
    } else {
      EXPECT_NEAR(sd, 0.02, 0.004) << p.name;
    }
  }
}

TEST(TrainableModel, RejectsBadSequences) {
  TrainableModel m(tiny_llama());
  TrainSequence s = TrainSequence::causal({1, 2, 3});
  s.tokens[1] = 61;
  EXPECT_THROW(m.forward(s), Error);
  s = TrainSequence::causal({1, 2, 3});
  s.mask.set(1, 1, false);
  EXPECT_THROW(m.forward(s), Error);
  s = TrainSequence::causal({1, 2, 3});
  s.positions.pop_back();
  EXPECT_THROW(m.forward(s), Error);
  EXPECT_THROW(m.forward(TrainSequence{}), Error);
}

// ---------------------------------------------------------------- agreement with inference

// The inference forward (Transformer) on the same weights, tokens, positions and mask, all rows' logits.
std::vector<float> inference_logits(const ModelConfig& cfg, const TensorSet& ts, const TrainSequence& s) {
  Model model(cfg, ts, "memory");
  Transformer tf(model.config(), model.weights());
  KvCache cache(model.config(), static_cast<int>(s.tokens.size()));
  SequenceInput in;
  in.cache = &cache;
  in.tokens = s.tokens;
  in.positions = s.positions;
  in.mask = s.mask;
  for (int i = 0; i < static_cast<int>(s.tokens.size()); i++) in.logit_rows.push_back(i);
  const ForwardResult res = tf.forward(in);
  std::vector<float> out;
  for (int r = 0; r < res.rows(); r++) out.insert(out.end(), res.logits(r), res.logits(r) + res.vocab_size());
  return out;
}

// Logits within 1e-4 of the row's largest |logit| (relative to the row's scale).
void expect_same_logits(const ModelConfig& cfg, const TrainSequence& s) {
  const TensorSet ts = random_tensors(cfg, DType::F32, 21);
  TrainableModel m = TrainableModel::from_tensors(cfg, ts);
  const float* got = m.forward(s);
  const std::vector<float> want = inference_logits(cfg, ts, s);
  const int64_t V = m.config().vocab_size;
  double worst = 0;
  for (size_t row = 0; row < s.tokens.size(); row++) {
    const float scale = std::max(1.0f, max_abs(&want[row * V], V));
    for (int64_t v = 0; v < V; v++) {
      const double err = std::fabs(got[row * V + v] - want[row * V + v]) / scale;
      worst = std::max(worst, err);
      ASSERT_LE(err, 1e-4) << "row " << row << " vocab " << v << ": " << got[row * V + v] << " vs " << want[row * V + v];
    }
  }
  ::testing::Test::RecordProperty("worst_relative_difference", std::to_string(worst));
}

TEST(MatchesInference, LlamaCausal) {
  expect_same_logits(small(tiny_llama()), TrainSequence::causal(random_tokens(40, 300, 1)));
}

TEST(MatchesInference, Qwen2Causal) {
  ModelConfig c = small(tiny_qwen2());
  c.n_kv_heads = 2;
  expect_same_logits(c, TrainSequence::causal(random_tokens(40, 300, 2)));
}

TEST(MatchesInference, TwoStreamMaskWithSharedPositions) {
  expect_same_logits(small(tiny_llama()), two_stream_sequence(12, 300, 17, 3));
  expect_same_logits(small(tiny_qwen2()), two_stream_sequence(12, 300, 5, 4));
}

TEST(MatchesInference, RopeFrequencyFactorsScalingAndPartialRotation) {
  ModelConfig c = small(tiny_llama());
  c.rope_freq_factors = {1.0f, 2.0f, 4.0f, 8.0f};  // Llama-3.1 style, rope_dim / 2 entries
  c.rope_freq_scale = 0.5f;
  expect_same_logits(c, TrainSequence::causal(random_tokens(33, 300, 5)));
  ModelConfig q = small(tiny_qwen2());
  q.rope_dim = 4;  // rotates half of each head
  expect_same_logits(q, two_stream_sequence(10, 300, 0, 6));
}

TEST(TrainableModel, ShorterSequenceAfterLongerReusesBuffers) {
  const ModelConfig cfg = small(tiny_qwen2());
  const TensorSet ts = random_tensors(cfg, DType::F32, 2);
  TrainableModel warm = TrainableModel::from_tensors(cfg, ts), fresh = TrainableModel::from_tensors(cfg, ts);
  const TrainSequence longer = TrainSequence::causal(random_tokens(50, 300, 1));
  const TrainSequence shorter = two_stream_sequence(9, 300, 3, 2);
  std::vector<float> d(longer.tokens.size() * 300, 0.5f);
  warm.forward(longer);
  warm.backward(d.data());
  warm.zero_grad();
  const float* a = warm.forward(shorter);
  const float* b = fresh.forward(shorter);
  for (size_t i = 0; i < shorter.tokens.size() * 300; i++) ASSERT_EQ(a[i], b[i]) << i;
  warm.backward(d.data());
  fresh.backward(d.data());
  for (int64_t i = 0; i < warm.n_params(); i++) ASSERT_EQ(warm.grad_data()[i], fresh.grad_data()[i]) << i;
}

// ---------------------------------------------------------------- training smoke test and determinism

TEST(Training, AdamLearnsARepeatingSequence) {
  ModelConfig cfg = tiny_llama();
  cfg.vocab_size = 32;
  TrainableModel m(cfg);
  m.init_random(1);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 48; i++) tokens.push_back(std::vector<int32_t>{3, 17, 5, 29, 11, 2}[i % 6]);
  const TrainSequence s = TrainSequence::causal(tokens);
  std::vector<int32_t> targets(tokens.begin() + 1, tokens.end());
  targets.push_back(-1);
  std::vector<float> dlogits(tokens.size() * cfg.vocab_size), mom(m.n_params(), 0.0f), var(m.n_params(), 0.0f);
  float first = 0, last = 0;
  for (int step = 1; step <= 60; step++) {
    const float loss = cross_entropy_mean(m.forward(s), s.tokens.size(), cfg.vocab_size, targets.data(), dlogits.data());
    if (step == 1) first = loss;
    last = loss;
    m.zero_grad();
    m.backward(dlogits.data());
    const float lr = 1e-2f, b1 = 0.9f, b2 = 0.999f;
    for (int64_t i = 0; i < m.n_params(); i++) {  // Adam
      const float g = m.grad_data()[i];
      mom[i] = b1 * mom[i] + (1 - b1) * g;
      var[i] = b2 * var[i] + (1 - b2) * g * g;
      const float mh = mom[i] / (1 - std::pow(b1, step)), vh = var[i] / (1 - std::pow(b2, step));
      m.param_data()[i] -= lr * mh / (std::sqrt(vh) + 1e-8f);
    }
  }
  ::testing::Test::RecordProperty("first_loss", std::to_string(first));
  ::testing::Test::RecordProperty("last_loss", std::to_string(last));
  EXPECT_NEAR(first, std::log(32.0f), 0.1f);
  EXPECT_LT(last, first / 20) << "loss " << first << " -> " << last;
}

struct RunResult {
  std::vector<float> logits, grads;
};

RunResult forward_backward(const ModelConfig& cfg, const TrainSequence& s, int threads) {
  const int saved = num_threads();
  set_num_threads(threads);
  TrainableModel m = TrainableModel::from_tensors(cfg, random_tensors(cfg, DType::F32, 5));
  RunResult r;
  for (int rep = 0; rep < 2; rep++) {  // twice, accumulating: reuses the warmed-up buffers
    const float* l = m.forward(s);
    r.logits.assign(l, l + s.tokens.size() * cfg.vocab_size);
    std::vector<int32_t> targets(s.tokens.begin() + 1, s.tokens.end());
    targets.push_back(0);
    std::vector<float> d(r.logits.size());
    cross_entropy_mean(l, s.tokens.size(), cfg.vocab_size, targets.data(), d.data());
    m.backward(d.data());
  }
  r.grads.assign(m.grad_data(), m.grad_data() + m.n_params());
  set_num_threads(saved);
  return r;
}

TEST(Determinism, BitIdenticalGradientsForOneAndTwoThreads) {
  ModelConfig cfg = small(tiny_qwen2());
  cfg.dim = 128, cfg.n_heads = 8, cfg.n_kv_heads = 4, cfg.head_dim = 16, cfg.rope_dim = 16, cfg.ffn_dim = 256;
  cfg.vocab_size = 512;
  const TrainSequence s = two_stream_sequence(48, cfg.vocab_size, 3, 8);
  const RunResult a = forward_backward(cfg, s, 1), b = forward_backward(cfg, s, 1);
  const RunResult c = forward_backward(cfg, s, 2), d = forward_backward(cfg, s, 2);
  for (const RunResult* x : {&b, &c, &d}) {
    ASSERT_EQ(a.logits.size(), x->logits.size());
    for (size_t i = 0; i < a.logits.size(); i++) ASSERT_EQ(a.logits[i], x->logits[i]) << "logit " << i;
    for (size_t i = 0; i < a.grads.size(); i++) ASSERT_EQ(a.grads[i], x->grads[i]) << "gradient " << i;
  }
}

// ---------------------------------------------------------------- throughput (JF_TRAIN_BENCH=1 to run)

}  // namespace
}  // namespace jf
