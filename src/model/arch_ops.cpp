#include "model/arch_ops.h"

#include <algorithm>
#include <cmath>

#include "kernels/dtype.h"
#include "kernels/ops.h"

namespace jf {

void head_rmsnorm(float* v, int n_heads, int head_dim, const float* weight, float eps) {
  for (int h = 0; h < n_heads; h++) rmsnorm(v + int64_t{h} * head_dim, weight, head_dim, eps, v + int64_t{h} * head_dim);
}

namespace {
inline float element(float x) { return x; }
inline float element(uint16_t x) { return f16_to_f32(x); }
}  // namespace

template <class E>
void attend_softcapped(const float* q, const E* keys, const E* v, int head_dim, const int32_t* slots, int64_t n,
                       float scale, float cap, float* scores, float* out) {
  float max = -INFINITY;
  for (int64_t j = 0; j < n; j++) {
    float dot = 0.0f;
    for (int i = 0; i < head_dim; i++) dot += q[i] * element(keys[key_offset(slots[j], i, head_dim)]);
    scores[j] = dot * scale;
  }
  softcap(scores, n, cap);
  for (int64_t j = 0; j < n; j++) max = std::max(max, scores[j]);
  float sum = 0.0f;
  for (int64_t j = 0; j < n; j++) {
    scores[j] = std::exp(scores[j] - max);
    sum += scores[j];
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < head_dim; i++) out[i] = 0.0f;
  for (int64_t j = 0; j < n; j++) {
    const E* row = v + int64_t{slots[j]} * head_dim;
    const float p = scores[j] * inv;
    for (int i = 0; i < head_dim; i++) out[i] += p * element(row[i]);
  }
}

template void attend_softcapped<float>(const float*, const float*, const float*, int, const int32_t*, int64_t, float,
                                       float, float*, float*);
template void attend_softcapped<uint16_t>(const float*, const uint16_t*, const uint16_t*, int, const int32_t*, int64_t,
                                          float, float, float*, float*);

}  // namespace jf
