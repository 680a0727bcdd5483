// The decisions of `jf tune`, as pure functions of measurements so they can be tested on synthetic cost
// curves and TPF tables: which configurations to try, what speed each should reach on this machine, and
// which one to keep.
#pragma once
#include <string>
#include <vector>

#include "tune/cost_table.h"

namespace jf::tune {

// One decoder configuration and what was measured for it.
struct Candidate {
  std::string spec;               // "name:key=value..." (parse_decoder_spec)
  bool measured = false;          // TPF measured on the sample prompts
  double tpf = 0;                 // tokens per forward (machine independent)
  double rows_per_forward = 1;    // mean rows of its forwards
  bool lossless = false;          // same tokens as ar on every sample prompt
  double predicted_tps = 0;       // tpf / cost(rows_per_forward)
  bool verified = false;          // run again and timed
  double measured_tps = 0;
};

// The greedy configurations tried: ar, jacobi block, lookahead W/N/G, pld draft-max, multiblock block/K.
// Where `free_rows` (CostTable::free_rows) is 16 or more, as on a GPU below its roofline knee, also the wide
// ones the Jacobi Forcing paper's Figure 7 sweeps: blocks of 16-64, 2-4 in flight at a lower spawn ratio,
// 4-8 recycled candidates verified beside them, as long as a forward's rows stay within 4 x free_rows. With a
// draft layer (`draft_trees`), Jacobi with draft trees too: a small priced one everywhere, trees of up to
// free_rows rows (the knee) where rows are free.
std::vector<std::string> tuning_grid(int free_rows = 1, bool draft_trees = false);
// Fills predicted_tps of every measured candidate at context `ctx`.
void predict(const CostTable& cost, double ctx, std::vector<Candidate>& cands);
// Indices of measured lossless candidates other than ar, best prediction first, at most `n`.
std::vector<size_t> to_verify(const std::vector<Candidate>& cands, size_t n);
// The configuration to use: the verified lossless one with the highest measured TPS, if it beats ar
// measured in the same runs by more than `margin` (relative); otherwise "ar". `why` says which and why.
std::string choose(const std::vector<Candidate>& cands, double margin, std::string* why);
// Without TPF measurements: a rule from the cost curve alone. No free row (compute-bound, e.g. a tiny
// model): ar; a couple: pld (drafts only on a match, and cuts drafts that do not pay); many: a wide draft.
// Free rows are taken at the context where most were free. A model with a draft layer (`draft_trees`) and
// 8 or more free rows: Jacobi with draft trees of up to the free rows (at most 64).
std::string rule_from_cost(const CostTable& cost, std::string* why, bool draft_trees = false);

}  // namespace jf::tune
