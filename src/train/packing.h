// Jacobi Forcing sequence packing: per block choose the trajectory state whose noise is closest to a
// schedule's target, and lay a prompt's blocks out as [context][noisy_0][clean_0][noisy_1][clean_1]...
// where noisy_k and clean_k share RoPE positions. The attention mask is derived from the layout:
//   NC            noisy_k sees the context, earlier noisy blocks and itself causally;
//   NC-IC         (the paper's) noisy_k sees earlier noisy blocks of its own noise window and the clean
//                 blocks of earlier windows (noisy within a window, clean across windows);
//   clean-context (CLLM's) noisy_k sees the context, every earlier clean block and itself causally;
//   clean_k always sees the context, earlier clean blocks and itself causally (the plain AR stream).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/batch.h"
#include "train/trajectory.h"

namespace jf {

enum class NoiseSchedule { Linear, Random, Reverse };
enum class MaskKind { NC, NCIC, CleanContext };
std::string noise_schedule_name(NoiseSchedule s);
bool noise_schedule_from_name(const std::string& s, NoiseSchedule* out);
std::string mask_kind_name(MaskKind m);
bool mask_kind_from_name(const std::string& s, MaskKind* out);

struct PackOptions {
  NoiseSchedule schedule = NoiseSchedule::Linear;
  int window = 16;            // w: targets linspace(0, 1, w) = 0, 1/(w-1), ..., 1
  bool fit_window = true;     // w = min(window, blocks of the response), so one response spans 0 .. 1
  MaskKind mask = MaskKind::NC;
  int max_len = 1024;         // packed tokens per sequence; longer responses are split
  // NC / NC-IC: an earlier noisy block whose noise is above this is seen clean by later noisy blocks, so
  // no block learns from a context that is mostly wrong drafts (1: no cap, the paper's masks).
  double context_noise_cap = 1.0;
  uint64_t seed = 1;          // Random schedule
};

// One packed training sequence.
struct PackedSequence {
  std::vector<int32_t> tokens, positions;
  int context_len = 0;            // tokens before the first block
  int n = 0;                      // block size
  std::vector<int> first_mismatch;  // per block: first index where the noisy state differs from the fixed point (n if none)
  MaskKind mask = MaskKind::NC;
  int window = 0;                 // noise window w of the response (NC-IC groups blocks by it)
  int block0 = 0;                 // index in the response of this sequence's first block (windows count from it)
  int eos = -1;                   // index of EOS in the last block (-1: none); later tokens are padding
  double context_noise_cap = 1.0;  // PackOptions::context_noise_cap
  double noise(int k) const { return double(n - first_mismatch[k]) / n; }
  // Tokens of block k that are real text (up to and including EOS).
  int valid(int k) const { return k == blocks() - 1 && eos >= 0 ? eos + 1 : n; }
  int blocks() const { return static_cast<int>(first_mismatch.size()); }
  int noisy_begin(int k) const { return context_len + 2 * k * n; }
  int clean_begin(int k) const { return noisy_begin(k) + n; }

  std::string to_json() const;
  static PackedSequence from_json(const std::string& line);  // throws jf::Error
  // Visibility of every token (row) to every other, per the mask kind.
  void build_mask(VisibilityMask& m) const;
};

// (n - first mismatch with the fixed point) / n: 0 for the fixed point itself, 1 when the first token differs.
double noise_ratio(const std::vector<int32_t>& state, const std::vector<int32_t>& fixed);
int first_mismatch(const std::vector<int32_t>& state, const std::vector<int32_t>& fixed);
// The schedule window used for a response of `record_blocks` blocks.
int schedule_window(const PackOptions& o, int record_blocks);
// Target noise of block k under window w: W[k mod w] with W = linspace(0, 1, w) (linear), W reversed
// (reverse), or a uniform draw from W (random).
double schedule_target(const PackOptions& o, int w, int k, uint64_t* rng_state);

// Packs one prompt's trajectory into one or more sequences of at most max_len tokens (a split sequence
// takes the clean text before it as context, cut from the left if needed).
std::vector<PackedSequence> pack_record(const TrajectoryRecord& r, const PackOptions& o, uint64_t* rng_state);

}  // namespace jf
