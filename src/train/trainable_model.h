// A Llama/Qwen2 transformer with fp32 parameters and gradients: the forward over one packed training sequence
// (saving every activation the backward needs) and the backward, built from train/layers.h.
//
// Memory. Parameters and gradients: 2 x 4 bytes per parameter. Activations saved by forward for a sequence of T
// tokens, in floats per token (C = dim, Q = q_dim, KV = kv_dim, F = ffn_dim, H = n_heads, L = n_layers,
// V = vocab_size):
//     L * (4C + 2 + 2Q + 2KV + 3F + H*T)  +  2C + 1 + V + rope_dim
//   per layer: residual input and post-attention residual (2C), the two normalised inputs (2C), two rstd,
//   q and the attention output (2Q), k and v (2KV), gate, up and silu(gate)*up (3F), and the softmax
//   probabilities (H*T: quadratic in T overall); then the last residual and its normalised copy (2C), its rstd,
//   the logits (V) and the RoPE cos/sin (rope_dim).
// The backward adds one layer's scratch, reused across layers: 2C + 2Q + 2KV + 3F + H*T floats per token (plus
// the transposed copies of k, v and the largest weight that the kernels keep).
// Example: dim 256, 6 layers, 8 heads, ffn 768, vocab 4096, T = 512: ~55k floats = 221 KB per token, i.e.
// 113 MB of activations per sequence (50 MB of them attention probabilities), 16 MB of backward scratch,
// and 58 MB of parameters + gradients (7.2M parameters).
// Buffers grow to the largest T seen and are reused: no allocation per step once warmed up.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/batch.h"
#include "model/config.h"
#include "model/weights.h"
#include "train/layers.h"

namespace jf {

// One packed training sequence: T tokens, each with its RoPE position and the tokens it attends to.
// Several tokens may share a position (e.g. the noisy and clean copies of a Jacobi block).
struct TrainSequence {
  std::vector<int32_t> tokens;
  std::vector<int32_t> positions;  // RoPE position per token; empty: 0, 1, ..., T-1
  VisibilityMask mask;             // T x T, mask.get(i, j): token i attends to token j; diagonal set; empty: causal

  // Plain causal sequence at positions 0..T-1.
  static TrainSequence causal(std::vector<int32_t> tokens);
};

// One virtual row of a draft chain's training passes (TrainableModel::draft_logits): `step` positions after
// sequence row `from` (its chain's start), seeing what `from` sees, its chain's earlier rows and itself; its
// input the output of the chain row before it (`prev`, an index into the chain; -1: step 1, whose input is row
// `from`'s first-pass output) plus the embedding of `token`; its draft logits go to row `into`.
struct DraftChainRow {
  int32_t from, token, into, prev = -1;
};

class TrainableModel {
 public:
  // One trainable tensor, GGUF name and dims (GGML order: dims[0] contiguous); data and grad hold size floats.
  struct Param {
    std::string name;
    std::vector<int64_t> dims;
    float* data;
    float* grad;
    int64_t size;
  };

  // Parameters zero except norm weights = 1 (call init_random or load tensors before training).
  explicit TrainableModel(const ModelConfig& cfg);
  // Copies (dequantizing any dtype to fp32) the tensors of `ts`, checked with model/weights.h bind_weights,
  // which also completes the config from the tensors (tied output, biases, vocab size, rope_freqs).
  // with_draft_head: give the model a draft head (config draft_head) even when `ts` has none; it starts as a
  // copy of the output head. with_draft_layer: also a draft layer (config draft_layer) when `ts` has none; it
  // starts as the identity on its input (the last layer's weights with zero residual projections; token
  // scale 1, the output norm).
  static TrainableModel from_tensors(const ModelConfig& cfg, const TensorSet& ts, bool with_draft_head = false,
                                     bool with_draft_layer = false);
  // The model's tensor a missing draft tensor `name` starts as a copy of; empty: it starts at zero or one.
  static std::string draft_start_tensor(const ModelConfig& cfg, const std::string& name);
  static bool starts_at_one(const std::string& name);  // norms and the draft token scale
  // Matrices ~ N(0, 0.02^2), the residual projections (attn_output, ffn_down) scaled by 1/sqrt(2 n_layers),
  // norms = 1, biases = 0. Deterministic in `seed`.
  void init_random(uint64_t seed);

  const ModelConfig& config() const { return cfg_; }
  // Trains the draft layer's chain and marks the depth decoders use, `depth` drafts after the layer's first
  // (ModelConfig::draft_chain): the trainer's draft-head objective trains its first step (the row after each
  // first mismatch goes through it); later steps run the same layer again, as EAGLE's drafting loop does.
  static constexpr int kMaxDraftChain = 8;
  void set_draft_chain(int depth);
  // The trainable tensors in tensor_names(config()) order (rope_freqs, a constant, is not one of them).
  std::vector<Param> params();
  int64_t n_params() const { return static_cast<int64_t>(values_.size()); }
  // All parameters / gradients as one contiguous array of n_params() floats (in params() order).
  float* param_data() { return values_.data(); }
  float* grad_data() { return grads_.data(); }

  // Logits for all T rows (T x vocab_size, row-major), valid until the next forward. Throws jf::Error on bad
  // tokens, positions or mask.
  const float* forward(const TrainSequence& s);
  // Accumulates into the gradients dL/dparams given dlogits = dL/dlogits (T x vocab_size) of the last forward.
  void backward(const float* dlogits);

  // The draft head (config draft_head: "draft_output.weight", decode/jacobi.h) on the last forward's final
  // hidden states — through the draft layer first when the model has one: over all T rows, with the
  // sequence's mask, on the final residual + draft_token_scale * embedding(each row's greedy token) —
  // replaces logits row into[i] with draft row rows[i]'s and returns the logits (T x V). With a draft layer
  // the last forward's saved activations serve backward_draft_head only.
  //
  // With `chain` (a draft layer; ForwardResult::chain, trained): the layer runs again once per chain step,
  // pass p over the sequence's rows plus the chain rows of steps 1..p (each chain row after the one it
  // continues: `prev` < its index, steps in order), as ForwardResult::chain runs it one virtual row at a
  // time; each chain row's draft logits replace logits row `into`, and backward_draft_head goes through every
  // pass (a chain of depth 2 is trained end to end).
  const float* draft_logits(std::span<const int32_t> rows, std::span<const int32_t> into,
                            std::span<const DraftChainRow> chain = {});
  const float* draft_logits(std::span<const int32_t> rows) { return draft_logits(rows, rows); }
  // Accumulates into the draft head's (and draft layer's) gradients only, given dlogits (T x V) of which only
  // the `into` rows of the last draft_logits call are read: the rest of the model is frozen (no backward
  // through it).
  void backward_draft_head(const float* dlogits);
  void zero_grad();
  int64_t tokens() const { return T_; }  // T of the last forward

  // Parameters as tensors of `type` (matrices; norms, biases and rope_freqs stay F32), named and shaped as
  // tensor_names(config()) — ready for a GGUF checkpoint or an inference Model.
  // only: that tensor alone (e.g. "draft_output.weight"), without converting the rest.
  TensorSet to_tensor_set(DType type, const std::string& only = {}) const;

 private:
  struct Layer {  // offsets of a layer's tensors in values_ / grads_ (-1: absent)
    int64_t attn_norm, wq, wk, wv, wo, bq = -1, bk = -1, bv = -1, ffn_norm, w_gate, w_up, w_down;
  };
  struct Entry {  // one tensor of the layout
    std::string name;
    std::vector<int64_t> dims;
    int64_t offset, size;
  };
  // Activations saved by forward (layer-major: layer l's rows start at l * T * width).
  struct Saved {
    std::vector<float> resid, mid, xn_attn, xn_ffn, rstd_attn, rstd_ffn, q, k, v, att, probs, gate, up, hidden;
    std::vector<float> xn_out, rstd_out, logits, rope_cos, rope_sin;
  };
  struct Grads {  // backward scratch, one layer at a time
    std::vector<float> dres, dxn, dq, dk, dv, datt, dgate, dup, dhidden;
  };

  int64_t add_tensor(const std::string& name, std::vector<int64_t> dims);
  void ensure_capacity(int64_t T);
  void grow_layers(Saved& a, int64_t layers, int64_t T);
  void check_sequence(const TrainSequence& s) const;
  const float* p(int64_t offset) const { return offset < 0 ? nullptr : values_.data() + offset; }
  float* g(int64_t offset) { return offset < 0 ? nullptr : grads_.data() + offset; }
  void attention_block_forward(int l);
  void ffn_block_forward(int l);
  void ffn_block_backward(int l);
  void attention_block_backward(int l);
  float* at(std::vector<float>& buf, int l, int64_t width) { return buf.data() + (l - layer_base_) * T_ * width; }
  void draft_layer_input();
  struct ChainPass;
  void chain_forward();
  void chain_pass_forward(int step);
  void chain_pass_backward(int step, const float* dhead);
  void swap_in(ChainPass& pass);  // a chain pass's rows, mask and activations in place of the sequence's (and back)
  const float* chain_output(int32_t r);  // chain row r's layer output (before the draft norm), from its own pass
  void accumulate_token_scale(const float* dinput, int32_t token);

  ModelConfig cfg_;
  std::vector<Entry> layout_;
  std::vector<float> values_, grads_;
  int64_t tok_embd_ = 0, output_norm_ = 0, output_ = 0;  // output_ == tok_embd_ when tied
  int64_t draft_output_ = -1;       // -1: no draft head
  int64_t draft_output_norm_ = -1;  // -1: no draft layer (else it is layers_[n_layers])
  int64_t draft_token_scale_ = -1;
  std::vector<int32_t> greedy_, draft_into_;  // each row's greedy token; the into rows of draft_logits
  bool draft_input_ = false;  // draft_logits replaced the saved final residual with the draft layer's input
  // The draft rows' hidden states and logits (or their gradients); with a draft layer, its output rows
  // before the norm, their rstd and the gradient of the normalised rows.
  std::vector<float> draft_x_, draft_z_, draft_resid_, draft_rstd_, draft_dx_;
  std::vector<int32_t> draft_rows_;       // the rows of the last draft_logits call
  // The draft chain's passes: pass p (chain_passes_[p - 1]) over the sequence's rows, then the chain rows of
  // steps 1..p (a prefix of chain_), with their mask and activations (one layer; swapped with act_ / mask_ /
  // T_ while it runs, layer_base_ = n_layers); the gradients of the chain rows' and the sequence rows' input.
  struct ChainPass {
    Saved act;
    VisibilityMask mask;
    int64_t rows = 0;
  };
  std::vector<DraftChainRow> chain_;
  std::vector<int32_t> chain_step_;  // of each chain row
  std::vector<ChainPass> chain_passes_;
  int layer_base_ = 0;
  std::vector<float> chain_dinput_, chain_dsequence_;
  std::vector<int32_t> positions_;  // of the last forward's rows
  std::vector<Layer> layers_;

  int64_t T_ = 0, capacity_ = 0;
  std::vector<int32_t> tokens_;
  VisibilityMask mask_;
  Saved act_;
  Grads grad_;
  AttentionScratch attn_scratch_;
};

}  // namespace jf
