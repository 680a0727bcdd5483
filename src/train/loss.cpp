// Losses on logits rows — cross-entropy against a token, soft cross-entropy / KL against a teacher
// distribution — each returning the loss and writing dL/dlogits.
#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.h"
#include "kernels/parallel.h"
#include "train/layers.h"
#include "train/train_math.h"

namespace jf {
namespace {

// probs = softmax(logits) (probs may be null: not stored); returns log(sum_v exp(logits_v - max)) + max.
float log_softmax_normaliser(const float* logits, int64_t V, float* probs) {
  const float mx = train_math::max(logits, V);
  thread_local std::vector<float> scratch;  // for probs == nullptr
  if (!probs) {
    if (scratch.size() < static_cast<size_t>(V)) scratch.resize(static_cast<size_t>(V));
    probs = scratch.data();
  }
  for (int64_t v = 0; v < V; v++) probs[v] = train_math::exp(logits[v] - mx);
  const float sum = train_math::sum(probs, V);
  const float inv = 1.0f / sum;
  for (int64_t v = 0; v < V; v++) probs[v] *= inv;
  return mx + std::log(sum);
}

}  // namespace

float cross_entropy(const float* logits, int64_t V, int32_t target, float weight, float* dlogits) {
  JF_CHECK(target >= 0 && target < V, "cross-entropy target outside the vocabulary");
  const float lse = log_softmax_normaliser(logits, V, dlogits);
  if (dlogits) {
    for (int64_t v = 0; v < V; v++) dlogits[v] *= weight;
    dlogits[target] -= weight;
  }
  return lse - logits[target];
}

float soft_cross_entropy(const float* logits, const float* p_teacher, int64_t V, float weight, float* dlogits,
                         float* kl) {
  const float lse = log_softmax_normaliser(logits, V, dlogits);
  // -sum p log q = sum p (lse - logit); entropy terms with p = 0 are 0.
  float ce = 0.0f;
  for (int64_t v = 0; v < V; v++)
    if (p_teacher[v] > 0.0f) ce += p_teacher[v] * (lse - logits[v]);
  if (kl) {
    float entropy = 0.0f;
    for (int64_t v = 0; v < V; v++)
      if (p_teacher[v] > 0.0f) entropy -= p_teacher[v] * std::log(p_teacher[v]);
    *kl = ce - entropy;
  }
  if (dlogits)
    for (int64_t v = 0; v < V; v++) dlogits[v] = weight * (dlogits[v] - p_teacher[v]);
  return ce;
}

float cross_entropy_mean(const float* logits, int64_t T, int64_t V, const int32_t* targets, float* dlogits) {
  int64_t counted = 0;
  for (int64_t t = 0; t < T; t++) counted += targets[t] >= 0;
  const float weight = counted > 0 ? 1.0f / static_cast<float>(counted) : 0.0f;
  thread_local std::vector<float> row_loss;
  row_loss.assign(static_cast<size_t>(T), 0.0f);
  float* losses = row_loss.data();  // the caller's buffer (a thread_local name would mean another in workers)
  parallel_for(T, T * V >= (1 << 15), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      float* d = dlogits ? dlogits + t * V : nullptr;
      if (targets[t] >= 0) {
        losses[t] = cross_entropy(logits + t * V, V, targets[t], weight, d);
      } else if (d) {
        std::fill(d, d + V, 0.0f);
      }
    }
  });
  float total = 0.0f;
  for (int64_t t = 0; t < T; t++) total += losses[t];  // in row order: independent of the thread count
  return total * weight;
}

}  // namespace jf
