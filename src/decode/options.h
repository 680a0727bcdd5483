// Every decoding strategy's parameters in one struct, validated in one place, and the factory that
// builds a strategy by name.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "decode/decoder.h"
#include "decode/draft_init.h"

namespace jf {

class PldMemory;

struct DecoderOptions {
  std::string name = "ar";  // ar | jacobi | lookahead | pld | multiblock | sjd | fastcot

  // jacobi, multiblock, sjd: block size n (tokens a block commits; a forward carries up to n rows)
  int block = 4;
  bool running_window = false;  // jacobi: keep the draft at block-1 tokens instead of shrinking per block
  DraftInit init = DraftInit::Context;
  uint64_t draft_seed = 1234;   // RNG for initial guesses (never affects greedy outputs)

  // lookahead: window W, n-gram size N, verification candidates G (also n-grams kept per key). A forward
  // stays at ~3 rows, the most that pays on a CPU; at that size trigrams from one Jacobi column (W=1 N=3
  // G=1) beat the bigram pool of W=N=G=2 (TPF 2.00 vs 1.71 on the default model, docs/BENCHMARKS.md).
  int window = 1, ngram = 3, guesses = 1;
  bool pool_from_prompt = true;  // seed the n-gram pool with the prompt's (and the output's) n-grams

  // pld: longest earlier match of the last 1..ngram_max tokens proposes up to draft_max tokens
  // The adaptive policy cuts each proposal to the length that pays (acceptance so far vs the measured cost of
  // a row: on a CPU a row is not free, docs/BENCHMARKS.md), so the cap can be generous; `fixed` drafts up to it.
  int draft_max = 8;
  int ngram_max = 4;
  // Every decoder (not only pld) sizes each forward by the row-pricing rule (decode/row_cost.h) when this
  // is set (draft-policy=adaptive, the default); `fixed` sends what its parameters say.
  bool draft_adaptive = true;
  // jacobi, multiblock: take the next drafts from the model's draft head when it has one (decode/jacobi.h)
  bool draft_head = true;
  int draft_chain = -1;  // jacobi, multiblock: a draft layer's chain depth; -1: the model's (JacobiOptions)
  // jacobi: draft trees from a draft layer (decode/tree_draft.h): most rows a forward (0: chains), deepest
  // level, guesses per expanded node, nodes expanded per level
  int tree_nodes = 0, tree_depth = 8, tree_width = 4, tree_beam = 4;
  int ngram_memory = 1 << 16;  // tokens of earlier generations (same decoder) to draft from; 0 = off
  std::string ngram_corpus;    // a text file to draft from as well (the CLI tokenizes it into corpus_tokens)
  std::vector<int32_t> corpus_tokens;
  std::shared_ptr<PldMemory> pld_memory;  // a memory shared with other decoders (a server's), not one's own

  // multiblock: up to K blocks in flight, spawn at min(ceil(r * n), n - 1) accepted, rejection-recycling pool size
  int max_blocks = 2;
  float spawn_ratio = 0.85f;
  int pool = 4;
  bool spawn_copy = true;
  // sjd: SJD-PAC's adaptive continuation (decode/sjd.h)
  bool pac_continue = false;
  int pac_tree_depth = 0, pac_tree_width = 1;  // sjd: SJD-PAC's proactive drafting tree, D and K (0 = off)
  int pac_repeat_guess = 0;  // sjd: the tree also tries the replacement token repeated (N >= 2: as a run of N; SjdOptions)

  // fastcot (approximate): rationale forwards before the answer trigger; the trigger text (the CLI tokenizes
  // it into trigger_tokens); the window is `block`
  int fastcot_iterations = 32;
  std::string answer_trigger = " So the answer is";
  std::vector<int32_t> trigger_tokens;

  // Throws jf::Error for values or combinations that make no sense (greedy = temperature 0).
  void validate(bool greedy) const;
};

std::vector<std::string> decoder_names();
// "D,K" (or "DxK", for decoder specs where ',' separates decoders) into the PAC tree's depth and width.
void parse_pac_tree(const std::string& v, int* depth, int* width);
// "name[:key=value...]" on top of `base`, keys as the command-line flags without dashes: block, window-mode,
// draft-init, W, N, G, draft-max, ngram-max, draft-policy, ngram-memory, ngram-corpus, K, r, pool, spawn-init, pac-continue (0/1), pac-tree (DxK),
// tree, tree-depth, tree-width, tree-beam. E.g. "lookahead:W=8:N=4:G=8", "jacobi:tree=32".
DecoderOptions parse_decoder_spec(const std::string& spec, const DecoderOptions& base);
std::unique_ptr<Decoder> make_decoder(const DecoderOptions& opts);

}  // namespace jf
