#include "model/forward_pass.h"

#include "base/error.h"

namespace jf {

ForwardResult ForwardPass::forward(std::span<SequenceInput* const> seqs) {
  serial_++;  // (before run: a forward that throws leaves no valid result either)
  rows_ = 0;
  run(seqs);
  for (const SequenceInput* s : seqs) rows_ += static_cast<int>(s->logit_rows.size());
  return ForwardResult(this, serial_, 0, rows_);
}

int ForwardResult::at(int r) const {
  JF_CHECK(pass_, "a ForwardResult of no forward");
  JF_CHECK(serial_ == pass_->serial_, "a forward's result used after the next forward (ForwardResult is valid until then)");
  JF_CHECK(r >= 0 && r < rows_, "logit row " + std::to_string(r) + " outside a forward result of " + std::to_string(rows_) + " rows");
  return first_ + r;
}

int ForwardResult::vocab_size() const { return pass_ ? pass_->vocab_size() : 0; }
const float* ForwardResult::logits(int r) const { return pass_->row_logits(at(r)); }
int32_t ForwardResult::greedy(int r) const { return pass_->row_greedy(at(r)); }
const float* ForwardResult::draft_logits(int r) const { return drafted() ? pass_->row_draft_logits(at(r)) : nullptr; }
int32_t ForwardResult::draft_greedy(int r) const { return drafted() ? pass_->row_draft_greedy(at(r)) : -1; }

bool ForwardResult::drafted() const {
  if (rows_ == 0) return false;  // (a result of no rows drafts nothing)
  at(0);                         // (checks that the result is not stale)
  return pass_->has_draft_logits();
}

int ForwardResult::chain(int r, int32_t first, int count, int32_t* out) const {
  return count > 0 ? pass_->row_chain(at(r), first, count, out) : 0;
}

int ForwardResult::expand_tree(int r, std::span<const DraftNode> nodes, int k, DraftGuess* out) const {
  JF_CHECK(k >= 1 && k <= vocab_size(), "a draft tree's guesses per node must be between 1 and the vocabulary size");
  return nodes.empty() ? 0 : pass_->row_tree(at(r), nodes, k, out);
}

const GrownTree* ForwardResult::grown_tree(int r) const { return pass_->row_grown_tree(at(r)); }

void ForwardResult::end_tree() const {
  if (pass_) pass_->end_row_tree();  // (whatever ran since: an open tree is dropped)
}

ForwardResult ForwardResult::slice(int first, int n) const {
  JF_CHECK(first >= 0 && n >= 0 && first + n <= rows_, "a slice outside a forward result");
  return ForwardResult(pass_, serial_, first_ + first, n);
}

}  // namespace jf
