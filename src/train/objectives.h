// Training objectives on the logits of one sequence: Jacobi Forcing (progressive consistency from each
// block's first mismatch, against the detached clean-stream distribution, plus w x AR on the clean stream),
// CLLM (the same consistency on clean-context packs, label-smoothed AR term), and plain language modelling.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "train/packing.h"
#include "train/trainable_model.h"

namespace jf {

// DraftHead: the Jacobi Forcing consistency term on a frozen model's draft head alone (its noisy rows'
// logits come from the draft head, the targets from the model's own clean rows; no AR term), so the model's
// output stays what it was and only its drafts improve (decode/jacobi.h).
enum class Objective { JacobiForcing, Cllm, Ar, DraftHead };
// How the consistency term is normalised. Reference (the Jacobi Forcing trainer): soft CE summed over all
// kept noisy positions of the sequence, divided by their count and by the number of blocks. PerBlock (jf's
// earlier form): mean over each block's positions, then mean over the blocks that have any; B times
// stronger than Reference for a sequence of B blocks.
enum class ConsistencyNorm { Reference, PerBlock };
std::string consistency_norm_name(ConsistencyNorm c);
bool consistency_norm_from_name(const std::string& s, ConsistencyNorm* out);  // "reference", "per-block"
std::string objective_name(Objective o);
bool objective_from_name(const std::string& s, Objective* out);  // "jacobi-forcing", "cllm", "ar", "draft-head"

struct ObjectiveOptions {
  float ar_weight = 10.0f;        // w in consistency + w * AR (the reference uses 10)
  float label_smoothing = 0.1f;   // cllm's AR term (as the CLLM reference); jacobi-forcing uses none
  ConsistencyNorm consistency_norm = ConsistencyNorm::Reference;
  // With a frozen teacher (the base model): the AR term's target on each clean row becomes
  // (1 - teacher_mix) x the greedy fixed-point token + teacher_mix x the teacher's distribution there.
  float teacher_mix = 1.0f;
  bool teacher_consistency = false;  // the consistency target is the teacher's clean row, not the student's
  // Which noisy rows the consistency term trains, by offset d from the block's first mismatch: only d < K
  // (consistency_rows K; 0 = all), each weighted decay^d. Jacobi's next step commits the rows right after
  // the mismatch; rows far past it see mostly wrong drafts, and fitting them teaches the model to distrust
  // its context (docs/TRAINING.md).
  int consistency_rows = 0;
  float consistency_decay = 1.0f;
};

// Noisy rows reported by offset from their block's first mismatch: 0, 1, 2, 3 and 4+.
inline constexpr int kOffsetBuckets = 5;
struct OffsetReport {
  std::array<double, kOffsetBuckets> kl{};        // sums of KL(target || model) over the rows (trained or not)
  std::array<int64_t, kOffsetBuckets> rows{}, match{};  // rows; rows whose top-1 equals the target's top-1
  void add(const OffsetReport& o) {
    for (int i = 0; i < kOffsetBuckets; i++) kl[i] += o.kl[i], rows[i] += o.rows[i], match[i] += o.match[i];
  }
  // "KL 0.41/0.62/0.80/0.93/1.20, top-1 0.82/0.55/0.41/0.33/0.20" (means per bucket; - for an empty one).
  std::string summary() const;
};

struct LossReport {
  double total = 0, consistency = 0, ar = 0;  // consistency is reported as KL(teacher || student)
  double teacher_kl = 0;  // mean KL(frozen teacher || student) over the clean rows (0 without a teacher)
  double text = 0;        // real-text term, unweighted: KL(teacher || student) or cross-entropy per token
  int64_t consistency_positions = 0, ar_tokens = 0, text_tokens = 0;
  OffsetReport by_offset;  // every noisy row from the first mismatch on, trained or not
  void add(const LossReport& o) {
    total += o.total, consistency += o.consistency, ar += o.ar, teacher_kl += o.teacher_kl, text += o.text;
    consistency_positions += o.consistency_positions, ar_tokens += o.ar_tokens, text_tokens += o.text_tokens;
    by_offset.add(o.by_offset);
  }
};

// The clean-stream next-token target of every row of a packed sequence (-1 where there is none: noisy
// rows and the last clean token).
std::vector<int32_t> clean_stream_targets(const PackedSequence& p);

// The noisy rows a consistency term reads: in every block, from the first mismatch to the last row whose
// clean counterpart predicts real text.
std::vector<int32_t> consistency_rows(const PackedSequence& p);
// The row a shifted draft (ForwardPass::draft_shift 1) for consistency row `row` of `p` comes from: the row at
// the position before it (the previous noisy row; for a block's first row the clean row before the block,
// the context's last for block 0); -1 when there is none.
int32_t draft_source_row(const PackedSequence& p, int32_t row);
// A draft chain's training rows (ForwardResult::chain), `depth` steps: in every block, for each step s while
// the row at offset s from the first mismatch is a consistency row, that row, drafted by the layer run again
// from the source of offset 0's draft, s positions on, on the fixed point's token at offset s (what the draft
// before it should be). Step 1's rows first, then step 2's, each continuing its block's row of the step before.
std::vector<DraftChainRow> draft_chain_rows(const PackedSequence& p, int depth = 1);

// Loss of a packed sequence for JacobiForcing or Cllm; writes dlogits (T x V; zero where no loss applies).
// teacher_logits (T x V, the frozen base model on the same sequence and mask) may be null.
LossReport packed_loss(Objective obj, const PackedSequence& p, const float* logits, int V, const ObjectiveOptions& o,
                       float* dlogits, const float* teacher_logits = nullptr);
// The real-text term of a Jacobi fine-tune, on a causal sequence of real text (not the model's own output):
// with the frozen base's logits, the mean KL(base || model) per row, which holds the model's distribution on
// real text where the base has it; without, the mean next-token cross-entropy. dlogits (T x V) is the
// gradient of weight x that mean; LossReport.text holds the unweighted mean, .total the weighted one.
LossReport text_loss(const std::vector<int32_t>& tokens, const float* logits, int V, float weight, float* dlogits,
                     const float* teacher_logits);
// Mean next-token cross-entropy of a causal sequence; writes dlogits (T x V).
LossReport lm_loss(const std::vector<int32_t>& tokens, const float* logits, int V, float* dlogits);

}  // namespace jf
