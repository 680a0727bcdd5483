// Draft chains on the device (ForwardResult::chain): the draft layer run again after a forward on virtual rows
// past a sequence's last verified one (as Transformer::row_chain does on the CPU), each step's draft staying on
// the device (argmax into `tokens`), where the next step's embedding lookup reads it.
// - Asked for up front (SequenceInput::chain_depth): in the forward's own submission, from the row the device
//   finds verified (shaders/chain_plan.comp), for every sequence that asked, as rows of one pass per step.
// - Otherwise, when a decoder asks: one submission of its own, from the row it names (counted as a fetch).
#include <algorithm>

#include "base/error.h"
#include "vulkan/kv_storage.h"
#include "vulkan/vulkan_forward.h"
#include "vulkan/vulkan_forward_parts.h"

namespace jf::vulkan {

// Which sequences' chains run inside this forward (SequenceInput::chain_depth): each one's depth fits its cache
// and the forward's chain (at most kChainRows sequences, kChainTreeRows logit rows each); their inputs: the
// table the plan kernel walks (chain_meta_) and each step's arena, with its angle table for every candidate end.
bool VulkanForward::plan_chains(std::span<SequenceInput* const> seqs) {
  chain_of_logit_.assign(plan_.logit_src.size(), -1);
  chain_rows_ = chain_steps_ = 0;
  std::vector<size_t> chaining;
  int first_logit = 0;
  std::vector<int> logit_first(seqs.size());
  for (size_t s = 0; s < seqs.size(); s++) {
    logit_first[s] = first_logit;
    const SequenceInput& in = *seqs[s];
    const int nl = static_cast<int>(in.logit_rows.size());
    first_logit += nl;
    if (in.chain_depth <= 0 || !in.draft_logits || nl == 0 || nl > kChainTreeRows || chaining.size() >= kChainRows) continue;
    check_verify_parent(in);
    chaining.push_back(s);
    chain_steps_ = std::max(chain_steps_, in.chain_depth);
  }
  std::vector<size_t> fits;  // (every chain runs chain_steps_ steps: each needs that many free slots)
  for (size_t s : chaining)
    if (seqs[s]->cache->capacity() - seqs[s]->cache->size() >= chain_steps_) fits.push_back(s);
  if (fits.empty()) return false;
  chain_rows_ = static_cast<int>(fits.size());
  upload_walk_meta(*chain_meta_, seqs, fits, logit_first, 0, chain_of_logit_);
  upload_chain_steps(seqs, fits, logit_first);
  return true;
}

void VulkanForward::check_verify_parent(const SequenceInput& in) {
  const size_t nl = in.logit_rows.size();
  JF_CHECK(!in.verify_parent.empty() && in.verify_parent[0] == -1 && in.verify_parent.size() <= nl,
           "SequenceInput::verify_parent: logit row 0 must be the root (-1)");
  for (size_t i = 1; i < in.verify_parent.size(); i++)
    JF_CHECK(in.verify_parent[i] == -2 || (in.verify_parent[i] >= 0 && in.verify_parent[i] < static_cast<int32_t>(i)),
             "SequenceInput::verify_parent: a parent must be an earlier logit row (or -2: not verified)");
}

// The table a plan kernel walks (chain_plan.comp, tree_plan.comp): per sequence its first logit row, logit rows,
// cache size before the forward and first angle-table entry; then `ext` words per sequence (at meta.extra, for
// the caller); then per logit row (at meta.info) its parent, token, slot, draft-layer row and draft-logit row.
// Offsets depend on the sequence count alone (a replayed recording's push constants stay right).
int32_t* VulkanForward::upload_walk_meta(Inputs& meta, std::span<SequenceInput* const> seqs, const std::vector<size_t>& fits,
                                         const std::vector<int>& logit_first, uint32_t ext, std::vector<int32_t>& seq_of_logit) {
  const size_t nl = plan_.logit_src.size(), C = fits.size();
  ensure_size(*ctx_, meta.arena, ((4 + ext) * C + 5 * nl) * 4, Buffer::Kind::Host);
  ensure_size(*ctx_, meta.device, meta.arena.size(), Buffer::Kind::Device);
  meta.extra = static_cast<uint32_t>(4 * C);
  meta.info = static_cast<uint32_t>((4 + ext) * C);
  seq_of_logit.assign(nl, -1);
  auto* m = static_cast<int32_t*>(meta.arena.mapped());
  int table = 0;
  for (size_t c = 0; c < C; c++) {
    const SequenceInput& in = *seqs[fits[c]];
    const int l0 = logit_first[fits[c]], n = static_cast<int>(in.logit_rows.size());
    const int past = plan_.rows[static_cast<size_t>(plan_.seq_first[fits[c]])].slot;  // (its first row's slot)
    m[4 * c] = l0, m[4 * c + 1] = n, m[4 * c + 2] = past, m[4 * c + 3] = table;
    table += n;
    for (int i = 0; i < n; i++) {
      const size_t l = static_cast<size_t>(l0 + i);
      const int32_t src = plan_.logit_src[l], parent = static_cast<size_t>(i) < in.verify_parent.size() ? in.verify_parent[i] : -2;
      int32_t* row = m + meta.info + 5 * l;
      row[0] = parent >= 0 ? l0 + parent : parent;
      row[1] = plan_.rows[static_cast<size_t>(src)].token, row[2] = plan_.rows[static_cast<size_t>(src)].slot;
      row[3] = draft_rows_.place[static_cast<size_t>(src)], row[4] = draft_rows_.draft_logit[l];
      seq_of_logit[l] = static_cast<int32_t>(c);
    }
  }
  return m + meta.extra;
}

// Angle tables for the plan kernels: for every logit row of the sequences `fits`, in order, the RoPE angles
// (cos, then sin) of its position + `ahead`.
void VulkanForward::write_end_angles(std::span<SequenceInput* const> seqs, const std::vector<size_t>& fits,
                                     const std::vector<int>& logit_first, int ahead, float* table) {
  const int half = cfg_.rope_dim / 2;
  for (size_t s : fits) {
    const SequenceInput& in = *seqs[s];
    const RopeTable rope = rope_table(cfg_, in.cache->capacity());
    for (size_t i = 0; i < in.logit_rows.size(); i++, table += 2 * half) {
      const int32_t src = plan_.logit_src[static_cast<size_t>(logit_first[s]) + i];
      rope_angles(rope, cfg_.rope_dim, plan_.rows[static_cast<size_t>(src)].pos + ahead, table, table + half);
    }
  }
}

// The passes of rows past each sequence's verified path, one arena a step (chains: a row a sequence a step;
// grown trees: a level's `per_seq` rows): row r of step j at the cache's free slot j * per_seq + r, its slot
// list the cache before the forward followed by room for the path and the row's ancestors up to step j (the
// plan kernel writes those, and the row's angles from the table of angles at every candidate end's position
// + 1 + j).
void VulkanForward::upload_virtual_steps(std::span<SequenceInput* const> seqs, const std::vector<size_t>& fits,
                                         const std::vector<int>& logit_first, int steps, int per_seq, RowPlan& p,
                                         std::vector<std::unique_ptr<Inputs>>& ins) {
  const int half = cfg_.rope_dim / 2;
  while (ins.size() < static_cast<size_t>(steps)) ins.push_back(std::make_unique<Inputs>());
  p.logit_src.clear();
  p.seq_first.resize(fits.size() + 1);
  for (size_t t = 0; t <= fits.size(); t++) p.seq_first[t] = static_cast<int>(t) * per_seq;
  int table_rows = 0;
  for (size_t s : fits) table_rows += static_cast<int>(seqs[s]->logit_rows.size());
  for (int j = 0; j < steps; j++) {
    p.rows.clear(), p.slot_list.clear();
    for (size_t s : fits) {
      KvCache* cache = seqs[s]->cache;
      const int past = plan_.rows[static_cast<size_t>(plan_.seq_first[s])].slot, n = static_cast<int>(seqs[s]->logit_rows.size());
      for (int r = 0; r < per_seq; r++) {
        const int32_t begin = static_cast<int32_t>(p.slot_list.size());
        for (int k = 0; k < past; k++) p.slot_list.push_back(k);
        p.slot_list.insert(p.slot_list.end(), static_cast<size_t>(n + j + 1), -1);
        // (the list's end is the plan kernel's; the host's row says how far it can reach: split attention's chunks)
        const int32_t end = static_cast<int32_t>(p.slot_list.size());
        p.rows.push_back(PlannedRow{cache, 0, 0, cache->size() + j * per_seq + r, begin, end, begin, end});
      }
    }
    in_ = ins[static_cast<size_t>(j)].get();
    rows_ = &p;
    upload_inputs(static_cast<uint32_t>(2 * table_rows * half));
    write_end_angles(seqs, fits, logit_first, 1 + j, static_cast<float*>(in_->arena.mapped()) + in_->extra);
  }
  rows_ = &plan_, in_ = main_in_.get();
}

// Each step's arena (a row a chain), the chains' activations and their tokens' and sources' buffers.
void VulkanForward::upload_chain_steps(std::span<SequenceInput* const> seqs, const std::vector<size_t>& fits,
                                       const std::vector<int>& logit_first) {
  const int C = static_cast<int>(fits.size());
  upload_virtual_steps(seqs, fits, logit_first, chain_steps_, 1, chain_plan_, chain_in_);
  Activations& a = *chain_act_;
  grow_activations(a, C, true);
  ensure_size(*ctx_, a.tokens, static_cast<size_t>((chain_steps_ + 1) * C) * 4, Buffer::Kind::Host);
  ensure_size(*ctx_, chain_source_, static_cast<size_t>(2 * C) * 4, Buffer::Kind::Host);
}

// In the forward's recording, after its draft head: each step's plan (chain_plan.comp, independent of each
// other), each chain's hidden state gathered from the draft layer's pass, then the steps.
void VulkanForward::record_planned_chains() {
  Activations& a = *chain_act_;
  const uint32_t C = static_cast<uint32_t>(chain_rows_), half = static_cast<uint32_t>(cfg_.rope_dim / 2);
  rec_.skip_barriers(chain_steps_ - 1);
  for (int j = 0; j < chain_steps_; j++) {
    const Inputs& in = *chain_in_[static_cast<size_t>(j)];
    struct {
      uint32_t n_chains, rows_off, step, half_dim, info_off, slots_off, cos_off, sin_off, table_off;
    } p{C, chain_meta_->info, static_cast<uint32_t>(j), half, in.info, in.slots, in.cos, in.sin, in.extra};
    rec_.dispatch(kernels_->get("chain_plan", 6),
                  {chain_meta_->device.view(), act_->picks.view(), draft_act_->draft_picks.view(), in.device.view(), a.tokens.view(),
                   chain_source_.view()},
                  p, C);
  }
  const DeviceMatrix hidden{draft_act_->x.view(), DType::F32, static_cast<uint32_t>(draft_plan_.rows.size()), static_cast<uint32_t>(cfg_.dim)};
  get_rows(hidden, chain_source_.view(), 0, C, a.x.view(), 1.0f);
  rows_ = &chain_plan_, a_ = chain_act_.get();
  record_chain_steps(chain_steps_);
  rows_ = &plan_, a_ = act_.get(), in_ = main_in_.get();
}

// After the forward: each chain's drafts and path end, kept (a chain asked for later reuses the buffers).
void VulkanForward::read_planned_chains() {
  const size_t C = static_cast<size_t>(chain_rows_);
  const auto* tokens = static_cast<const int32_t*>(chain_act_->tokens.mapped());
  const auto* source = static_cast<const int32_t*>(chain_source_.mapped());
  chain_tokens_.assign(tokens, tokens + (chain_steps_ + 1) * C);
  chain_end_.assign(source + C, source + 2 * C);
  chains_in_forward_ += C;
  bytes_to_host_ += (chain_tokens_.size() + C) * 4;
}

// ForwardResult::chain from a chain that ran inside the forward: its drafts when `logit_row` is the row the
// device found verified, `first` its shifted draft and `count` within the depth; else -1.
int VulkanForward::planned_chain(int logit_row, int32_t first, int count, int32_t* out) {
  const int32_t c = chain_of_logit_.empty() ? -1 : chain_of_logit_[static_cast<size_t>(logit_row)];
  if (c < 0 || chain_end_[static_cast<size_t>(c)] != logit_row || chain_tokens_[static_cast<size_t>(c)] != first || count > chain_steps_)
    return -1;
  plan_.chain_source(logit_row, first, cfg_.vocab_size);  // (the same checks as a chain of its own)
  for (int k = 0; k < count; k++) out[k] = chain_tokens_[static_cast<size_t>((k + 1) * chain_rows_ + c)];
  return count;
}

int VulkanForward::row_chain(int logit_row, int32_t first, int count, int32_t* out) {
  if (!cfg_.draft_layer || count <= 0) return 0;
  if (const int made = planned_chain(logit_row, first, count, out); made >= 0) return made;
  extra_fetches_++;  // (not asked for up front, or from another row: a submission of its own)
  JF_CHECK(layer_ran_, "a draft chain after a forward that did not run the draft layer (no draft_logits asked for)");
  const int64_t source = plan_.chain_source(logit_row, first, cfg_.vocab_size);
  KvCache& cache = *plan_.rows[static_cast<size_t>(source)].cache;
  const int32_t layer_row = draft_rows_.place[static_cast<size_t>(source)];  // its row in the draft layer's pass
  JF_CHECK(layer_row >= 0, "a draft chain from a row of a sequence that did not draft in the last forward");
  const int32_t source_pos = plan_.rows[static_cast<size_t>(source)].pos;
  const int past = cache.size();
  count = std::min(count, cache.capacity() - past);
  if (count <= 0) return 0;
  rows_ = &chain_plan_, a_ = chain_act_.get();
  struct Restore {  // the forward's pass and the cache's size again, also when a step throws
    VulkanForward* f;
    KvCache& cache;
    int past;
    ~Restore() {
      if (cache.size() > past) cache.truncate(past);
      f->rows_ = &f->plan_, f->a_ = f->act_.get(), f->in_ = f->main_in_.get();
    }
  } restore{this, cache, past};
  Activations& a = *a_;
  grow_activations(a, 1, true);
  ensure_size(*ctx_, a.tokens, static_cast<size_t>(count + 1) * 4, Buffer::Kind::Host);
  while (chain_in_.size() < static_cast<size_t>(count)) chain_in_.push_back(std::make_unique<Inputs>());
  auto* tokens = static_cast<int32_t*>(a.tokens.mapped());  // tokens[j]: step j's input; it writes j + 1
  tokens[0] = first;
  cache.append(count);
  RowPlan& p = chain_plan_;
  p.slot_list.clear();
  for (int s = 0; s < past; s++) p.slot_list.push_back(s);  // the cache up to the row; then the chain's own rows
  p.logit_src.clear();
  p.seq_first = {0, 1};
  for (int j = 0; j < count; j++) {  // every step's inputs, in its own arena
    const int32_t slot = past + j, pos = source_pos + 1 + j;
    cache.set_position(slot, pos);
    p.slot_list.push_back(slot);
    const int32_t end = static_cast<int32_t>(p.slot_list.size());
    p.rows = {PlannedRow{&cache, 0, pos, slot, 0, end, 0, end}};  // (its token is read from `tokens`)
    in_ = chain_in_[static_cast<size_t>(j)].get();
    upload_inputs();
  }
  // (kept and replayed as forwards are: replay_cache.h)
  DeviceKvStore* store = const_cast<DeviceKvStore*>(&dynamic_cast<const DeviceKvStore&>(*cache.device_store()));
  submit(chain_replay_, false, std::span<DeviceKvStore* const>(&store, 1), [&] {
    for (int j = 0; j < count; j++) stage_inputs(*chain_in_[static_cast<size_t>(j)]);
    const uint32_t dim = static_cast<uint32_t>(cfg_.dim);  // the row's draft-layer output, before the norm
    rec_.copy(draft_act_->x.view(static_cast<size_t>(layer_row) * dim * 4, dim * 4), a.x.view(0, dim * 4));
    record_chain_steps(count);
  });
  bytes_to_host_ += static_cast<uint64_t>(count) * 4;
  std::copy(tokens + 1, tokens + 1 + count, out);
  return count;
}

// A chain's `steps` steps over chain_plan_'s rows (one per chain; step j's inputs in chain_in_[j], its input
// tokens at tokens[j * rows]), from the hidden states in x.
void VulkanForward::record_chain_steps(int steps) {
  Activations& a = *chain_act_;
  const uint32_t C = static_cast<uint32_t>(chain_plan_.rows.size());
  for (int j = 0; j < steps; j++) {
    in_ = chain_in_[static_cast<size_t>(j)].get();
    add_token_embeddings(a.tokens.view(), static_cast<uint32_t>(j) * C, C, a.x.view());
    record_layer(cfg_.n_layers);
    record_draft_head(a.x.view(), C, a.head.view());
    argmax(a.head.view(), C, a.tokens.view(), static_cast<uint32_t>(j + 1) * C);
  }
}

}  // namespace jf::vulkan
