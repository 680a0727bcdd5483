// An open draft tree's nodes as rows (ForwardResult::expand_tree), planned the same way on every backend: node i
// sits in the cache slot past the sequence's own after the earlier nodes, one position past its parent, and
// sees the sequence's slots, its ancestors' (root-most first) and its own. The slots are claimed until close().
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/forward_pass.h"
#include "model/row_plan.h"

namespace jf {

class DraftTreePlan {
 public:
  bool open() const { return cache_ != nullptr; }
  int nodes() const { return static_cast<int>(pos_.size()); }
  // Checks a call's nodes (JF_CHECK): each parent expanded in an earlier call, each token in the vocabulary.
  void check(std::span<const DraftNode> call, int vocab) const;
  // Opens the tree for logit row `logit_row`, growing from a row at `source_pos` of `cache`'s sequence (the
  // cache ending with it); checks that later calls come from the same logit row.
  void start(KvCache* cache, int32_t source_pos, int logit_row);
  void check_row(int logit_row) const;
  // How many of `wanted` more nodes fit: the cache's free slots, and at most `max_nodes` in all.
  int room(int wanted, int max_nodes) const;
  // Claims the nodes' cache slots and appends their rows to `plan` (rows and slot_list).
  void add_rows(std::span<const DraftNode> nodes, RowPlan& plan);
  // Gives the cache its slots back.
  void close();

 private:
  KvCache* cache_ = nullptr;
  int past_ = 0, logit_row_ = -1;
  int32_t source_pos_ = 0;
  std::vector<int32_t> pos_, parent_;  // [node]
};

}  // namespace jf
