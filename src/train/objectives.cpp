#include "train/objectives.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "train/layers.h"

namespace jf {

std::string objective_name(Objective o) {
  switch (o) {
    case Objective::JacobiForcing: return "jacobi-forcing";
    case Objective::Cllm: return "cllm";
    case Objective::Ar: return "ar";
  }
  return "?";
}

bool objective_from_name(const std::string& s, Objective* out) {
  for (Objective o : {Objective::JacobiForcing, Objective::Cllm, Objective::Ar})
    if (s == objective_name(o)) {
      *out = o;
      return true;
    }
  return false;
}

std::vector<int32_t> clean_stream_targets(const PackedSequence& p) {
  std::vector<int32_t> targets(p.tokens.size(), -1);
  std::vector<int> stream;  // row indices of the clean stream, in text order
  for (int i = 0; i < p.context_len; i++) stream.push_back(i);
  for (int k = 0; k < p.blocks(); k++)
    for (int t = 0; t < p.n; t++) stream.push_back(p.clean_begin(k) + t);
  for (size_t i = 0; i + 1 < stream.size(); i++) targets[stream[i]] = p.tokens[stream[i + 1]];
  return targets;
}

namespace {

void softmax(const float* logits, int V, float* out) {
  const float mx = *std::max_element(logits, logits + V);
  float sum = 0.0f;
  for (int v = 0; v < V; v++) sum += (out[v] = std::exp(logits[v] - mx));
  for (int v = 0; v < V; v++) out[v] /= sum;
}

// AR term over the clean stream: plain or label-smoothed cross-entropy, mean over targets, times `weight`.
double clean_ar_loss(const PackedSequence& p, const float* logits, int V, float weight, float smoothing,
                     float* dlogits, int64_t* count) {
  const std::vector<int32_t> targets = clean_stream_targets(p);
  *count = std::count_if(targets.begin(), targets.end(), [](int32_t t) { return t >= 0; });
  if (*count == 0) return 0.0;
  const float w = weight / static_cast<float>(*count);
  std::vector<float> smooth(static_cast<size_t>(smoothing > 0 ? V : 0));
  double total = 0;
  for (size_t r = 0; r < targets.size(); r++) {
    if (targets[r] < 0) continue;
    const float* l = logits + r * V;
    float* d = dlogits + r * V;
    if (smoothing > 0) {
      std::fill(smooth.begin(), smooth.end(), smoothing / V);
      smooth[targets[r]] += 1.0f - smoothing;
      total += soft_cross_entropy(l, smooth.data(), V, w, d);
    } else {
      total += cross_entropy(l, V, targets[r], w, d);
    }
  }
  return total / static_cast<double>(*count);
}

}  // namespace

LossReport packed_loss(Objective obj, const PackedSequence& p, const float* logits, int V, const ObjectiveOptions& o,
                       float* dlogits) {
  JF_CHECK(obj != Objective::Ar, "packed_loss is for the Jacobi objectives");
  const size_t T = p.tokens.size();
  std::fill(dlogits, dlogits + T * V, 0.0f);
  LossReport r;
  const float smoothing = obj == Objective::Cllm ? o.label_smoothing : 0.0f;
  r.ar = clean_ar_loss(p, logits, V, o.ar_weight, smoothing, dlogits, &r.ar_tokens);

  // Consistency: noisy row t of block k (t >= first mismatch) against the detached clean row t.
  int counted_blocks = 0;
  for (int k = 0; k < p.blocks(); k++) counted_blocks += p.first_mismatch[k] < p.n;
  std::vector<float> teacher(static_cast<size_t>(V));
  for (int k = 0; k < p.blocks() && counted_blocks > 0; k++) {
    const int fm = p.first_mismatch[k], positions = p.n - fm;
    if (positions <= 0) continue;
    const float w = 1.0f / static_cast<float>(positions * counted_blocks);
    for (int t = fm; t < p.n; t++) {
      softmax(logits + static_cast<size_t>(p.clean_begin(k) + t) * V, V, teacher.data());
      float kl = 0.0f;
      const size_t row = static_cast<size_t>(p.noisy_begin(k) + t);
      soft_cross_entropy(logits + row * V, teacher.data(), V, w, dlogits + row * V, &kl);
      r.consistency += static_cast<double>(kl) * w;
      r.consistency_positions++;
    }
  }
  r.total = r.consistency + o.ar_weight * r.ar;
  return r;
}

LossReport lm_loss(const std::vector<int32_t>& tokens, const float* logits, int V, float* dlogits) {
  std::vector<int32_t> targets(tokens.size(), -1);
  for (size_t i = 0; i + 1 < tokens.size(); i++) targets[i] = tokens[i + 1];
  LossReport r;
  r.ar = cross_entropy_mean(logits, static_cast<int64_t>(tokens.size()), V, targets.data(), dlogits);
  r.ar_tokens = tokens.empty() ? 0 : static_cast<int64_t>(tokens.size()) - 1;
  r.total = r.ar;
  return r;
}

}  // namespace jf
