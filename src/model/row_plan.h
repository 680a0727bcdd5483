// A forward's rows, flattened over its sequences: each new token's cache slot, position and visible slots.
// Built the same way for every backend (the CPU Transformer and the GPU ones), so every backend attends over
// the same slots in the same order and validates its input with the same errors.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/batch.h"
#include "model/config.h"

namespace jf {

struct PlannedRow {
  KvCache* cache;
  int32_t token, pos, slot;
  int32_t slots_begin, slots_end;  // its visible cache slots in RowPlan::slot_list
  int32_t local_begin, local_end;  // those inside the sliding window (local layers), in slot_list
};

struct RowPlan {
  std::vector<PlannedRow> rows;
  std::vector<int32_t> slot_list;
  std::vector<int32_t> logit_src;  // row index of each requested logit row
  std::vector<int32_t> seq_first;  // first row of each sequence, and rows.size() at the end

  // Validates the sequences (tokens, positions, masks, logit rows), claims their cache slots (throws when a
  // context is full), sets the new slots' positions and lists each row's visible slots.
  void build(const ModelConfig& cfg, std::span<SequenceInput* const> seqs);

  // The row a draft chain continues from (ForwardResult::chain): logit row `logit_row`'s. Checks (JF_CHECK)
  // that it is a logit row, that `first` is in the vocabulary and that its sequence's cache ends with the row.
  int64_t chain_source(int logit_row, int32_t first, int vocab) const;

 private:
  void list_visible_slots(const ModelConfig& cfg, const SequenceInput& s, int past, int i, PlannedRow& r);
};

}  // namespace jf
