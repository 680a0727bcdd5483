// Masked multi-head attention with GQA over one packed sequence: forward (saving the softmax probabilities)
// and backward, each head's products done by the register-tiled gemm over blocks of query (or key) rows.
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "kernels/parallel.h"
#include "train/gemm.h"
#include "train/layers.h"
#include "train/train_math.h"

namespace jf {
namespace {

constexpr int64_t kBlock = 8;  // query rows (forward, dq) or key rows (dk, dv) per work item

// Visible key range of every query row and visible query range of every key column, and whether a row's
// range has holes (masked keys inside it, handled by the softmax). Throws if a token does not see itself.
void build_ranges(const VisibilityMask& mask, int64_t T, AttentionScratch& s) {
  JF_CHECK(mask.size() == T, "attention mask size differs from the token count");
  s.row_begin.assign(T, static_cast<int32_t>(T));
  s.row_end.assign(T, 0);
  s.col_begin.assign(T, static_cast<int32_t>(T));
  s.col_end.assign(T, 0);
  s.row_has_holes.assign(T, 0);
  for (int32_t i = 0; i < T; i++) {
    JF_CHECK(mask.get(i, i), "a token must see itself");
    int32_t visible = 0;
    for (int32_t j = 0; j < T; j++) {
      if (!mask.get(i, j)) continue;
      visible++;
      s.row_begin[i] = std::min(s.row_begin[i], j);
      s.row_end[i] = j + 1;
      s.col_begin[j] = std::min(s.col_begin[j], i);
      s.col_end[j] = i + 1;
    }
    s.row_has_holes[i] = visible < s.row_end[i] - s.row_begin[i];
  }
}

// Union of the ranges [begin[i], end[i]) over i in [i0, i1).
void block_range(const std::vector<int32_t>& begin, const std::vector<int32_t>& end, int64_t i0, int64_t i1,
                 int64_t* lo, int64_t* hi) {
  *lo = begin[i0], *hi = end[i0];
  for (int64_t i = i0 + 1; i < i1; i++) *lo = std::min<int64_t>(*lo, begin[i]), *hi = std::max<int64_t>(*hi, end[i]);
}

// Turns row i's raw scores q.k (valid on [b, e)) into probabilities over its visible keys; 0 elsewhere.
void softmax_row(float* row, int64_t i, int64_t T, int64_t b, int64_t e, const AttentionScratch& s,
                 const VisibilityMask& mask, float scale) {
  std::fill(row, row + b, 0.0f);
  std::fill(row + e, row + T, 0.0f);
  if (s.row_has_holes[i])
    for (int64_t j = b; j < e; j++)
      if (!mask.get(static_cast<int>(i), static_cast<int>(j))) row[j] = -INFINITY;
  for (int64_t j = b; j < e; j++) row[j] *= scale;
  const float mx = train_math::max(row + b, e - b);
  for (int64_t j = b; j < e; j++) row[j] = train_math::exp(row[j] - mx);  // masked: exp(-inf) = 0
  const float inv = 1.0f / train_math::sum(row + b, e - b);
  for (int64_t j = b; j < e; j++) row[j] *= inv;
}

// Runs fn(head or kv head, first row, end row) over all (head, row block) pairs in parallel.
template <class F>
void for_head_blocks(int64_t n_heads, int64_t T, int64_t work, F&& fn) {
  const int64_t blocks = (T + kBlock - 1) / kBlock;
  parallel_for(n_heads * blocks, work >= (1 << 16), [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) {
      const int64_t h = u / blocks, r0 = (u % blocks) * kBlock;
      fn(static_cast<int>(h), r0, std::min(T, r0 + kBlock));
    }
  });
}

}  // namespace

void attention_forward(float* out, float* probs, const float* q, const float* k, const float* v,
                       const VisibilityMask& mask, const AttentionShape& s, AttentionScratch& scratch) {
  const int64_t T = s.T, hd = s.head_dim, qd = s.n_heads * hd, kvd = s.n_kv_heads * hd;
  const int group = s.n_heads / s.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));  // as the inference forward
  build_ranges(mask, T, scratch);
  scratch.kt.resize(static_cast<size_t>(kvd * T));
  transpose(T * kvd >= (1 << 15), T, kvd, k, scratch.kt.data());
  for_head_blocks(s.n_heads, T, T * T * qd, [&](int h, int64_t i0, int64_t i1) {
    const int64_t kvh = h / group;
    int64_t jlo, jhi;
    block_range(scratch.row_begin, scratch.row_end, i0, i1, &jlo, &jhi);
    // scores[i][j] = q_i . k_j  for the block's rows, keys [jlo, jhi)
    float* P = probs + (h * T + i0) * T;
    for (int64_t i = i0; i < i1; i++) std::fill(P + (i - i0) * T + jlo, P + (i - i0) * T + jhi, 0.0f);
    gemm_accumulate(false, i1 - i0, jhi - jlo, hd, q + i0 * qd + h * hd, qd, 1, scratch.kt.data() + kvh * hd * T + jlo,
                    T, P + jlo, T);
    for (int64_t i = i0; i < i1; i++)
      softmax_row(P + (i - i0) * T, i, T, scratch.row_begin[i], scratch.row_end[i], scratch, mask, scale);
    // out_i = sum_j P[i][j] v_j
    float* O = out + i0 * qd + h * hd;
    for (int64_t i = i0; i < i1; i++) std::fill(O + (i - i0) * qd, O + (i - i0) * qd + hd, 0.0f);
    gemm_accumulate(false, i1 - i0, hd, jhi - jlo, P + jlo, T, 1, v + jlo * kvd + kvh * hd, kvd, O, qd);
  });
}

namespace {

// dS[i][j] = scale * P[i][j] * (dP[i][j] - sum_j' P[i][j'] dP[i][j']) on [lo, hi), where the row holds dP
// on entry; 0 outside [lo, hi).
void softmax_backward_row(float* row, const float* p, int64_t T, int64_t lo, int64_t hi, float scale) {
  const float dot = train_math::dot(p + lo, row + lo, hi - lo);
  for (int64_t j = lo; j < hi; j++) row[j] = scale * (p[j] * (row[j] - dot));
  std::fill(row, row + lo, 0.0f);
  std::fill(row + hi, row + T, 0.0f);
}

}  // namespace

void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* q, const float* k,
                        const float* v, const float* probs, const VisibilityMask& mask, const AttentionShape& s,
                        AttentionScratch& scratch) {
  const int64_t T = s.T, hd = s.head_dim, qd = s.n_heads * hd, kvd = s.n_kv_heads * hd;
  const int group = s.n_heads / s.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  build_ranges(mask, T, scratch);
  scratch.vt.resize(static_cast<size_t>(kvd * T));
  transpose(T * kvd >= (1 << 15), T, kvd, v, scratch.vt.data());
  scratch.dscores.resize(static_cast<size_t>(s.n_heads * T * T));
  float* dS_all = scratch.dscores.data();

  // Pass 1, by query rows: dP = dout V^T, dS = softmax backward, dq += dS K.
  for_head_blocks(s.n_heads, T, T * T * qd, [&](int h, int64_t i0, int64_t i1) {
    const int64_t kvh = h / group;
    int64_t jlo, jhi;
    block_range(scratch.row_begin, scratch.row_end, i0, i1, &jlo, &jhi);
    float* dS = dS_all + (h * T + i0) * T;
    const float* P = probs + (h * T + i0) * T;
    for (int64_t i = i0; i < i1; i++) std::fill(dS + (i - i0) * T + jlo, dS + (i - i0) * T + jhi, 0.0f);
    gemm_accumulate(false, i1 - i0, jhi - jlo, hd, dout + i0 * qd + h * hd, qd, 1,
                    scratch.vt.data() + kvh * hd * T + jlo, T, dS + jlo, T);
    for (int64_t i = i0; i < i1; i++) softmax_backward_row(dS + (i - i0) * T, P + (i - i0) * T, T, jlo, jhi, scale);
    gemm_accumulate(false, i1 - i0, hd, jhi - jlo, dS + jlo, T, 1, k + jlo * kvd + kvh * hd, kvd, dq + i0 * qd + h * hd, qd);
  });

  // Pass 2, by key rows (each kv head's keys owned by one work item): dk += dS^T Q, dv += P^T dout,
  // summed over the query heads of the group in order.
  for_head_blocks(s.n_kv_heads, T, T * T * qd, [&](int kvh, int64_t j0, int64_t j1) {
    int64_t ilo, ihi;
    block_range(scratch.col_begin, scratch.col_end, j0, j1, &ilo, &ihi);
    for (int h = kvh * group; h < (kvh + 1) * group; h++) {
      gemm_accumulate(false, j1 - j0, hd, ihi - ilo, dS_all + (h * T + ilo) * T + j0, 1, T, q + ilo * qd + h * hd, qd,
                      dk + j0 * kvd + kvh * hd, kvd);
      gemm_accumulate(false, j1 - j0, hd, ihi - ilo, probs + (h * T + ilo) * T + j0, 1, T, dout + ilo * qd + h * hd,
                      qd, dv + j0 * kvd + kvh * hd, kvd);
    }
  });
}

}  // namespace jf
