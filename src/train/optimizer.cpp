#include "train/optimizer.h"

#include <cmath>

#include "base/error.h"
#include "kernels/parallel.h"

namespace jf {

float cosine_lr(int64_t step, int64_t total, int64_t warmup, float peak, float floor) {
  if (warmup > 0 && step < warmup) return peak * static_cast<float>(step + 1) / static_cast<float>(warmup);
  const int64_t span = std::max<int64_t>(1, total - warmup);
  const double progress = std::min(1.0, static_cast<double>(step - warmup) / static_cast<double>(span));
  return static_cast<float>(floor + 0.5 * (peak - floor) * (1.0 + std::cos(M_PI * progress)));
}

double clip_grad_norm(std::span<float* const> grads, std::span<const int64_t> sizes, float max_norm) {
  double ss = 0;
  for (size_t i = 0; i < grads.size(); i++)
    for (int64_t j = 0; j < sizes[i]; j++) ss += static_cast<double>(grads[i][j]) * grads[i][j];
  const double norm = std::sqrt(ss);
  if (max_norm > 0 && norm > max_norm) {
    const float scale = static_cast<float>(max_norm / (norm + 1e-6));
    for (size_t i = 0; i < grads.size(); i++)
      for (int64_t j = 0; j < sizes[i]; j++) grads[i][j] *= scale;
  }
  return norm;
}

AdamW::AdamW(std::span<const int64_t> sizes, const AdamWOptions& o) : o_(o) {
  for (int64_t n : sizes) {
    m_.emplace_back(static_cast<size_t>(n), 0.0f);
    v_.emplace_back(static_cast<size_t>(n), 0.0f);
  }
}

void AdamW::set_anchor(std::vector<std::vector<float>> anchor) {
  JF_CHECK(anchor.size() == m_.size(), "anchor tensor count differs from the parameters");
  for (size_t i = 0; i < anchor.size(); i++) JF_CHECK(anchor[i].size() == m_[i].size(), "anchor tensor size differs");
  anchor_ = std::move(anchor);
}

void AdamW::step(std::span<float* const> params, std::span<float* const> grads, std::span<const bool> decay, float lr) {
  JF_CHECK(params.size() == m_.size() && grads.size() == m_.size(), "parameter count changed");
  JF_CHECK(o_.anchor_decay <= 0 || !anchor_.empty(), "anchor decay without anchor weights");
  t_++;
  const float b1 = o_.beta1, b2 = o_.beta2;
  const float c1 = 1.0f - std::pow(b1, static_cast<float>(t_)), c2 = 1.0f - std::pow(b2, static_cast<float>(t_));
  for (size_t i = 0; i < params.size(); i++) {
    float* p = params[i];
    const float* g = grads[i];
    float* m = m_[i].data();
    float* v = v_[i].data();
    const float wd = decay.empty() || decay[i] ? o_.weight_decay : 0.0f;
    const int64_t n = static_cast<int64_t>(m_[i].size());
    const float ad = o_.anchor_decay;
    const float* a = ad > 0 ? anchor_[i].data() : nullptr;
    parallel_for(n, n >= (1 << 16), [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; j++) {
        m[j] = b1 * m[j] + (1.0f - b1) * g[j];
        v[j] = b2 * v[j] + (1.0f - b2) * g[j] * g[j];
        const float mh = m[j] / c1, vh = v[j] / c2;
        p[j] -= lr * (mh / (std::sqrt(vh) + o_.eps) + wd * p[j] + (a ? ad * (p[j] - a[j]) : 0.0f));
      }
    });
  }
}

}  // namespace jf
