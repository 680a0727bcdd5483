#include "train/trainer.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/rng.h"
#include "base/timer.h"
#include "model/convert.h"
#include "train/distributed.h"

namespace jf {

namespace {

std::vector<int64_t> param_sizes(TrainableModel& m) {
  std::vector<int64_t> s;
  for (const auto& p : m.params()) s.push_back(p.size);
  return s;
}

}  // namespace

Trainer::Trainer(TrainableModel& model, const TrainData& data, const TrainOptions& opt, GgufMetadata meta)
    : model_(model), data_(data), opt_(opt), meta_(std::move(meta)), adam_(param_sizes(model), opt.adam) {
  if (data_.size() == 0) throw Error("no training examples");
  if (opt_.accum < 1) throw Error("--accum must be >= 1");
  if (opt_.steps < 1) throw Error("--steps must be >= 1");
  if (opt_.objective == Objective::Ar && data_.text.empty()) throw Error("objective 'ar' needs text sequences");
  if (opt_.objective != Objective::Ar && data_.packed.empty()) throw Error("objective '" + objective_name(opt_.objective) + "' needs packed Jacobi sequences");
  if (opt_.adam.anchor_decay < 0) throw Error("--anchor-decay must be >= 0");
  if (opt_.objective == Objective::DraftHead && !model_.config().draft_head) throw Error("objective 'draft-head' needs a model with a draft head");
  if (opt_.objective == Objective::DraftHead && (opt_.text_accum > 0 || opt_.loss.teacher_consistency))
    throw Error("objective 'draft-head' trains on packed sequences alone, against the model's own clean rows");
  if (model_.config().draft_chain > 0 && opt_.objective == Objective::DraftHead && opt_.loss.consistency_rows == 1)
    throw Error("a draft chain trains the row after the first mismatch: --consistency-rows must be 0 or at least 2");
  if (opt_.text_accum < 0) throw Error("--text-accum must be >= 0");
  if (opt_.text_weight < 0) throw Error("--text-weight must be >= 0");
  if (opt_.text_accum > 0 && (opt_.objective == Objective::Ar || data_.text.empty()))
    throw Error("real-text micro-batches (--text-accum) need a Jacobi objective and a text corpus");
  if (opt_.adam.anchor_decay > 0) {  // the anchor is the model as it is now: the base the fine-tune starts from
    std::vector<std::vector<float>> anchor;
    for (const auto& p : model_.params()) anchor.emplace_back(p.data, p.data + p.size);
    adam_.set_anchor(std::move(anchor));
  }
}

// Seeded shuffle per epoch: the order depends only on the seed and the position in the run, so a resumed
// run sees the same examples as an uninterrupted one.
size_t Trainer::EpochOrder::at(int64_t g, int64_t n, uint64_t seed) {
  const int64_t e = g / n;
  if (e != epoch) {
    perm.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) perm[i] = static_cast<size_t>(i);
    Rng rng(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(e) + 1 + salt * 0xD1B54A32D192ED03ull);
    for (int64_t i = n - 1; i > 0; i--) std::swap(perm[i], perm[rng.below(static_cast<uint32_t>(i + 1))]);
    epoch = e;
  }
  return perm[static_cast<size_t>(g % n)];
}

const float* Trainer::teacher_forward(const TrainSequence& s, size_t rows) {
  if (!teacher_) return nullptr;
  const float* tl = teacher_->forward(s);  // frozen: forward only, never a backward
  teacher_logits_.assign(tl, tl + rows * static_cast<size_t>(model_.config().vocab_size));
  return teacher_logits_.data();
}

void Trainer::backward_into(float* grad_out) {
  model_.backward(dlogits_.data());
  std::copy(model_.grad_data(), model_.grad_data() + model_.n_params(), grad_out);
}

LossReport Trainer::micro_batch(size_t example, float* grad_out, int64_t* tokens) {
  const int V = model_.config().vocab_size;
  model_.zero_grad();
  LossReport r;
  if (opt_.objective == Objective::Ar) {
    const std::vector<int32_t>& t = data_.text[example];
    TrainSequence s = TrainSequence::causal(t);
    const float* logits = model_.forward(s);
    dlogits_.resize(t.size() * static_cast<size_t>(V));
    r = lm_loss(t, logits, V, dlogits_.data());
    *tokens = static_cast<int64_t>(t.size());
  } else {
    const PackedSequence& p = data_.packed[example];
    TrainSequence s;
    s.tokens = p.tokens;
    s.positions = p.positions;
    PackedSequence q = p;
    if (opt_.objective == Objective::Cllm) q.mask = MaskKind::CleanContext;  // CLLM: noisy blocks see clean context
    q.build_mask(s.mask);
    const float* teacher_logits = teacher_forward(s, p.tokens.size());
    const float* logits = model_.forward(s);
    dlogits_.resize(p.tokens.size() * static_cast<size_t>(V));
    *tokens = static_cast<int64_t>(p.tokens.size());
    if (opt_.objective == Objective::DraftHead) return draft_head_batch(q, grad_out);
    r = packed_loss(opt_.objective, q, logits, V, opt_.loss, dlogits_.data(), teacher_logits);
  }
  backward_into(grad_out);
  return r;
}

// The chain steps the draft-head objective trains end to end: the file's depth, as far as the consistency term
// reaches (a row at offset s from the first mismatch is step s's).
int Trainer::trained_chain_steps() const {
  const int depth = model_.config().draft_chain, rows = opt_.loss.consistency_rows;
  return rows == 0 ? depth : std::min(depth, rows - 1);
}

// The draft head's noisy rows against the frozen model's own clean rows: consistency only, and a backward
// into the draft head (and draft layer) alone.
LossReport Trainer::draft_head_batch(const PackedSequence& p, float* grad_out) {
  std::vector<int32_t> into = consistency_rows(p), from = into;
  // (a draft layer trained to chain: the rows its chain drafts, as many steps as the consistency rows reach)
  const std::vector<DraftChainRow> chain = draft_chain_rows(p, trained_chain_steps());
  if (model_.config().draft_layer) {  // shifted drafts (ForwardPass::draft_shift): from the row before
    size_t kept = 0;
    for (size_t i = 0; i < into.size(); i++) {
      const int32_t source = draft_source_row(p, into[i]);
      if (source < 0) continue;  // (no context before the first block: the row is left out)
      if (std::any_of(chain.begin(), chain.end(), [&](const DraftChainRow& c) { return c.into == into[i]; })) continue;
      from[kept] = source;
      into[kept++] = into[i];
    }
    from.resize(kept);
    into.resize(kept);
  }
  const float* logits = model_.draft_logits(from, into, chain);
  ObjectiveOptions o = opt_.loss;
  o.ar_weight = 0.0f;
  LossReport r = packed_loss(Objective::JacobiForcing, p, logits, model_.config().vocab_size, o, dlogits_.data());
  model_.backward_draft_head(dlogits_.data());
  std::copy(model_.grad_data(), model_.grad_data() + model_.n_params(), grad_out);
  return r;
}

// A real-text micro-batch of a Jacobi fine-tune. Its weight is scaled by accum / text_accum so that, after
// the step divides the summed gradients by the packed micro-batch count, the text term enters as
// text_weight x its mean.
LossReport Trainer::text_micro_batch(size_t example, float* grad_out, int64_t* tokens) {
  const int V = model_.config().vocab_size;
  model_.zero_grad();
  const std::vector<int32_t>& t = data_.text[example];
  TrainSequence s = TrainSequence::causal(t);
  const float* teacher_logits = teacher_forward(s, t.size());
  const float* logits = model_.forward(s);
  dlogits_.resize(t.size() * static_cast<size_t>(V));
  const float scale = static_cast<float>(opt_.accum) / static_cast<float>(opt_.text_accum);
  LossReport r = text_loss(t, logits, V, opt_.text_weight * scale, dlogits_.data(), teacher_logits);
  *tokens = static_cast<int64_t>(t.size());
  backward_into(grad_out);
  return r;
}

void Trainer::run(const std::function<void(const StepReport&)>& on_step) {
  Distributed& dist = Distributed::get();
  const int64_t micro = static_cast<int64_t>(opt_.accum) * dist.size();  // packed/ar micro-batches per step, all ranks
  const int64_t text_micro = static_cast<int64_t>(opt_.text_accum) * dist.size();
  const int64_t n_data = static_cast<int64_t>(data_.size()), n_text = static_cast<int64_t>(data_.text.size());
  const int64_t n = model_.n_params();
  const int64_t warmup = static_cast<int64_t>(std::lround(opt_.warmup * static_cast<float>(opt_.steps)));
  std::vector<TrainableModel::Param> params = model_.params();
  std::vector<float*> pdata, pgrad;
  std::vector<int64_t> sizes;
  std::unique_ptr<bool[]> decay(new bool[params.size()]);  // weight decay on matrices only
  for (size_t i = 0; i < params.size(); i++) {
    pdata.push_back(params[i].data);
    sizes.push_back(params[i].size);
    decay[i] = params[i].dims.size() == 2;
    // draft-head: the rest of the model is frozen (its gradients are zero; no weight decay moves it)
    if (opt_.objective == Objective::DraftHead && !params[i].name.starts_with("draft_")) decay[i] = false;
  }
  total_grad_.resize(static_cast<size_t>(n));
  micro_grads_.resize(static_cast<size_t>(opt_.accum + opt_.text_accum));
  for (auto& g : micro_grads_) g.resize(static_cast<size_t>(n));

  const int64_t last = opt_.stop_at > 0 ? std::min(opt_.stop_at, opt_.steps) : opt_.steps;
  while (step_ < last) {
    const double t0 = now_seconds();
    StepReport rep;
    std::vector<const float*> mine;
    // Micro-batch j < micro is packed (or ar) example j of the step, the rest real text; rank r takes
    // j = r, r + size, ...: every rank the same count of each kind.
    for (int64_t j = dist.rank(), k = 0; j < micro + text_micro; j += dist.size(), k++) {
      int64_t toks = 0;
      if (j < micro)
        rep.loss.add(micro_batch(order_.at(step_ * micro + j, n_data, opt_.seed), micro_grads_[k].data(), &toks));
      else
        rep.loss.add(text_micro_batch(text_order_.at(step_ * text_micro + j - micro, n_text, opt_.seed),
                                      micro_grads_[k].data(), &toks));
      rep.tokens += toks;
      mine.push_back(micro_grads_[k].data());
    }
    dist.ordered_sum(mine, micro + text_micro, n, total_grad_.data());
    const float inv = 1.0f / static_cast<float>(micro);
    for (int64_t i = 0; i < n; i++) total_grad_[i] *= inv;
    // Per-tensor views of the averaged gradient (same layout as the parameters).
    pgrad.clear();
    int64_t off = 0;
    for (const auto& p : params) pgrad.push_back(total_grad_.data() + off), off += p.size;
    rep.grad_norm = clip_grad_norm(pgrad, sizes, opt_.clip);
    rep.lr = cosine_lr(step_, opt_.steps, warmup, opt_.lr, opt_.min_lr);
    adam_.step(pdata, pgrad, std::span<const bool>(decay.get(), params.size()), rep.lr);
    step_++;
    rep.step = step_;
    rep.loss.total = dist.sum(rep.loss.total);
    rep.loss.ar = dist.sum(rep.loss.ar);
    rep.loss.consistency = dist.sum(rep.loss.consistency);
    rep.loss.teacher_kl = dist.sum(rep.loss.teacher_kl);
    rep.loss.text = dist.sum(rep.loss.text);
    OffsetReport& offsets = rep.loss.by_offset;
    for (int i = 0; i < kOffsetBuckets; i++) {
      offsets.kl[i] = dist.sum(offsets.kl[i]);
      offsets.rows[i] = static_cast<int64_t>(dist.sum(static_cast<double>(offsets.rows[i])));
      offsets.match[i] = static_cast<int64_t>(dist.sum(static_cast<double>(offsets.match[i])));
    }
    rep.tokens = static_cast<int64_t>(dist.sum(static_cast<double>(rep.tokens)));
    rep.seconds = now_seconds() - t0;
    if (on_step) on_step(rep);
    const bool save = !opt_.checkpoint_path.empty() &&
                      ((opt_.save_every > 0 && step_ % opt_.save_every == 0) || step_ == last);
    if (save && dist.rank() == 0) save_checkpoint(opt_.checkpoint_path);
  }
  dist.barrier();
}

void Trainer::save_checkpoint(const std::string& path) {
  TensorSet ts = model_.to_tensor_set(DType::F32);
  GgufWriter w;
  config_to_gguf(model_.config(), w.meta());
  for (const std::string& k : meta_.order()) w.meta().set(k, *meta_.find(k));
  w.meta().set("jf.train.step", GgufValue::of_u64(static_cast<uint64_t>(step_)));
  w.meta().set("jf.train.objective", GgufValue::of_string(objective_name(opt_.objective)));
  w.meta().set("jf.train.seed", GgufValue::of_u64(opt_.seed));
  for (const std::string& name : tensor_names(model_.config())) {
    const TensorRef* t = ts.find(name);
    JF_CHECK(t != nullptr, "missing tensor " + name);
    w.add_tensor(name, t->type, t->dims, t->data);
  }
  std::vector<TrainableModel::Param> params = model_.params();
  for (size_t i = 0; i < params.size(); i++) {
    w.add_tensor("train.adam_m." + params[i].name, DType::F32, params[i].dims, adam_.m()[i].data());
    w.add_tensor("train.adam_v." + params[i].name, DType::F32, params[i].dims, adam_.v()[i].data());
  }
  for (size_t i = 0; i < adam_.anchor().size(); i++)
    w.add_tensor("train.anchor." + params[i].name, DType::F32, params[i].dims, adam_.anchor()[i].data());
  w.write(path);
}

void Trainer::resume(const std::string& path) {
  auto f = GgufFile::open(path);
  const GgufMetadata& m = f->meta();
  if (!m.has("jf.train.step")) throw Error(path + ": not a jf training checkpoint (no jf.train.step)");
  step_ = m.get_int("jf.train.step");
  std::vector<TrainableModel::Param> params = model_.params();
  for (size_t i = 0; i < params.size(); i++) {
    const TrainableModel::Param& p = params[i];
    auto load = [&](const std::string& name, float* dst) {
      const GgufTensor* t = f->find_tensor(name);
      if (!t || t->type != DType::F32 || t->n_elements() != p.size)
        throw Error(path + ": tensor '" + name + "' is missing or has the wrong shape for this model");
      std::copy_n(reinterpret_cast<const float*>(t->data), p.size, dst);
    };
    load(p.name, p.data);
    load("train.adam_m." + p.name, adam_.m()[i].data());
    load("train.adam_v." + p.name, adam_.v()[i].data());
    if (!adam_.anchor().empty()) {
      if (!f->find_tensor("train.anchor." + p.name)) throw Error(path + ": the checkpoint has no anchor weights (trained without --anchor-decay)");
      load("train.anchor." + p.name, adam_.anchor()[i].data());
    }
  }
  adam_.set_steps(step_);
}

}  // namespace jf
