// Attention's recording (VulkanForward::record_attention) and the choice of its kernel: whole rows
// (shaders/attention.comp), or chunks of visible slots with 1, 2 or 4 rows a workgroup
// (shaders/attention_split.comp; attention_sweep.h times them).
#include <algorithm>
#include <string>

#include "base/error.h"
#include "vulkan/kv_storage.h"
#include "vulkan/vulkan_forward.h"
#include "vulkan/vulkan_forward_parts.h"

namespace jf::vulkan {

// Each sequence's attention, with its rows' RoPE and the store of their keys and values folded in
// (attention.comp: the rows' own slots are read from the activations, mark_own_slots): a workgroup per (row,
// head), or, in chunks of visible slots (attention_split.comp), per (1, 2 or 4 rows, key-value head, chunk)
// with the query group together, the last chunk of each to finish folding them. The sequences write apart (each its own cache,
// rows of att and counters): one barrier after them all.
void VulkanForward::record_attention(int l, bool local) {
  Activations& a = *a_;
  const size_t n_seqs = rows_->seq_first.size() - 1;
  size_t live = 0;
  for (size_t s = 0; s < n_seqs; s++) live += rows_->seq_first[s + 1] > rows_->seq_first[s] ? 1 : 0;
  if (live > 1) rec_.skip_barriers(static_cast<int>(live) - 1);
  const bool split = split_attention(), local_rope = cfg_.rope_theta_local > 0.0f && local;
  const uint32_t most_rows = attention().rows;
  std::vector<uint32_t> chunks;
  const uint32_t most = split ? plan_attention_chunks(local, chunks) : 0;
  for (size_t s = 0; s < n_seqs; s++) {
    const uint32_t r0 = u32(rows_->seq_first[s]), rows = u32(rows_->seq_first[s + 1]) - r0;
    if (rows == 0) continue;
    const DeviceKvStore& kv = device_store(*rows_->rows[r0].cache, ctx_.get());
    struct {  // (the whole-row kernel declares all but the last three)
      uint32_t row0, n_heads, n_kv_heads, head_dim, capacity, info_off, slots_off, local;
      float scale, cap;
      uint32_t half_dim, neox, cos_off, sin_off, chunk, max_chunks, rows;
    } pa{r0, u32(cfg_.n_heads), u32(cfg_.n_kv_heads), u32(cfg_.head_dim), u32(kv.capacity()), in_->info, in_->slots, local ? 1u : 0u,
         cfg_.attention_scale(), cfg_.attn_softcap, u32(cfg_.rope_dim / 2), cfg_.rope_style == RopeStyle::Neox ? 1u : 0u,
         local_rope ? in_->lcos : in_->cos, local_rope ? in_->lsin : in_->sin, attention_.chunk, most, rows};
    // (rows a workgroup: the choice's, or fewer for a sequence of fewer rows, a decode step's one: every
    // number gives the same bits, and a workgroup's unused rows would cost it registers for nothing)
    uint32_t group_rows = most_rows;
    while (group_rows > rows) group_rows /= 2;
    if (split)
      rec_.dispatch(attention_kernel(kv.f16(), group_rows),
                    {a.q.view(), kv.keys(l), kv.values(l), arena(), arena(), attention_part_.view(), a.k.view(), a.v.view(), a.att.view(),
                     attention_done_.view()},
                    pa, (rows + group_rows - 1) / group_rows, u32(cfg_.n_kv_heads), chunks[s]);
    else
      rec_.dispatch(attention_kernel(kv.f16(), 0),
                    {a.q.view(), kv.keys(l), kv.values(l), arena(), arena(), a.att.view(), a.k.view(), a.v.view()}, pa, rows,
                    u32(cfg_.n_heads));
  }
}

// Chunked attention's grid: each sequence's chunks (its longest row's) into `chunks`; returns the most of any,
// the partial results' buffer sized for them (its counters were grown with the pass's activations).
uint32_t VulkanForward::plan_attention_chunks(bool local, std::vector<uint32_t>& chunks) {
  const size_t n_seqs = rows_->seq_first.size() - 1;
  const auto plan = [&](bool in_window, std::vector<uint32_t>& out) {
    out.assign(n_seqs, 0);
    uint32_t most = 1;
    for (size_t s = 0; s < n_seqs; s++) {
      for (int32_t r = rows_->seq_first[s]; r < rows_->seq_first[s + 1]; r++) {
        const PlannedRow& row = rows_->rows[static_cast<size_t>(r)];
        const uint32_t nv = u32(in_window ? row.local_end - row.local_begin : row.slots_end - row.slots_begin);
        out[s] = std::max(out[s], (nv + attention_.chunk - 1) / attention_.chunk);
      }
      most = std::max(most, out[s]);
    }
    return most;
  };
  const uint32_t most = plan(local, chunks);
  // Sized for the pass's global layers (a sliding window sees no more slots): a later layer never grows it in
  // the middle of a recording that bound the old buffer (a local layer first, with replay off).
  std::vector<uint32_t> global;
  const uint32_t sized = local ? std::max(most, plan(false, global)) : most;
  const uint64_t part_floats = uint64_t{u32(rows_->rows.size())} * u32(cfg_.n_heads) * sized * u32(cfg_.head_dim + 2);
  ensure_size(*ctx_, attention_part_, static_cast<size_t>(part_floats) * 4, Buffer::Kind::Device);
  JF_CHECK(attention_done_.size() >= rows_->rows.size() * static_cast<size_t>(cfg_.n_kv_heads) * 4,
           "Vulkan: split attention's counters were not grown with the pass's activations");
  return most;
}

// Attention's kernel, specialized for the model: a thread's output dimensions (PER_THREAD, ceil(head_dim / 64))
// and, in chunks (rows > 0: a workgroup's, 1, 2 or 4), the query group (MAX_GROUP) and the rows (ROWS), so its
// arrays are as long as the model needs. Kept, since every layer's recording asks (a lookup by name and
// constants builds a key).
const Kernel& VulkanForward::attention_kernel(bool f16, uint32_t rows) {
  const bool split = rows > 0;
  const Kernel*& k = attention_kernels_[f16][rows == 4 ? 3 : rows];
  if (!k) {
    const uint32_t dims = u32((cfg_.head_dim + 63) / 64), group = u32(cfg_.n_heads / cfg_.n_kv_heads);
    const std::string name = f16 ? "attention_split_f16" : "attention_split_f32";
    k = split ? &kernels_->get(name, 10, {dims, group, rows}, rows > 1 ? name + "-r" + std::to_string(rows) : name)
              : &kernels_->get(f16 ? "attention_f16" : "attention_f32", 8, {dims});
  }
  return *k;
}

// Whether attention runs in chunks: set (set_attention, JF_VULKAN_ATTENTION=split-C) and the model's query
// groups fit the kernel (at most 8 query heads a key-value head).
bool VulkanForward::split_attention() const {
  return attention_.chunk > 0 && cfg_.n_heads / cfg_.n_kv_heads <= 8;
}

// Whether chunked attention can take `rows` rows a workgroup: their heads' scores, sums and outputs in
// registers (at most 16 heads: the rows times the query group) and their shared arrays in the device's
// shared memory (attention_split.comp: q, probabilities, scores and sums a head, slots a row).
bool VulkanForward::attention_rows_fit(uint32_t rows) const {
  const uint32_t group = u32(cfg_.n_heads / cfg_.n_kv_heads), heads = rows * group, wg = 64;
  const uint32_t dims = u32((cfg_.head_dim + 63) / 64) * wg, bytes = 4 * (heads * dims + 3 * heads * wg + rows * wg) + 4;
  return rows == 1 || (heads <= 16 && bytes <= ctx_->info().shared_memory);
}

AttentionChoice VulkanForward::attention() const {
  if (!split_attention()) return {};
  uint32_t rows = attention_.rows;
  while (rows > 1 && !attention_rows_fit(rows)) rows /= 2;
  return {attention_.chunk, rows};
}

}  // namespace jf::vulkan
