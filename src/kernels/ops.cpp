#include "kernels/ops.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "kernels/cpu.h"
#include "kernels/dtype.h"

namespace jf {

namespace scalar {

void rmsnorm(const float* x, const float* g, int64_t n, float eps, float* out) {
  float ss = 0.0f;
  for (int64_t i = 0; i < n; i++) ss += x[i] * x[i];
  ss = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; i++) out[i] = g[i] * (ss * x[i]);
}

void silu_mul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float v = gate[i];
    gate[i] = v * (1.0f / (1.0f + std::exp(-v))) * up[i];
  }
}

void gelu_tanh_mul(float* gate, const float* up, int64_t n) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  for (int64_t i = 0; i < n; i++) {
    const float x = gate[i];
    gate[i] = 0.5f * x * (1.0f + std::tanh(k * (x + 0.044715f * x * x * x))) * up[i];
  }
}

void softcap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; i++) x[i] = cap * std::tanh(x[i] / cap);
}

namespace {

float to_f32(float x) { return x; }
float to_f32(uint16_t h) { return f16_to_f32(h); }

}  // namespace

template <class E>
void attend_head(const float* q, const E* keys, const E* v, int64_t v_stride, int head_dim, const int32_t* slots,
                 int64_t n, float scale, float* scores, float* out, float cap) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; j++) {
    float s = 0.0f;
    for (int d = 0; d < head_dim; d++) s += q[d] * to_f32(keys[key_offset(slots[j], d, head_dim)]);
    scores[j] = s * scale;
    if (cap > 0.0f) softcap(scores + j, 1, cap);
    if (scores[j] > mx) mx = scores[j];
  }
  float sum = 0.0f;
  for (int64_t j = 0; j < n; j++) {
    scores[j] = std::exp(scores[j] - mx);
    sum += scores[j];
  }
  for (int d = 0; d < head_dim; d++) out[d] = 0.0f;
  for (int64_t j = 0; j < n; j++) {
    const E* vj = v + slots[j] * v_stride;
    for (int d = 0; d < head_dim; d++) out[d] += scores[j] * to_f32(vj[d]);
  }
  const float inv = 1.0f / sum;
  for (int d = 0; d < head_dim; d++) out[d] *= inv;
}
template void attend_head(const float*, const float*, const float*, int64_t, int, const int32_t*, int64_t, float,
                          float*, float*, float);
template void attend_head(const float*, const uint16_t*, const uint16_t*, int64_t, int, const int32_t*, int64_t, float,
                          float*, float*, float);

int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; i++)
    if (x[i] > x[best] || std::isnan(x[best])) best = i;
  return best;
}

}  // namespace scalar

void rmsnorm(const float* x, const float* g, int64_t n, float eps, float* out) {
  if (active_isa() != Isa::Scalar) return avx2::rmsnorm(x, g, n, eps, out);
  scalar::rmsnorm(x, g, n, eps, out);
}

void silu_mul(float* gate, const float* up, int64_t n) {
  if (active_isa() != Isa::Scalar) return avx2::silu_mul(gate, up, n);
  scalar::silu_mul(gate, up, n);
}

void gelu_tanh_mul(float* gate, const float* up, int64_t n) {
  if (active_isa() != Isa::Scalar) return avx2::gelu_tanh_mul(gate, up, n);
  scalar::gelu_tanh_mul(gate, up, n);
}

void softcap(float* x, int64_t n, float cap) {
  if (active_isa() != Isa::Scalar) return avx2::softcap(x, n, cap);
  scalar::softcap(x, n, cap);
}

void attend_head(const float* q, const float* keys, const float* v, int64_t v_stride, int head_dim,
                 const int32_t* slots, int64_t n, float scale, float* scores, float* out) {
  attend_group(q, 1, keys, v, v_stride, head_dim, slots, n, scale, scores, out);
}

template <class E>
void attend_group(const float* q, int heads, const E* keys, const E* v, int64_t v_stride, int head_dim,
                  const int32_t* slots, int64_t n, float scale, float* scores, float* out, float cap) {
  JF_CHECK(heads >= 1 && heads <= kMaxGroup, "attention group size out of range");
  switch (active_isa()) {
    case Isa::Avx512:
      return avx512::attend_group(q, heads, keys, v, v_stride, head_dim, slots, n, scale, scores, out, cap);
    case Isa::Avx2:
    case Isa::Avx2Vnni:
      return avx2::attend_group(q, heads, keys, v, v_stride, head_dim, slots, n, scale, scores, out, cap);
    case Isa::Scalar: break;
  }
  for (int h = 0; h < heads; h++)
    scalar::attend_head(q + h * head_dim, keys, v, v_stride, head_dim, slots, n, scale, scores,
                        out + h * head_dim, cap);
}
template void attend_group(const float*, int, const float*, const float*, int64_t, int, const int32_t*, int64_t, float,
                            float*, float*, float);
template void attend_group(const float*, int, const uint16_t*, const uint16_t*, int64_t, int, const int32_t*, int64_t,
                            float, float*, float*, float);

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] += x[i];
}

void rope(float* v, int n_heads, int head_dim, int rope_dim, const float* cos, const float* sin, RopeStyle style) {
  const int half = rope_dim / 2;
  for (int h = 0; h < n_heads; h++) {
    float* x = v + h * head_dim;
    for (int i = 0; i < half; i++) {
      const int a = style == RopeStyle::Interleaved ? 2 * i : i;
      const int b = style == RopeStyle::Interleaved ? 2 * i + 1 : i + half;
      const float x0 = x[a], x1 = x[b];
      x[a] = x0 * cos[i] - x1 * sin[i];
      x[b] = x0 * sin[i] + x1 * cos[i];
    }
  }
}

int64_t argmax(const float* x, int64_t n) {
  if (active_isa() != Isa::Scalar) return avx2::argmax(x, n);
  return scalar::argmax(x, n);
}

void softmax_top_k(const float* x, int64_t n, int k, int32_t* ids, float* probs) {
  if (k <= 0 || n <= 0) return;
  k = static_cast<int>(std::min<int64_t>(k, n));
  const float top = x[argmax(x, n)];
  // Insertion into a sorted list of k: a vocabulary scanned once, k small (a draft tree's width).
  int held = 0;
  double sum = 0;
  for (int64_t i = 0; i < n; i++) {
    const float v = std::isnan(x[i]) ? -INFINITY : x[i];
    sum += std::exp(static_cast<double>(v) - top);
    if (held == k && !(v > probs[k - 1])) continue;
    int at = held < k ? held++ : k - 1;
    while (at > 0 && v > probs[at - 1]) {
      probs[at] = probs[at - 1], ids[at] = ids[at - 1];
      at--;
    }
    probs[at] = v, ids[at] = static_cast<int32_t>(i);
  }
  for (int j = 0; j < k; j++) probs[j] = static_cast<float>(std::exp(static_cast<double>(probs[j]) - top) / sum);
}

}  // namespace jf
