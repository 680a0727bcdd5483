// TrainableModel's draft head and draft layer on a frozen model: their forward over the rows a draft comes
// from (gathered, so the head's products run over those rows only), the draft chain's second pass of the layer
// over virtual rows, and the backward through both into the draft tensors alone.
#include <algorithm>
#include <utility>

#include "base/error.h"
#include "kernels/ops.h"
#include "train/trainable_model.h"

namespace jf {
namespace {

void zero(float* p, int64_t n) { std::fill(p, p + n, 0.0f); }
void add(float* to, const float* from, int64_t n) {
  for (int64_t i = 0; i < n; i++) to[i] += from[i];
}

}  // namespace

// The draft layer's input, in place of the saved final residual: + scale * embedding of each row's greedy token.
void TrainableModel::draft_layer_input() {
  const int64_t C = cfg_.dim, V = cfg_.vocab_size;
  greedy_.resize(static_cast<size_t>(T_));
  float* u = at(act_.resid, cfg_.n_layers, C);
  const float *table = p(tok_embd_), *scale = p(draft_token_scale_);
  for (int64_t t = 0; t < T_; t++) {
    greedy_[t] = static_cast<int32_t>(argmax(act_.logits.data() + t * V, V));
    const float* e = table + static_cast<int64_t>(greedy_[t]) * C;
    for (int64_t c = 0; c < C; c++) u[t * C + c] += scale[c] * e[c];
  }
  draft_input_ = true;
}

const float* TrainableModel::draft_logits(std::span<const int32_t> rows, std::span<const int32_t> into,
                                          std::span<const DraftChainRow> chain) {
  JF_CHECK(draft_output_ >= 0, "the model has no draft head");
  JF_CHECK(T_ > 0, "draft_logits without a forward");
  JF_CHECK(rows.size() == into.size(), "one destination per draft row");
  const bool layer = draft_output_norm_ >= 0;
  chain_.assign(chain.begin(), chain.end());
  JF_CHECK(layer || chain_.empty(), "a draft chain needs a draft layer");
  for (size_t i = 0; i < rows.size(); i++)
    JF_CHECK(rows[i] >= 0 && rows[i] < T_ && into[i] >= 0 && into[i] < T_, "draft row out of range");
  for (const DraftChainRow& c : chain_)
    JF_CHECK(c.from >= 0 && c.from < T_ && c.into >= 0 && c.into < T_ && c.token >= 0 && c.token < cfg_.vocab_size,
             "draft chain row out of range");
  const int64_t C = cfg_.dim, V = cfg_.vocab_size, R1 = static_cast<int64_t>(rows.size());
  const int64_t R = R1 + static_cast<int64_t>(chain_.size());
  draft_rows_.assign(rows.begin(), rows.end());
  draft_into_.assign(into.begin(), into.end());
  for (const DraftChainRow& c : chain_) draft_into_.push_back(c.into);
  draft_x_.resize(static_cast<size_t>(R * C));
  draft_z_.resize(static_cast<size_t>(R * V));
  if (layer) {
    const int l = cfg_.n_layers;
    if (!draft_input_) draft_layer_input();
    attention_block_forward(l);
    ffn_block_forward(l);
    if (!chain_.empty()) chain_forward();
    // the head's rows before the draft norm: the first pass's draft rows, then the chain's virtual rows
    draft_resid_.resize(static_cast<size_t>(R * C));
    for (int64_t i = 0; i < R1; i++) std::copy_n(at(act_.resid, l + 1, C) + rows[i] * C, C, draft_resid_.data() + i * C);
    const float* virtual_rows = chain_act_.resid.data() + chain_T_ * C + (chain_T_ - (R - R1)) * C;
    if (R > R1) std::copy_n(virtual_rows, (R - R1) * C, draft_resid_.data() + R1 * C);
    draft_rstd_.resize(static_cast<size_t>(R));
    rmsnorm_forward(draft_x_.data(), draft_rstd_.data(), draft_resid_.data(), p(draft_output_norm_), R, C, cfg_.norm_eps);
  } else {
    for (int64_t i = 0; i < R1; i++) std::copy_n(act_.xn_out.data() + rows[i] * C, C, draft_x_.data() + i * C);
  }
  linear_forward(draft_z_.data(), draft_x_.data(), p(draft_output_), nullptr, R, C, V);
  for (int64_t i = 0; i < R; i++) std::copy_n(draft_z_.data() + i * V, V, act_.logits.data() + draft_into_[i] * V);
  return act_.logits.data();
}

void TrainableModel::swap_in_chain() {
  std::swap(act_, chain_act_);
  std::swap(mask_, chain_mask_);
  std::swap(T_, chain_T_);
  layer_base_ = layer_base_ == 0 ? cfg_.n_layers : 0;
}

// The layer's second pass: the sequence's T rows (the first pass's input again, for their keys and values)
// and R virtual rows after them.
void TrainableModel::chain_forward() {
  const int l = cfg_.n_layers;
  const int64_t T = T_, R = static_cast<int64_t>(chain_.size()), N = T + R;
  const int64_t C = cfg_.dim, half = cfg_.rope_dim / 2;
  chain_mask_.reset(static_cast<int>(N));
  for (int i = 0; i < T; i++)
    for (int j = 0; j < T; j++)
      if (mask_.get(i, j)) chain_mask_.set(i, j);
  for (int64_t r = 0; r < R; r++) {
    for (int j = 0; j < T; j++)
      if (mask_.get(chain_[r].from, j)) chain_mask_.set(static_cast<int>(T + r), j);
    chain_mask_.set(static_cast<int>(T + r), static_cast<int>(T + r));
  }
  Saved& a = chain_act_;
  grow_layers(a, 1, N);  // (and the backward's scratch, which serves both passes)

  std::copy_n(at(act_.resid, l, C), T * C, a.resid.data());
  std::copy_n(act_.rope_cos.data(), T * half, a.rope_cos.data());
  std::copy_n(act_.rope_sin.data(), T * half, a.rope_sin.data());
  const float *table = p(tok_embd_), *scale = p(draft_token_scale_);
  for (int64_t r = 0; r < R; r++) {
    float* u = a.resid.data() + (T + r) * C;
    const float* y = at(act_.resid, l + 1, C) + chain_[r].from * C;
    const float* e = table + static_cast<int64_t>(chain_[r].token) * C;
    for (int64_t i = 0; i < C; i++) u[i] = y[i] + scale[i] * e[i];
    rope_angles(cfg_, positions_[chain_[r].from] + 1, &a.rope_cos[(T + r) * half], &a.rope_sin[(T + r) * half]);
  }
  chain_T_ = N;
  swap_in_chain();
  attention_block_forward(l);
  ffn_block_forward(l);
  swap_in_chain();
}

// dL/d draft_token_scale += dL/d(a layer input row) * embedding(the token that row added).
void TrainableModel::accumulate_token_scale(const float* dinput, int32_t token) {
  const int64_t C = cfg_.dim;
  const float* e = p(tok_embd_) + static_cast<int64_t>(token) * C;
  float* dscale = g(draft_token_scale_);
  for (int64_t c = 0; c < C; c++) dscale[c] += dinput[c] * e[c];
}

void TrainableModel::backward_draft_head(const float* dlogits) {
  JF_CHECK(draft_output_ >= 0, "the model has no draft head");
  const int64_t C = cfg_.dim, V = cfg_.vocab_size, R = static_cast<int64_t>(draft_into_.size());
  const int64_t R1 = static_cast<int64_t>(draft_rows_.size()), R2 = R - R1;
  for (int64_t i = 0; i < R; i++) std::copy_n(dlogits + draft_into_[i] * V, V, draft_z_.data() + i * V);
  // draft_x_ still holds those rows' hidden states, gathered by draft_logits
  const bool layer = draft_output_norm_ >= 0;
  if (layer) draft_dx_.assign(static_cast<size_t>(R * C), 0.0f);
  linear_backward(layer ? draft_dx_.data() : nullptr, g(draft_output_), nullptr, draft_z_.data(), draft_x_.data(),
                  p(draft_output_), R, C, V);
  if (!layer) return;
  // Through the draft norm (draft_x_, no longer needed, takes the rows' residual gradient), then the layer.
  float* drows = draft_x_.data();
  zero(drows, R * C);
  rmsnorm_backward(drows, g(draft_output_norm_), draft_dx_.data(), draft_resid_.data(), p(draft_output_norm_),
                   draft_rstd_.data(), R, C);
  const int l = cfg_.n_layers;
  const int64_t T = T_;
  if (R2 > 0) {  // the chain's pass first: its virtual rows' input is the first pass's output
    swap_in_chain();
    float* dres = grad_.dres.data();
    zero(dres, T_ * C);
    std::copy_n(drows + R1 * C, R2 * C, dres + T * C);
    ffn_block_backward(l);
    attention_block_backward(l);
    chain_dinput_.assign(dres, dres + T_ * C);
    swap_in_chain();
  }
  float* dres = grad_.dres.data();
  zero(dres, T * C);
  for (int64_t i = 0; i < R1; i++) add(dres + draft_rows_[i] * C, drows + i * C, C);
  for (int64_t r = 0; r < R2; r++) add(dres + chain_[r].from * C, chain_dinput_.data() + (T + r) * C, C);
  ffn_block_backward(l);        // dres: dL/d resid[l+1] -> dL/d mid[l]
  attention_block_backward(l);  // dres -> dL/d (the layer's input); the frozen model's part is not needed
  if (R2 > 0) add(dres, chain_dinput_.data(), T * C);  // the chain pass reads the same input for its first T rows
  for (int64_t t = 0; t < T; t++) accumulate_token_scale(dres + t * C, greedy_[t]);
  for (int64_t r = 0; r < R2; r++) accumulate_token_scale(chain_dinput_.data() + (T + r) * C, chain_[r].token);
}

}  // namespace jf
