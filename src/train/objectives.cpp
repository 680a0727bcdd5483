#include "train/objectives.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"
#include "kernels/parallel.h"
#include "train/layers.h"

namespace jf {

std::string objective_name(Objective o) {
  switch (o) {
    case Objective::JacobiForcing: return "jacobi-forcing";
    case Objective::Cllm: return "cllm";
    case Objective::Ar: return "ar";
    case Objective::DraftHead: return "draft-head";
  }
  return "?";
}

bool objective_from_name(const std::string& s, Objective* out) {
  for (Objective o : {Objective::JacobiForcing, Objective::Cllm, Objective::Ar, Objective::DraftHead})
    if (s == objective_name(o)) {
      *out = o;
      return true;
    }
  return false;
}

std::string consistency_norm_name(ConsistencyNorm c) {
  return c == ConsistencyNorm::Reference ? "reference" : "per-block";
}

bool consistency_norm_from_name(const std::string& s, ConsistencyNorm* out) {
  for (ConsistencyNorm c : {ConsistencyNorm::Reference, ConsistencyNorm::PerBlock})
    if (s == consistency_norm_name(c)) {
      *out = c;
      return true;
    }
  return false;
}

std::string OffsetReport::summary() const {
  std::string kls = "KL ", top1 = "top-1 ";
  char b[32];
  for (int i = 0; i < kOffsetBuckets; i++) {
    const char* sep = i ? "/" : "";
    if (rows[i] == 0) {
      kls += std::string(sep) + "-";
      top1 += std::string(sep) + "-";
      continue;
    }
    std::snprintf(b, sizeof b, "%s%.2f", sep, kl[i] / static_cast<double>(rows[i]));
    kls += b;
    std::snprintf(b, sizeof b, "%s%.2f", sep, static_cast<double>(match[i]) / static_cast<double>(rows[i]));
    top1 += b;
  }
  return kls + ", " + top1;
}

std::vector<int32_t> clean_stream_targets(const PackedSequence& p) {
  std::vector<int32_t> targets(p.tokens.size(), -1);
  std::vector<int> stream;  // row indices of the clean stream, in text order
  for (int i = 0; i < p.context_len; i++) stream.push_back(i);
  for (int k = 0; k < p.blocks(); k++)
    for (int t = 0; t < p.valid(k); t++) stream.push_back(p.clean_begin(k) + t);  // up to EOS, not its padding
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

// AR term over the clean stream, mean over targets, times `weight`: cross-entropy against the target token,
// label-smoothed, and/or mixed with the frozen teacher's distribution on the row (teacher may be null).
// Adds the mean KL(teacher || student) over the rows to *teacher_kl.
double clean_ar_loss(const PackedSequence& p, const float* logits, int V, float weight, float smoothing,
                     const float* teacher, float teacher_mix, float* dlogits, int64_t* count, double* teacher_kl) {
  const std::vector<int32_t> targets = clean_stream_targets(p);
  *count = std::count_if(targets.begin(), targets.end(), [](int32_t t) { return t >= 0; });
  if (*count == 0) return 0.0;
  const float w = weight / static_cast<float>(*count);
  const bool soft = smoothing > 0 || teacher;
  std::vector<float> target(static_cast<size_t>(soft ? V : 0)), tp(static_cast<size_t>(teacher ? V : 0)), scratch(tp.size());
  double total = 0;
  for (size_t r = 0; r < targets.size(); r++) {
    if (targets[r] < 0) continue;
    const float* l = logits + r * V;
    float* d = dlogits + r * V;
    if (!soft) {
      total += cross_entropy(l, V, targets[r], w, d);
      continue;
    }
    const float hard = teacher ? 1.0f - teacher_mix : 1.0f;
    std::fill(target.begin(), target.end(), hard * smoothing / V);
    target[targets[r]] += hard * (1.0f - smoothing);
    if (teacher) {
      softmax(teacher + r * V, V, tp.data());
      for (int v = 0; v < V; v++) target[v] += teacher_mix * tp[v];
      float kl = 0;
      soft_cross_entropy(l, tp.data(), V, 0.0f, scratch.data(), &kl);
      *teacher_kl += kl / static_cast<double>(*count);
    }
    total += soft_cross_entropy(l, target.data(), V, w, d);
  }
  return total / static_cast<double>(*count);
}

}  // namespace

namespace {
// Rows at and after EOS are excluded: the clean row there predicts what follows EOS (padding).
int consistency_end(const PackedSequence& p, int k) { return p.valid(k) < p.n ? p.valid(k) - 1 : p.n; }
}  // namespace

std::vector<int32_t> consistency_rows(const PackedSequence& p) {
  std::vector<int32_t> rows;
  for (int k = 0; k < p.blocks(); k++)
    for (int t = p.first_mismatch[k]; t < consistency_end(p, k); t++) rows.push_back(p.noisy_begin(k) + t);
  return rows;
}

int32_t draft_source_row(const PackedSequence& p, int32_t row) {
  const int k = (row - p.context_len) / (2 * p.n), t = row - p.noisy_begin(k);
  JF_CHECK(row >= p.context_len && k < p.blocks() && t < p.n, "not a noisy row");
  if (t > 0) return row - 1;
  if (k > 0) return p.clean_begin(k - 1) + p.n - 1;
  return p.context_len > 0 ? p.context_len - 1 : -1;
}

std::vector<DraftChainRow> draft_chain_rows(const PackedSequence& p, int depth) {
  std::vector<DraftChainRow> rows;
  std::vector<int32_t> last(static_cast<size_t>(p.blocks()), -1);  // each block's row of the step before
  for (int step = 1; step <= depth; step++)
    for (int k = 0; k < p.blocks(); k++) {
      const int fm = p.first_mismatch[k];
      if (fm + step >= consistency_end(p, k) || (step > 1 && last[k] < 0)) continue;
      const int32_t from = draft_source_row(p, p.noisy_begin(k) + fm);
      if (from < 0) continue;
      rows.push_back({from, p.tokens[static_cast<size_t>(p.clean_begin(k) + fm + step)], p.noisy_begin(k) + fm + step,
                      last[k]});
      last[k] = static_cast<int32_t>(rows.size()) - 1;
    }
  return rows;
}

LossReport packed_loss(Objective obj, const PackedSequence& p, const float* logits, int V, const ObjectiveOptions& o,
                       float* dlogits, const float* teacher_logits) {
  JF_CHECK(obj == Objective::JacobiForcing || obj == Objective::Cllm, "packed_loss is for jacobi-forcing and cllm");
  const size_t T = p.tokens.size();
  std::fill(dlogits, dlogits + T * V, 0.0f);
  LossReport r;
  const float smoothing = obj == Objective::Cllm ? o.label_smoothing : 0.0f;
  JF_CHECK(teacher_logits || !o.teacher_consistency, "teacher consistency needs the teacher's logits");
  r.ar = clean_ar_loss(p, logits, V, o.ar_weight, smoothing, teacher_logits, o.teacher_mix, dlogits, &r.ar_tokens,
                       &r.teacher_kl);

  // Consistency: noisy row t of block k (t >= first mismatch) against the detached clean row t.
  auto end = [&](int k) { return consistency_end(p, k); };
  auto row_weight = [&](int offset) {
    if (o.consistency_rows > 0 && offset >= o.consistency_rows) return 0.0f;
    return std::pow(o.consistency_decay, static_cast<float>(offset));
  };
  // Normalisers: the sum of row weights over the sequence (reference) or per block (per-block).
  std::vector<double> block_sum(static_cast<size_t>(p.blocks()), 0.0);
  double total_sum = 0;
  int counted_blocks = 0;
  for (int k = 0; k < p.blocks(); k++) {
    for (int t = p.first_mismatch[k]; t < end(k); t++) block_sum[k] += row_weight(t - p.first_mismatch[k]);
    total_sum += block_sum[k];
    counted_blocks += block_sum[k] > 0;
  }
  std::vector<float> target(static_cast<size_t>(V)), scratch(static_cast<size_t>(V));
  for (int k = 0; k < p.blocks(); k++) {
    const int fm = p.first_mismatch[k];
    for (int t = fm; t < end(k); t++) {
      const float* source = o.teacher_consistency ? teacher_logits : logits;
      const float* clean = source + static_cast<size_t>(p.clean_begin(k) + t) * V;
      softmax(clean, V, target.data());
      const size_t row = static_cast<size_t>(p.noisy_begin(k) + t);
      const float* noisy = logits + row * V;
      const float rw = row_weight(t - fm);
      const float w = rw == 0.0f ? 0.0f
                      : o.consistency_norm == ConsistencyNorm::Reference
                          ? rw / static_cast<float>(total_sum * p.blocks())
                          : rw / static_cast<float>(block_sum[k] * counted_blocks);
      float kl = 0.0f;
      soft_cross_entropy(noisy, target.data(), V, w, w > 0 ? dlogits + row * V : scratch.data(), &kl);
      const int bucket = std::min(t - fm, kOffsetBuckets - 1);
      r.by_offset.kl[bucket] += kl;
      r.by_offset.rows[bucket]++;
      r.by_offset.match[bucket] += std::max_element(noisy, noisy + V) == noisy + (std::max_element(clean, clean + V) - clean);
      if (w == 0.0f) continue;
      r.consistency += static_cast<double>(kl) * w;
      r.consistency_positions++;
    }
  }
  r.total = r.consistency + o.ar_weight * r.ar;
  return r;
}

LossReport text_loss(const std::vector<int32_t>& tokens, const float* logits, int V, float weight, float* dlogits,
                     const float* teacher_logits) {
  LossReport r;
  if (!teacher_logits) {
    r = lm_loss(tokens, logits, V, dlogits);
    const size_t n = tokens.size() * static_cast<size_t>(V);
    for (size_t i = 0; i < n; i++) dlogits[i] *= weight;
    r.text = r.ar, r.text_tokens = r.ar_tokens;
    r.ar = 0, r.ar_tokens = 0;
    r.total = weight * r.text;
    return r;
  }
  const int64_t T = static_cast<int64_t>(tokens.size());
  if (T == 0) return r;
  std::vector<float> probs(static_cast<size_t>(T) * V), row_kl(static_cast<size_t>(T));
  const float w = weight / static_cast<float>(T);
  parallel_for(T, T * V >= (1 << 15), [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; t++) {
      float* p = probs.data() + t * V;
      softmax(teacher_logits + t * V, V, p);
      soft_cross_entropy(logits + t * V, p, V, w, dlogits + t * V, &row_kl[static_cast<size_t>(t)]);
    }
  });
  for (float k : row_kl) r.text += k;  // in row order: independent of the thread count
  r.text /= static_cast<double>(T);
  r.text_tokens = T;
  r.total = weight * r.text;
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
