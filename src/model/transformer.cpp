#include "model/transformer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <type_traits>

#include "base/error.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/parallel.h"
#include "model/arch_ops.h"

namespace jf {

Transformer::Transformer(const ModelConfig& cfg, const ModelWeights& w) : cfg_(cfg), w_(w) {
  // Splitting rows between threads makes each thread read all weights: worth considering only while they
  // are cache-sized, where splitting every matrix may cost more in synchronisation than it saves.
  size_t bytes = 0;
  for (int l = 0; l < cfg.kv_layers(); l++)
    for (const WeightMatrix* m : layer_weights(l).matrices()) bytes += read_bytes(*m);
  row_parallel_ = bytes <= kRowParallelMaxBytes;
}

void Transformer::ensure_capacity(int64_t n, int64_t nl) {
  auto grow = [](aligned_vector<float>& v, int64_t size) {
    if (static_cast<int64_t>(v.size()) < size) v.resize(static_cast<size_t>(size));
  };
  grow(x_, n * cfg_.dim);
  grow(xb_, n * std::max(cfg_.dim, cfg_.q_dim()));
  grow(q_, n * cfg_.q_dim());
  grow(k_, n * cfg_.kv_dim());
  grow(v_, n * cfg_.kv_dim());
  grow(att_, n * cfg_.q_dim());
  grow(hg_, n * cfg_.ffn_dim);
  grow(hu_, n * cfg_.ffn_dim);
  grow(rope_cos_, n * cfg_.rope_dim / 2);
  grow(rope_sin_, n * cfg_.rope_dim / 2);
  if (cfg_.rope_theta_local > 0.0f) {
    grow(local_cos_, n * cfg_.rope_dim / 2);
    grow(local_sin_, n * cfg_.rope_dim / 2);
  }
  grow(logits_, nl * cfg_.vocab_size);
  if (w_.draft_output.data) grow(draft_logits_, nl * cfg_.vocab_size);
  if (w_.draft_output_norm) {
    grow(head_rows_, std::min<int64_t>(n, kHeadRows) * cfg_.vocab_size);
    grow(draft_in_, nl * cfg_.dim);
  }
}

// Rows [r0, r1): q, k, v = projections of norm(x) (+ bias), q and k normalised per head (qwen3, gemma3), RoPE
// on q and k (local layers with their own table), and k, v stored in the rows' cache slots.
void Transformer::qkv_rows(int l, int64_t r0, int64_t r1, bool threads) {
  const LayerWeights& L = layer_weights(l);
  const int dim = cfg_.dim, qd = cfg_.q_dim(), kvd = cfg_.kv_dim(), half = cfg_.rope_dim / 2;
  const int64_t m = r1 - r0;
  for (int64_t r = r0; r < r1; r++) rmsnorm(&x_[r * dim], L.attn_norm, dim, cfg_.norm_eps, &xb_[r * dim]);
  matmul_shared_input(&xb_[r0 * dim], m, {{&L.wq, &q_[r0 * qd]}, {&L.wk, &k_[r0 * kvd]}, {&L.wv, &v_[r0 * kvd]}}, threads);
  const bool local_rope = cfg_.rope_theta_local > 0.0f && local_layer(l);
  const float* cos = local_rope ? local_cos_.data() : rope_cos_.data();
  const float* sin = local_rope ? local_sin_.data() : rope_sin_.data();
  for (int64_t r = r0; r < r1; r++) {
    if (L.bq) add_inplace(&q_[r * qd], L.bq, qd);
    if (L.bk) add_inplace(&k_[r * kvd], L.bk, kvd);
    if (L.bv) add_inplace(&v_[r * kvd], L.bv, kvd);
    if (L.q_norm) head_rmsnorm(&q_[r * qd], cfg_.n_heads, cfg_.head_dim, L.q_norm, cfg_.norm_eps);
    if (L.k_norm) head_rmsnorm(&k_[r * kvd], cfg_.n_kv_heads, cfg_.head_dim, L.k_norm, cfg_.norm_eps);
    rope(&q_[r * qd], cfg_.n_heads, cfg_.head_dim, cfg_.rope_dim, cos + r * half, sin + r * half, cfg_.rope_style);
    rope(&k_[r * kvd], cfg_.n_kv_heads, cfg_.head_dim, cfg_.rope_dim, cos + r * half, sin + r * half, cfg_.rope_style);
    plan_.rows[r].cache->store_key(l, plan_.rows[r].slot, &k_[r * kvd]);
    plan_.rows[r].cache->store_value(l, plan_.rows[r].slot, &v_[r * kvd]);
  }
}

// Attention outputs for (row, kv head) units [u0, u1), unit u = row * n_kv_heads + kv head: the query heads
// of a GQA group go through attention together (they share the keys, values and slot list).
void Transformer::attend_units(int l, int64_t u0, int64_t u1) {
  const int hd = cfg_.head_dim, group = cfg_.n_heads / cfg_.n_kv_heads;
  const float scale = cfg_.attention_scale();
  const bool local = local_layer(l);
  thread_local aligned_vector<float> scores;
  for (int64_t u = u0; u < u1; u++) {
    const int64_t r = u / cfg_.n_kv_heads;
    const int kvh = static_cast<int>(u % cfg_.n_kv_heads);
    const PlannedRow& row = plan_.rows[r];
    const int32_t first = local ? row.local_begin : row.slots_begin;
    const int64_t nv = (local ? row.local_end : row.slots_end) - first;
    for (int h0 = 0; h0 < group; h0 += kMaxGroup) {
      const int heads = std::min(kMaxGroup, group - h0);
      if (static_cast<int64_t>(scores.size()) < attention_scratch(heads, nv))
        scores.resize(static_cast<size_t>(attention_scratch(heads, nv)));
      const int64_t at = r * cfg_.q_dim() + (int64_t{kvh} * group + h0) * hd;
      auto attend = [&](auto element) {  // the cache's element type
        using E = typename decltype(element)::type;
        attend_group(&q_[at], heads, row.cache->keys<E>(l, kvh), row.cache->values<E>(l, kvh), hd, hd,
                     &plan_.slot_list[first], nv, scale, scores.data(), &att_[at], cfg_.attn_softcap);
      };
      if (row.cache->type() == DType::F16)
        attend(std::type_identity<uint16_t>{});
      else
        attend(std::type_identity<float>{});
    }
  }
}

// Rows [r0, r1) after attention: x += Wo · att, then x += W_down · (act(W_gate·norm(x)) * W_up·norm(x)), act =
// SiLU (gemma: tanh GELU); gemma normalises each branch's output once more before adding it.
void Transformer::out_ffn_rows(int l, int64_t r0, int64_t r1, bool threads) {
  const LayerWeights& L = layer_weights(l);
  const int dim = cfg_.dim, qd = cfg_.q_dim(), ff = cfg_.ffn_dim;
  const int64_t m = r1 - r0;
  auto add_branch = [&](const float* post_norm) {
    for (int64_t r = r0; r < r1; r++) {
      if (post_norm) rmsnorm(&xb_[r * dim], post_norm, dim, cfg_.norm_eps, &xb_[r * dim]);
      add_inplace(&x_[r * dim], &xb_[r * dim], dim);
    }
  };
  matmul(&att_[r0 * qd], m, L.wo, &xb_[r0 * dim], threads);
  add_branch(L.post_attn_norm);
  for (int64_t r = r0; r < r1; r++) rmsnorm(&x_[r * dim], L.ffn_norm, dim, cfg_.norm_eps, &xb_[r * dim]);
  matmul_shared_input(&xb_[r0 * dim], m, {{&L.w_gate, &hg_[r0 * ff]}, {&L.w_up, &hu_[r0 * ff]}}, threads);
  for (int64_t r = r0; r < r1; r++) {
    if (cfg_.gemma())
      gelu_tanh_mul(&hg_[r * ff], &hu_[r * ff], ff);
    else
      silu_mul(&hg_[r * ff], &hu_[r * ff], ff);
  }
  matmul(&hg_[r0 * ff], m, L.w_down, &xb_[r0 * dim], threads);
  add_branch(L.post_ffn_norm);
}

void Transformer::run(std::span<SequenceInput* const> seqs) {
  JF_CHECK(!tree_.open(), "a forward before the last draft tree's end_tree()");
  plan_.build(cfg_, seqs);
  const int64_t n = static_cast<int64_t>(plan_.rows.size());
  const int64_t nl = static_cast<int64_t>(plan_.logit_src.size());
  // (a draft layer: one row more, for a draft chain's virtual row after the forward's rows)
  ensure_capacity(std::max<int64_t>(n, 1) + (w_.draft_output_norm ? 1 : 0), std::max<int64_t>(nl, 1));
  n_forwards_++;
  drafted_ = false;
  draft_state_.clear();
  draft_spans_.clear();
  if (n == 0) return;
  const int dim = cfg_.dim, half = cfg_.rope_dim / 2;

  // ---- embeddings and rotary angles
  const float embed_scale = cfg_.gemma() ? std::sqrt(static_cast<float>(dim)) : 1.0f;
  for (int64_t r = 0; r < n; r++) {
    float* x = &x_[r * dim];
    dequantize_row(w_.tok_embd.type, w_.tok_embd.row(plan_.rows[r].token), x, dim);
    if (embed_scale != 1.0f)
      for (int i = 0; i < dim; i++) x[i] *= embed_scale;
    const RopeTable table = rope_table(cfg_, plan_.rows[r].cache->capacity());
    rope_angles(table, cfg_.rope_dim, plan_.rows[r].pos, &rope_cos_[r * half], &rope_sin_[r * half]);
    if (cfg_.rope_theta_local > 0.0f)
      rope_angles(local_rope_table(cfg_), cfg_.rope_dim, plan_.rows[r].pos, &local_cos_[r * half], &local_sin_[r * half]);
  }

  // Small models: how to use the threads is measured (model/schedule.h); large ones split every matrix.
  const bool choose = row_parallel_ && num_threads() > 1;
  const MultiRowSchedule schedule = choose ? schedule_.choose(n) : MultiRowSchedule::SplitMatrices;
  const auto t0 = choose ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  for (int l = 0; l < cfg_.n_layers; l++) run_layer(l, schedule, 0, n);
  if (choose)
    schedule_.record(n, schedule, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  const bool threads = schedule != MultiRowSchedule::Serial;

  // ---- output head for the rows asked for; the draft layer on the rows of the sequences that draft from it
  // (model/draft_layer.cpp), with the output head over each of those rows: the layer's input is their greedy token
  find_draft_spans(seqs);
  const bool draft_pass = !draft_spans_.empty();
  n_draft_layer_runs_ += draft_pass;
  if (nl > 0) output_head(threads);
  if (draft_pass) draft_layer(schedule);
  if (nl > 0) prepare_drafts(seqs, threads);
}

// One layer over rows [first, end) (l == n_layers: the draft layer), its threads used as `schedule` says.
void Transformer::run_layer(int l, MultiRowSchedule schedule, int64_t first, int64_t end) {
  const int64_t n = end - first;
  if (schedule == MultiRowSchedule::SplitRows) {
    // Each thread takes a contiguous share of the rows through the layer (two jobs: attention needs every
    // row's keys and values first). A row's arithmetic is the same as in the other branch.
    const int64_t pieces = std::min<int64_t>(n, num_threads());
    auto rows_of = [&](int64_t c, auto&& fn) { fn(first + n * c / pieces, first + n * (c + 1) / pieces); };
    parallel_chunks(pieces, true, [&](int64_t c) {
      rows_of(c, [&](int64_t r0, int64_t r1) { qkv_rows(l, r0, r1, false); });
    });
    parallel_chunks(pieces, true, [&](int64_t c) {
      rows_of(c, [&](int64_t r0, int64_t r1) {
        attend_units(l, r0 * cfg_.n_kv_heads, r1 * cfg_.n_kv_heads);
        out_ffn_rows(l, r0, r1, false);
      });
    });
    return;
  }
  const bool threads = schedule != MultiRowSchedule::Serial;
  int64_t work = 0;  // attention multiply-adds, to decide whether threads pay
  for (int64_t r = first; r < end; r++) work += plan_.rows[static_cast<size_t>(r)].slots_end - plan_.rows[static_cast<size_t>(r)].slots_begin;
  const bool parallel = threads && work * cfg_.n_heads * cfg_.head_dim >= (1 << 15);
  qkv_rows(l, first, end, threads);
  const int64_t u0 = first * cfg_.n_kv_heads;
  parallel_for(n * cfg_.n_kv_heads, parallel, [&](int64_t a, int64_t b) { attend_units(l, u0 + a, u0 + b); });
  out_ffn_rows(l, first, end, threads);
}

void Transformer::final_softcap(float* logits, int64_t rows, bool threads) const {
  if (cfg_.final_softcap <= 0.0f) return;
  const int64_t n = rows * cfg_.vocab_size;  // element by element: the same bits however the range is split
  parallel_for(n, threads && n >= (int64_t{1} << 15), [&](int64_t a, int64_t b) { softcap(logits + a, b - a, cfg_.final_softcap); });
}

}  // namespace jf
