// TrainableModel's forward over one packed sequence (saving activations) and its backward, block by block:
// the same computation as model/transformer.cpp, written with the train/layers.h operations.
#include <algorithm>

#include "base/error.h"
#include "kernels/ops.h"
#include "train/trainable_model.h"

namespace jf {
namespace {

void grow(std::vector<float>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
}
void zero(float* p, int64_t n) { std::fill(p, p + n, 0.0f); }

}  // namespace

void TrainableModel::ensure_capacity(int64_t T) {
  if (T <= capacity_) return;
  capacity_ = T;
  grow_layers(act_, cfg_.kv_layers(), T);
  grow(act_.xn_out, T * cfg_.dim);
  grow(act_.rstd_out, T);
  grow(act_.logits, T * cfg_.vocab_size);
}

// What `layers` layers over T rows save (the residual stream has layers + 1 rows of width dim), and the
// backward's one-layer scratch for T rows (shared by every pass).
void TrainableModel::grow_layers(Saved& a, int64_t L, int64_t T) {
  const int64_t C = cfg_.dim, Q = cfg_.q_dim(), KV = cfg_.kv_dim(), F = cfg_.ffn_dim;
  const int64_t H = cfg_.n_heads, half = cfg_.rope_dim / 2;
  grow(a.resid, (L + 1) * T * C);
  for (auto* b : {&a.mid, &a.xn_attn, &a.xn_ffn}) grow(*b, L * T * C);
  for (auto* b : {&a.rstd_attn, &a.rstd_ffn}) grow(*b, L * T);
  for (auto* b : {&a.q, &a.att}) grow(*b, L * T * Q);
  for (auto* b : {&a.k, &a.v}) grow(*b, L * T * KV);
  for (auto* b : {&a.gate, &a.up, &a.hidden}) grow(*b, L * T * F);
  grow(a.probs, L * H * T * T);
  grow(a.rope_cos, T * half);
  grow(a.rope_sin, T * half);
  Grads& d = grad_;
  for (auto* b : {&d.dres, &d.dxn}) grow(*b, T * C);
  for (auto* b : {&d.dq, &d.datt}) grow(*b, T * Q);
  for (auto* b : {&d.dk, &d.dv}) grow(*b, T * KV);
  for (auto* b : {&d.dgate, &d.dup, &d.dhidden}) grow(*b, T * F);
}

void TrainableModel::check_sequence(const TrainSequence& s) const {
  const int64_t T = static_cast<int64_t>(s.tokens.size());
  if (T == 0) throw Error("training sequence has no tokens");
  if (!s.positions.empty() && static_cast<int64_t>(s.positions.size()) != T)
    throw Error("training sequence has " + std::to_string(s.positions.size()) + " positions for " + std::to_string(T) + " tokens");
  if (s.mask.size() != 0 && s.mask.size() != T)
    throw Error("training sequence mask is " + std::to_string(s.mask.size()) + " x " + std::to_string(s.mask.size()) +
                " for " + std::to_string(T) + " tokens");
  for (int32_t t : s.tokens)
    if (t < 0 || t >= cfg_.vocab_size)
      throw Error("token id " + std::to_string(t) + " is outside the vocabulary (0.." + std::to_string(cfg_.vocab_size - 1) + ")");
  for (int32_t p : s.positions)
    if (p < 0) throw Error("training sequence has a negative position " + std::to_string(p));
  for (int i = 0; i < s.mask.size(); i++)
    if (!s.mask.get(i, i)) throw Error("training sequence mask: token " + std::to_string(i) + " does not see itself");
}

// ---------------------------------------------------------------- forward

const float* TrainableModel::forward(const TrainSequence& s) {
  check_sequence(s);
  draft_input_ = false;
  T_ = static_cast<int64_t>(s.tokens.size());
  ensure_capacity(T_);
  tokens_.assign(s.tokens.begin(), s.tokens.end());
  positions_.resize(static_cast<size_t>(T_));
  for (int64_t t = 0; t < T_; t++) positions_[t] = s.positions.empty() ? static_cast<int32_t>(t) : s.positions[t];
  if (s.mask.size() == 0) mask_.make_causal(static_cast<int>(T_));
  else mask_ = s.mask;
  const int64_t C = cfg_.dim, half = cfg_.rope_dim / 2;
  for (int64_t t = 0; t < T_; t++)
    rope_angles(cfg_, positions_[t], &act_.rope_cos[t * half],
                &act_.rope_sin[t * half]);

  embedding_forward(act_.resid.data(), tokens_.data(), T_, p(tok_embd_), C);
  for (int l = 0; l < cfg_.n_layers; l++) {
    attention_block_forward(l);
    ffn_block_forward(l);
  }
  rmsnorm_forward(act_.xn_out.data(), act_.rstd_out.data(), at(act_.resid, cfg_.n_layers, C), p(output_norm_), T_, C,
                  cfg_.norm_eps);
  linear_forward(act_.logits.data(), act_.xn_out.data(), p(output_), nullptr, T_, C, cfg_.vocab_size);
  return act_.logits.data();
}

// mid = resid + Wo · attention(RoPE(Wq·xn + bq), RoPE(Wk·xn + bk), Wv·xn + bv),  xn = rmsnorm(resid)
void TrainableModel::attention_block_forward(int l) {
  const Layer& L = layers_[l];
  const int64_t C = cfg_.dim, Q = cfg_.q_dim(), KV = cfg_.kv_dim();
  const float* resid = at(act_.resid, l, C);
  float *xn = at(act_.xn_attn, l, C), *q = at(act_.q, l, Q), *k = at(act_.k, l, KV), *v = at(act_.v, l, KV);
  rmsnorm_forward(xn, at(act_.rstd_attn, l, 1), resid, p(L.attn_norm), T_, C, cfg_.norm_eps);
  linear_forward(q, xn, p(L.wq), p(L.bq), T_, C, Q);
  linear_forward(k, xn, p(L.wk), p(L.bk), T_, C, KV);
  linear_forward(v, xn, p(L.wv), p(L.bv), T_, C, KV);
  rope_forward(q, T_, RopeShape{cfg_.n_heads, cfg_.head_dim, cfg_.rope_dim, cfg_.rope_style}, act_.rope_cos.data(),
               act_.rope_sin.data());
  rope_forward(k, T_, RopeShape{cfg_.n_kv_heads, cfg_.head_dim, cfg_.rope_dim, cfg_.rope_style}, act_.rope_cos.data(),
               act_.rope_sin.data());
  float* att = at(act_.att, l, Q);
  const AttentionShape shape{T_, cfg_.n_heads, cfg_.n_kv_heads, cfg_.head_dim};
  attention_forward(att, at(act_.probs, l, cfg_.n_heads * T_), q, k, v, mask_, shape, attn_scratch_);
  float* mid = at(act_.mid, l, C);
  linear_forward(mid, att, p(L.wo), nullptr, T_, Q, C);
  for (int64_t i = 0; i < T_ * C; i++) mid[i] = resid[i] + mid[i];
}

// resid' = mid + W_down · (silu(W_gate·xn) * W_up·xn),  xn = rmsnorm(mid)
void TrainableModel::ffn_block_forward(int l) {
  const Layer& L = layers_[l];
  const int64_t C = cfg_.dim, F = cfg_.ffn_dim;
  const float* mid = at(act_.mid, l, C);
  float *xn = at(act_.xn_ffn, l, C), *gate = at(act_.gate, l, F), *up = at(act_.up, l, F);
  float* hidden = at(act_.hidden, l, F);
  rmsnorm_forward(xn, at(act_.rstd_ffn, l, 1), mid, p(L.ffn_norm), T_, C, cfg_.norm_eps);
  linear_forward(gate, xn, p(L.w_gate), nullptr, T_, C, F);
  linear_forward(up, xn, p(L.w_up), nullptr, T_, C, F);
  swiglu_forward(hidden, gate, up, T_ * F);
  float* out = at(act_.resid, l + 1, C);
  linear_forward(out, hidden, p(L.w_down), nullptr, T_, F, C);
  for (int64_t i = 0; i < T_ * C; i++) out[i] = mid[i] + out[i];
}

// ---------------------------------------------------------------- backward

void TrainableModel::backward(const float* dlogits) {
  JF_CHECK(T_ > 0, "backward without a forward");
  JF_CHECK(!draft_input_, "backward after draft_logits: the final residual was replaced");
  const int64_t C = cfg_.dim;
  float *dres = grad_.dres.data(), *dxn = grad_.dxn.data();
  // logits = xn_out · W_out^T; xn_out = rmsnorm(resid[L])
  zero(dxn, T_ * C);
  linear_backward(dxn, g(output_), nullptr, dlogits, act_.xn_out.data(), p(output_), T_, C, cfg_.vocab_size);
  zero(dres, T_ * C);
  rmsnorm_backward(dres, g(output_norm_), dxn, at(act_.resid, cfg_.n_layers, C), p(output_norm_),
                   act_.rstd_out.data(), T_, C);
  for (int l = cfg_.n_layers - 1; l >= 0; l--) {
    ffn_block_backward(l);        // dres: dL/d resid[l+1] -> dL/d mid[l]
    attention_block_backward(l);  // dres: dL/d mid[l] -> dL/d resid[l]
  }
  embedding_backward(g(tok_embd_), dres, tokens_.data(), T_, C);
}

void TrainableModel::ffn_block_backward(int l) {
  const Layer& L = layers_[l];
  const int64_t C = cfg_.dim, F = cfg_.ffn_dim;
  float *dres = grad_.dres.data(), *dxn = grad_.dxn.data();
  float *dh = grad_.dhidden.data(), *dgate = grad_.dgate.data(), *dup = grad_.dup.data();
  const float *xn = at(act_.xn_ffn, l, C), *gate = at(act_.gate, l, F), *up = at(act_.up, l, F);
  // The residual passes dres through unchanged; the branch adds its part.
  zero(dh, T_ * F);
  linear_backward(dh, g(L.w_down), nullptr, dres, at(act_.hidden, l, F), p(L.w_down), T_, F, C);
  zero(dgate, T_ * F);
  zero(dup, T_ * F);
  swiglu_backward(dgate, dup, dh, gate, up, T_ * F);
  zero(dxn, T_ * C);
  linear_backward(dxn, g(L.w_gate), nullptr, dgate, xn, p(L.w_gate), T_, C, F);
  linear_backward(dxn, g(L.w_up), nullptr, dup, xn, p(L.w_up), T_, C, F);
  rmsnorm_backward(dres, g(L.ffn_norm), dxn, at(act_.mid, l, C), p(L.ffn_norm), at(act_.rstd_ffn, l, 1), T_, C);
}

void TrainableModel::attention_block_backward(int l) {
  const Layer& L = layers_[l];
  const int64_t C = cfg_.dim, Q = cfg_.q_dim(), KV = cfg_.kv_dim();
  float *dres = grad_.dres.data(), *dxn = grad_.dxn.data(), *datt = grad_.datt.data();
  float *dq = grad_.dq.data(), *dk = grad_.dk.data(), *dv = grad_.dv.data();
  const float *xn = at(act_.xn_attn, l, C), *q = at(act_.q, l, Q), *k = at(act_.k, l, KV), *v = at(act_.v, l, KV);
  zero(datt, T_ * Q);
  linear_backward(datt, g(L.wo), nullptr, dres, at(act_.att, l, Q), p(L.wo), T_, Q, C);
  zero(dq, T_ * Q);
  zero(dk, T_ * KV);
  zero(dv, T_ * KV);
  const AttentionShape shape{T_, cfg_.n_heads, cfg_.n_kv_heads, cfg_.head_dim};
  attention_backward(dq, dk, dv, datt, q, k, v, at(act_.probs, l, cfg_.n_heads * T_), mask_, shape, attn_scratch_);
  rope_backward(dq, T_, RopeShape{cfg_.n_heads, cfg_.head_dim, cfg_.rope_dim, cfg_.rope_style}, act_.rope_cos.data(),
                act_.rope_sin.data());
  rope_backward(dk, T_, RopeShape{cfg_.n_kv_heads, cfg_.head_dim, cfg_.rope_dim, cfg_.rope_style},
                act_.rope_cos.data(), act_.rope_sin.data());
  zero(dxn, T_ * C);
  linear_backward(dxn, g(L.wq), g(L.bq), dq, xn, p(L.wq), T_, C, Q);
  linear_backward(dxn, g(L.wk), g(L.bk), dk, xn, p(L.wk), T_, C, KV);
  linear_backward(dxn, g(L.wv), g(L.bv), dv, xn, p(L.wv), T_, C, KV);
  rmsnorm_backward(dres, g(L.attn_norm), dxn, at(act_.resid, l, C), p(L.attn_norm), at(act_.rstd_attn, l, 1), T_, C);
}

}  // namespace jf
