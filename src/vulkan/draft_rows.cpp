// The draft layer inside a forward on the device, on the rows of the sequences that draft from it alone (the
// rows model/draft_rows.h describes, as the CPU's): in a server's batch a sequence that does not draft pays
// nothing for it.
// Those rows are copied into a pass of their own (draft_plan_, draft_act_, draft_in_), with the cache slots
// the forward claimed for them, and the layer and the draft head run there in the same command buffer.
#include "vulkan/vulkan_forward.h"
#include "vulkan/vulkan_forward_parts.h"

namespace jf::vulkan {

// draft_plan_ from plan_ (the rows model/draft_rows.h says, with their visible slots): the drafting rows as a
// pass of their own; the draft head's rows are the logit rows that asked for draft logits. False when no
// sequence drafts.
bool VulkanForward::plan_draft_rows(std::span<SequenceInput* const> seqs) {
  DraftRows& dr = draft_rows_;
  dr.plan(plan_, seqs, cfg_.draft_layer);
  RowPlan& d = draft_plan_;
  d.rows.clear(), d.slot_list.clear(), d.logit_src.clear();
  d.seq_first = dr.seq_first;
  auto copy_slots = [&](int32_t begin, int32_t end, int32_t* new_begin, int32_t* new_end) {
    *new_begin = static_cast<int32_t>(d.slot_list.size());
    d.slot_list.insert(d.slot_list.end(), plan_.slot_list.begin() + begin, plan_.slot_list.begin() + end);
    *new_end = static_cast<int32_t>(d.slot_list.size());
  };
  for (int32_t r : dr.rows) {
    PlannedRow row = plan_.rows[static_cast<size_t>(r)];
    copy_slots(row.slots_begin, row.slots_end, &row.slots_begin, &row.slots_end);
    copy_slots(row.local_begin, row.local_end, &row.local_begin, &row.local_end);
    d.rows.push_back(row);
  }
  for (int32_t l : dr.logit_rows) d.logit_src.push_back(dr.place[static_cast<size_t>(plan_.logit_src[static_cast<size_t>(l)])]);
  return !dr.empty();
}

// The drafting rows' final hidden states copied into the draft pass (a region per run of rows), the layer on
// them (record_draft_layer), and with `drafts` the draft head on the rows that asked.
void VulkanForward::record_draft_rows(bool drafts) {
  const uint64_t row_bytes = static_cast<uint64_t>(cfg_.dim) * 4;
  std::vector<VkBufferCopy> regions;
  for (size_t r = 0; r < draft_rows_.place.size(); r++) {
    const int32_t at = draft_rows_.place[r];
    if (at < 0) continue;
    if (!regions.empty() && regions.back().srcOffset + regions.back().size == r * row_bytes &&
        regions.back().dstOffset + regions.back().size == static_cast<uint64_t>(at) * row_bytes)
      regions.back().size += row_bytes;
    else
      regions.push_back(VkBufferCopy{r * row_bytes, static_cast<uint64_t>(at) * row_bytes, row_bytes});
  }
  rec_.copy_regions(act_->x.view(), draft_act_->x.view(), regions);
  rows_ = &draft_plan_, a_ = draft_act_.get(), in_ = draft_in_.get();
  record_draft_layer();
  const uint32_t nd = static_cast<uint32_t>(draft_plan_.logit_src.size());
  if (drafts && nd > 0) {
    record_head(weights_->draft_output, a_->xb.view(), nd, a_->draft_logits_dev, a_->draft_logits, a_->draft_picks, draft_host_);
  }
  rows_ = &plan_, a_ = act_.get(), in_ = main_in_.get();
}

}  // namespace jf::vulkan
