// TrainableModel's draft head and draft layer on a frozen model: their forward over the rows a draft comes
// from (gathered, so the head's products run over those rows only), the draft chain's passes of the layer over
// virtual rows (one pass per chain step), and the backward through all of them into the draft tensors alone.
#include <algorithm>
#include <utility>

#include "base/error.h"
#include "kernels/ops.h"
#include "model/draft_rows.h"
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
    add_draft_token(u + t * C, scale, table + static_cast<int64_t>(greedy_[t]) * C, C);  // (model/draft_rows.h)
  }
  draft_input_ = true;
}

const float* TrainableModel::draft_logits(std::span<const int32_t> rows, std::span<const int32_t> into,
                                          std::span<const DraftChainRow> chain) {
  JF_CHECK(draft_output_ >= 0, "the model has no draft head");
  JF_CHECK(T_ > 0, "draft_logits without a forward");
  JF_CHECK(rows.size() == into.size(), "one destination per draft row");
  const bool layer = draft_output_norm_ >= 0;
  JF_CHECK(layer || chain.empty(), "a draft chain needs a draft layer");
  for (size_t i = 0; i < rows.size(); i++)
    JF_CHECK(rows[i] >= 0 && rows[i] < T_ && into[i] >= 0 && into[i] < T_, "draft row out of range");
  chain_.assign(chain.begin(), chain.end());
  chain_step_.clear();
  for (size_t r = 0; r < chain_.size(); r++) {
    const DraftChainRow& c = chain_[r];
    JF_CHECK(c.from >= 0 && c.from < T_ && c.into >= 0 && c.into < T_ && c.token >= 0 && c.token < cfg_.vocab_size,
             "draft chain row out of range");
    JF_CHECK(c.prev < static_cast<int32_t>(r) && (c.prev < 0 || chain_[c.prev].from == c.from),
             "a draft chain row continues an earlier row of the same chain");
    chain_step_.push_back(c.prev < 0 ? 1 : chain_step_[c.prev] + 1);
    JF_CHECK(r == 0 || chain_step_[r] >= chain_step_[r - 1], "draft chain rows go in the order of their steps");
  }
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
    // the head's rows before the draft norm: the first pass's draft rows, then the chain's rows
    draft_resid_.resize(static_cast<size_t>(R * C));
    for (int64_t i = 0; i < R1; i++) std::copy_n(at(act_.resid, l + 1, C) + rows[i] * C, C, draft_resid_.data() + i * C);
    for (size_t r = 0; r < chain_.size(); r++)
      std::copy_n(chain_output(static_cast<int32_t>(r)), C, draft_resid_.data() + (R1 + static_cast<int64_t>(r)) * C);
    draft_rstd_.resize(static_cast<size_t>(R));
    rmsnorm_forward(draft_x_.data(), draft_rstd_.data(), draft_resid_.data(), p(draft_output_norm_), R, C, cfg_.norm_eps);
  } else {
    for (int64_t i = 0; i < R1; i++) std::copy_n(act_.xn_out.data() + rows[i] * C, C, draft_x_.data() + i * C);
  }
  linear_forward(draft_z_.data(), draft_x_.data(), p(draft_output_), nullptr, R, C, V);
  for (int64_t i = 0; i < R; i++) std::copy_n(draft_z_.data() + i * V, V, act_.logits.data() + draft_into_[i] * V);
  return act_.logits.data();
}

void TrainableModel::swap_in(ChainPass& pass) {
  std::swap(act_, pass.act);
  std::swap(mask_, pass.mask);
  std::swap(T_, pass.rows);
  layer_base_ = layer_base_ == 0 ? cfg_.n_layers : 0;
}

const float* TrainableModel::chain_output(int32_t r) {
  const ChainPass& pass = chain_passes_[static_cast<size_t>(chain_step_[r] - 1)];
  return pass.act.resid.data() + (pass.rows + T_ + r) * cfg_.dim;  // (layer 1's rows follow layer 0's)
}

void TrainableModel::chain_forward() {
  chain_passes_.resize(static_cast<size_t>(chain_step_.back()));
  for (int step = 1; step <= chain_step_.back(); step++) chain_pass_forward(step);
}

// Pass `step`: the sequence's T rows (the first pass's input again, for their keys and values), then the chain
// rows of steps 1..step, each on the output of the row it continues (from its own pass) plus its token.
void TrainableModel::chain_pass_forward(int step) {
  const int l = cfg_.n_layers;
  const int64_t T = T_, C = cfg_.dim, half = cfg_.rope_dim / 2;
  const int64_t R = std::count_if(chain_step_.begin(), chain_step_.end(), [&](int32_t s) { return s <= step; });
  const int64_t N = T + R;
  ChainPass& pass = chain_passes_[static_cast<size_t>(step - 1)];
  pass.mask.reset(static_cast<int>(N));
  for (int i = 0; i < T; i++)
    for (int j = 0; j < T; j++)
      if (mask_.get(i, j)) pass.mask.set(i, j);
  for (int64_t r = 0; r < R; r++) {
    for (int j = 0; j < T; j++)
      if (mask_.get(chain_[r].from, j)) pass.mask.set(static_cast<int>(T + r), j);
    for (int32_t q = static_cast<int32_t>(r); q >= 0; q = chain_[q].prev) pass.mask.set(static_cast<int>(T + r), static_cast<int>(T + q));
  }
  Saved& a = pass.act;
  grow_layers(a, 1, N);  // (and the backward's scratch, which serves every pass)
  std::copy_n(at(act_.resid, l, C), T * C, a.resid.data());
  std::copy_n(act_.rope_cos.data(), T * half, a.rope_cos.data());
  std::copy_n(act_.rope_sin.data(), T * half, a.rope_sin.data());
  const float *table = p(tok_embd_), *scale = p(draft_token_scale_);
  for (int64_t r = 0; r < R; r++) {
    const DraftChainRow& c = chain_[r];
    float* u = a.resid.data() + (T + r) * C;
    const float* y = c.prev < 0 ? at(act_.resid, l + 1, C) + c.from * C : chain_output(c.prev);
    const float* e = table + static_cast<int64_t>(c.token) * C;
    for (int64_t i = 0; i < C; i++) u[i] = y[i] + scale[i] * e[i];
    rope_angles(cfg_, positions_[c.from] + chain_step_[r], &a.rope_cos[(T + r) * half], &a.rope_sin[(T + r) * half]);
  }
  pass.rows = N;
  swap_in(pass);
  attention_block_forward(l);
  ffn_block_forward(l);
  swap_in(pass);
}

// dL/d draft_token_scale += dL/d(a layer input row) * embedding(the token that row added).
void TrainableModel::accumulate_token_scale(const float* dinput, int32_t token) {
  const int64_t C = cfg_.dim;
  const float* e = p(tok_embd_) + static_cast<int64_t>(token) * C;
  float* dscale = g(draft_token_scale_);
  for (int64_t c = 0; c < C; c++) dscale[c] += dinput[c] * e[c];
}

// Pass `step` backward, after the passes of later steps: its new rows' output gradient is the head's (dhead,
// one row per chain row) plus what the next step's rows' inputs passed back; every row's input gradient is
// added to chain_dinput_ (chain rows) and chain_dsequence_ (the sequence's rows, the same input in every pass).
void TrainableModel::chain_pass_backward(int step, const float* dhead) {
  const int l = cfg_.n_layers;
  const int64_t T = T_, C = cfg_.dim;
  ChainPass& pass = chain_passes_[static_cast<size_t>(step - 1)];
  const int64_t R = pass.rows - T;
  swap_in(pass);
  float* dres = grad_.dres.data();
  zero(dres, T_ * C);
  for (int64_t r = 0; r < static_cast<int64_t>(chain_.size()); r++) {
    if (chain_step_[r] == step) add(dres + (T + r) * C, dhead + r * C, C);
    if (chain_step_[r] == step + 1) add(dres + (T + chain_[r].prev) * C, chain_dinput_.data() + r * C, C);
  }
  ffn_block_backward(l);
  attention_block_backward(l);
  add(chain_dsequence_.data(), dres, T * C);
  add(chain_dinput_.data(), dres + T * C, R * C);
  swap_in(pass);
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
  // Through the draft norm (draft_x_, no longer needed, takes the rows' residual gradient), then the layer's
  // chain passes, last step first, then its first pass.
  float* drows = draft_x_.data();
  zero(drows, R * C);
  rmsnorm_backward(drows, g(draft_output_norm_), draft_dx_.data(), draft_resid_.data(), p(draft_output_norm_),
                   draft_rstd_.data(), R, C);
  const int l = cfg_.n_layers;
  const int64_t T = T_;
  chain_dinput_.assign(static_cast<size_t>(R2 * C), 0.0f);
  chain_dsequence_.assign(static_cast<size_t>(R2 > 0 ? T * C : 0), 0.0f);
  for (int step = R2 > 0 ? chain_step_.back() : 0; step >= 1; step--) chain_pass_backward(step, drows + R1 * C);
  float* dres = grad_.dres.data();
  zero(dres, T * C);
  for (int64_t i = 0; i < R1; i++) add(dres + draft_rows_[i] * C, drows + i * C, C);
  for (int64_t r = 0; r < R2; r++)
    if (chain_step_[r] == 1) add(dres + chain_[r].from * C, chain_dinput_.data() + r * C, C);
  ffn_block_backward(l);        // dres: dL/d resid[l+1] -> dL/d mid[l]
  attention_block_backward(l);  // dres -> dL/d (the layer's input); the frozen model's part is not needed
  if (R2 > 0) add(dres, chain_dsequence_.data(), T * C);  // every chain pass reads the same input for these rows
  for (int64_t t = 0; t < T; t++) accumulate_token_scale(dres + t * C, greedy_[t]);
  for (int64_t r = 0; r < R2; r++) accumulate_token_scale(chain_dinput_.data() + r * C, chain_[r].token);
}

}  // namespace jf
