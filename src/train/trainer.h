// The training loop: examples in a seeded order, gradient accumulation (micro-batches summed in order, also
// across MPI ranks), global-norm clipping, AdamW with a cosine schedule, and GGUF checkpoints that carry
// the optimizer state so a run resumes exactly where it stopped.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "train/objectives.h"
#include "train/optimizer.h"
#include "train/trainable_model.h"

namespace jf {

struct TrainData {
  std::vector<PackedSequence> packed;      // jacobi-forcing / cllm
  std::vector<std::vector<int32_t>> text;  // ar: causal sequences; jacobi-forcing / cllm: real text mixed in
  size_t size() const { return packed.empty() ? text.size() : packed.size(); }
};

struct TrainOptions {
  Objective objective = Objective::JacobiForcing;
  ObjectiveOptions loss;
  int64_t steps = 100;
  int accum = 1;  // micro-batches per step (per process under MPI)
  // Jacobi objectives: real-text micro-batches per step (per process) on top of `accum` packed ones; the
  // step's loss is mean(packed) + text_weight x mean(text) (objectives.h, text_loss).
  int text_accum = 0;
  float text_weight = 1.0f;
  float lr = 1e-4f, min_lr = 1e-5f;
  float warmup = 0.03f;  // fraction of the steps
  float clip = 1.0f;     // global gradient norm; <= 0: off
  AdamWOptions adam;
  uint64_t seed = 1;
  int save_every = 0;            // steps between checkpoints (0: only at the end)
  int64_t stop_at = 0;           // stop (with a checkpoint) after this step; 0: run all `steps`
  std::string checkpoint_path;   // where checkpoints (with optimizer state) go
};

struct StepReport {
  int64_t step = 0;  // 1-based, after the update
  float lr = 0;
  double grad_norm = 0;
  LossReport loss;   // summed over the step's micro-batches (all ranks)
  int64_t tokens = 0;
  double seconds = 0;
};

class Trainer {
 public:
  // `meta` is written into checkpoints alongside the model (e.g. the tokenizer's keys).
  Trainer(TrainableModel& model, const TrainData& data, const TrainOptions& opt, GgufMetadata meta);
  // A frozen model (the base) whose logits on each packed sequence feed the teacher terms of the loss; it
  // must outlive the trainer. Null: none.
  void set_teacher(TrainableModel* teacher) { teacher_ = teacher; }
  // Restores parameters, optimizer state and the step count from a checkpoint written by save_checkpoint.
  void resume(const std::string& path);
  // Trains until opt.steps; on_step runs after every update (on every rank).
  void run(const std::function<void(const StepReport&)>& on_step = {});
  int64_t step() const { return step_; }
  // Atomic GGUF: model tensors (fp32), optimizer moments as train.adam_m.* / train.adam_v.*, the anchor (if
  // any) as train.anchor.*, jf.train.* keys.
  void save_checkpoint(const std::string& path);

 private:
  // A seeded shuffle of n examples per epoch; `salt` keeps the packed and the text orders independent.
  struct EpochOrder {
    explicit EpochOrder(uint64_t s = 0) : salt(s) {}
    uint64_t salt;
    int64_t epoch = -1;
    std::vector<size_t> perm;
    size_t at(int64_t global_index, int64_t n, uint64_t seed);
  };
  LossReport micro_batch(size_t example, float* grad_out, int64_t* tokens);
  LossReport text_micro_batch(size_t example, float* grad_out, int64_t* tokens);
  LossReport draft_head_batch(const PackedSequence& p, float* grad_out);
  int trained_chain_steps() const;
  void backward_into(float* grad_out);
  const float* teacher_forward(const TrainSequence& s, size_t rows);

  TrainableModel& model_;
  TrainableModel* teacher_ = nullptr;
  const TrainData& data_;
  TrainOptions opt_;
  GgufMetadata meta_;
  AdamW adam_;
  int64_t step_ = 0;
  EpochOrder order_, text_order_{EpochOrder(1)};
  std::vector<float> dlogits_, total_grad_, teacher_logits_;
  std::vector<std::vector<float>> micro_grads_;
};

}  // namespace jf
