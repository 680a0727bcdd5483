// Branch-free exp and sigmoid, and fixed-order row reductions, for the training kernels: plain float code the
// compiler vectorises inside loops (std::exp is a library call that it cannot), so softmax and SiLU run at SIMD speed.
#pragma once
#include <bit>
#include <cstdint>
#include <limits>

namespace jf::train_math {

// exp(x) with relative error ~2e-7 (Cephes range reduction + degree-5 polynomial, as kernels/simd_avx2.h).
// x < -87.3 (including -inf) gives 0; x > 88.3 gives inf (like std::exp); NaN is not propagated.
inline float exp(float x) {
  const float hi = 88.3762626647949f, lo = -87.3365478515625f;
  const bool under = x < lo;
  x = x < lo ? lo : (x > hi ? hi : x);
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (round to nearest in the default rounding mode).
  const float shifter = 12582912.0f;
  const float n = (x * 1.44269504088896341f + shifter) - shifter;
  float r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + (r + 1.0f);
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return under ? 0.0f : p * scale;
}

// 1 / (1 + exp(-x)).
inline float sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

// Reductions over a row in a fixed order that vectorises: kLanes interleaved partials (element j goes to
// partial j % kLanes), combined in a fixed pairwise tree, so the result depends only on n and the data.
constexpr int kLanes = 16;

inline float combine_sum(float* part) {
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int l = 0; l < w; l++) part[l] += part[l + w];
  return part[0];
}

// sum_j a[j] * b[j].
inline float dot(const float* a, const float* b, int64_t n) {
  float part[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; l++) part[l] += a[j + l] * b[j + l];
  for (int l = 0; j + l < n; l++) part[l] += a[j + l] * b[j + l];
  return combine_sum(part);
}

// sum_j a[j].
inline float sum(const float* a, int64_t n) {
  float part[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; l++) part[l] += a[j + l];
  for (int l = 0; j + l < n; l++) part[l] += a[j + l];
  return combine_sum(part);
}

// max_j a[j] (-inf when n == 0).
inline float max(const float* a, int64_t n) {
  float part[kLanes];
  for (float& p : part) p = -std::numeric_limits<float>::infinity();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; l++) part[l] = a[j + l] > part[l] ? a[j + l] : part[l];
  for (int l = 0; j + l < n; l++) part[l] = a[j + l] > part[l] ? a[j + l] : part[l];
  for (int w = kLanes / 2; w > 0; w /= 2)
    for (int l = 0; l < w; l++) part[l] = part[l + w] > part[l] ? part[l + w] : part[l];
  return part[0];
}

}  // namespace jf::train_math
