// VulkanForward::row_chain (ForwardResult::chain): the draft layer run again after a forward on one virtual row past the last
// verified one (as Transformer::row_chain does on the CPU), every chained token in one submission: each
// step's draft stays on the device (argmax into `tokens`), where the next step's embedding lookup reads it,
// so a chain of 5 waits for the device once, not 5 times.
#include <algorithm>

#include "base/error.h"
#include "vulkan/kv_storage.h"
#include "vulkan/vulkan_forward.h"
#include "vulkan/vulkan_forward_parts.h"

namespace jf::vulkan {

int VulkanForward::row_chain(int logit_row, int32_t first, int count, int32_t* out) {
  if (!cfg_.draft_layer || count <= 0) return 0;
  JF_CHECK(layer_ran_, "a draft chain after a forward that did not run the draft layer (no draft_logits asked for)");
  const int64_t source = plan_.chain_source(logit_row, first, cfg_.vocab_size);
  KvCache& cache = *plan_.rows[static_cast<size_t>(source)].cache;
  const int32_t layer_row = draft_row_of_[static_cast<size_t>(source)];  // its row in the draft layer's pass
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
  // The recording of this shape if one is kept (as forwards are: replay_cache.h), else a new one.
  if (replay_on_) {
    chain_key_.assign({static_cast<uint64_t>(count), static_cast<uint64_t>(layer_row), draft_act_->x.serial()});
    chain_key_.push_back(dynamic_cast<const DeviceKvStore&>(*cache.device_store()).serial());
    for (const Buffer* b : {&a.x, &a.xb, &a.q, &a.k, &a.v, &a.att, &a.hg, &a.hu, &a.emb, &a.head, &a.tokens}) chain_key_.push_back(b->serial());
    for (int j = 0; j < count; j++)
      chain_key_.insert(chain_key_.end(), {chain_in_[static_cast<size_t>(j)]->arena.serial(), chain_in_[static_cast<size_t>(j)]->device.serial()});
  }
  DeviceKvStore* store = const_cast<DeviceKvStore*>(&dynamic_cast<const DeviceKvStore&>(*cache.device_store()));
  submit(chain_replay_, chain_key_, false, std::span<DeviceKvStore* const>(&store, 1), [&] { record_chain(count, layer_row); });
  std::copy(tokens + 1, tokens + 1 + count, out);
  return count;
}

// A chain's `count` steps on chain_plan_'s row (its inputs uploaded to chain_in_), from the draft layer's
// output for row `layer_row` of the last forward.
void VulkanForward::record_chain(int count, int32_t layer_row) {
  Activations& a = *chain_act_;
  const uint32_t dim = static_cast<uint32_t>(cfg_.dim);
  for (int j = 0; j < count; j++) stage_inputs(*chain_in_[static_cast<size_t>(j)]);
  for (int j = 0; j < count; j++) {
    in_ = chain_in_[static_cast<size_t>(j)].get();
    if (j == 0)  // the row's draft-layer output, before the norm
      rec_.copy(draft_act_->x.view(static_cast<size_t>(layer_row) * dim * 4, dim * 4), a.x.view(0, dim * 4));
    get_rows(weights_->tok_embd, a.tokens.view(), static_cast<uint32_t>(j), 1, a.emb.view(), 1.0f);
    add_scaled_embedding(a, 1);
    record_layer(cfg_.n_layers);
    rmsnorm(a.x.view(), a.xb.view(), weights_->draft_output_norm, 1, dim, false);
    matmul(weights_->draft_output, a.xb.view(), 1, a.head.view(), false);
    softcap(a.head.view(), static_cast<uint64_t>(cfg_.vocab_size));
    argmax(a.head.view(), 1, a.tokens.view(), static_cast<uint32_t>(j + 1));
  }
}

}  // namespace jf::vulkan
