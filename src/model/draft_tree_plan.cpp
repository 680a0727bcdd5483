#include "model/draft_tree_plan.h"

#include <algorithm>

#include "base/error.h"
#include "model/kv_cache.h"

namespace jf {

void DraftTreePlan::check(std::span<const DraftNode> call, int vocab) const {
  const int expanded = open() ? nodes() : 0;
  for (const DraftNode& n : call) {
    JF_CHECK(n.parent >= -1 && n.parent < expanded, "a draft tree node's parent must be expanded in an earlier call");
    JF_CHECK(n.token >= 0 && n.token < vocab, "a draft tree node's token is outside the vocabulary");
  }
}

void DraftTreePlan::start(KvCache* cache, int32_t source_pos, int logit_row) {
  cache_ = cache, source_pos_ = source_pos, logit_row_ = logit_row;
  past_ = cache->size();
  pos_.clear(), parent_.clear();
}

void DraftTreePlan::check_row(int logit_row) const {
  JF_CHECK(logit_row_ == logit_row, "a draft tree from another row before end_tree()");
}

int DraftTreePlan::room(int wanted, int max_nodes) const {
  return std::max(0, std::min({wanted, cache_->capacity() - cache_->size(), max_nodes - nodes()}));
}

void DraftTreePlan::add_rows(std::span<const DraftNode> nodes, RowPlan& plan) {
  const int first = this->nodes();
  cache_->append(static_cast<int>(nodes.size()));
  for (size_t j = 0; j < nodes.size(); j++) {
    const DraftNode& n = nodes[j];
    const int slot = past_ + first + static_cast<int>(j);
    const int32_t pos = (n.parent < 0 ? source_pos_ : pos_[static_cast<size_t>(n.parent)]) + 1;
    pos_.push_back(pos), parent_.push_back(n.parent);
    cache_->set_position(slot, pos);
    const int32_t begin = static_cast<int32_t>(plan.slot_list.size());
    for (int s = 0; s < past_; s++) plan.slot_list.push_back(s);
    const size_t own = plan.slot_list.size();
    for (int a = n.parent; a >= 0; a = parent_[static_cast<size_t>(a)]) plan.slot_list.push_back(past_ + a);
    std::reverse(plan.slot_list.begin() + static_cast<std::ptrdiff_t>(own), plan.slot_list.end());
    plan.slot_list.push_back(slot);
    const int32_t end = static_cast<int32_t>(plan.slot_list.size());
    plan.rows.push_back(PlannedRow{cache_, n.token, pos, slot, begin, end, begin, end});
  }
}

void DraftTreePlan::close() {
  if (cache_) cache_->truncate(past_);
  cache_ = nullptr;
}

}  // namespace jf
