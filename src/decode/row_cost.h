// Row pricing, the one rule every decoder sizes its forwards by. On a CPU a forward of several rows is not
// free (a tiny model: each extra row about a third of a forward; a 1B model on 2 cores: nearly free up to ~4
// rows, compute-bound past that), so a decoder sends an extra row only when the committed tokens it is
// expected to add pay for what it costs:
//
//   send rows r more  iff  (T + gain) / cost(m + r) > T / cost(m),
//
// T: the tokens the forward is expected to commit with its m rows, gain: the extra tokens expected from
// the r rows, cost: the forward's time relative to one row's. For a chain of draft tokens with
// p_i = P(token i accepted | tokens 0..i-1 accepted) this is choosing the prefix length k that maximises
// (1 + sum_{i<k} p_0 ... p_i) / cost(1 + k). The p_i and the gains come from each decoder's own running
// statistics (DraftLengthPolicy, RowYield); the cost from RowCostModel: learned from the session's timed
// forwards, or a curve measured beforehand (the server's start-up curve, `jf tune`'s table, a quick
// measurement) or a synthetic one (tests).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace jf {

class RowCostModel {
 public:
  // Adds one timed forward of `rows` rows (ignored while a fixed curve is set). `drafted`: it also ran the
  // model's draft layer or head; its cost beyond the rows' goes to draft_overhead(), never to the curve.
  void record(int rows, double seconds, bool drafted = false);
  // What running the draft layer (or head) adds to a forward, as a fraction of the same rows' cost without it:
  // the median of the recent drafting forwards against the one-row time and the curve. 0 until one was
  // measured (optimistic: drafting is tried before it is judged).
  double draft_overhead() const;
  // Uses this overhead instead of timings (a measurement made beforehand, a test's synthetic cost); < 0: learn.
  void set_draft_overhead(double overhead) { fixed_overhead_ = overhead; }
  // Uses this curve, (rows, seconds) with increasing rows and the first at rows 1, instead of timings:
  // linear between points, extrapolated past the last along its last segment. Learning stops. Empty: learn.
  void set_curve(std::vector<std::pair<int, double>> points);
  bool fixed() const { return !curve_.empty(); }
  // Estimated time(rows) / time(1), non-decreasing in rows. Learned: the median of the recent forwards of
  // each row count seen, linear between them, past the largest one along per_row(); optimistic (at most
  // 1 + kDefaultRowCost per extra row) while exploring (see per_row()).
  double relative(int rows) const;
  // Cost of one extra row as a fraction of a one-row forward: the median of the last kSamples forwards of
  // 2..32 rows (larger ones, like a prefill, say little about a decoder's few rows; a median ignores the
  // odd slow one: a preempted forward, or a thread schedule being tried out, model/schedule.h).
  // Optimistic, at most kDefaultRowCost, while fewer than kExplore such forwards were seen or none for
  // kStale one-row forwards: a decoder that stopped drafting on an early estimate would never measure again.
  double per_row() const;

  static constexpr double kDefaultRowCost = 0.25;
  static constexpr int kSamples = 15, kExplore = 4, kStale = 32, kMaxRows = 32, kPerCount = 7;

 private:
  bool exploring() const { return n_samples_ < kExplore || one_rows_since_sample_ >= kStale; }
  // A plain mean over the first samples, then an exponential moving average; after the first few, one
  // sample moves it by at most a factor 1 +- the weight.
  struct Mean {
    double mean = 0;
    int64_t n = 0;
    void add(double x);
  };
  Mean one_row_seconds_;
  std::array<double, kSamples> samples_{};  // extra-row costs, a ring buffer
  int64_t n_samples_ = 0;
  int64_t one_rows_since_sample_ = 0;
  // [rows - 2]: the last kPerCount relative costs of forwards of that many rows, a ring buffer each
  std::array<std::array<double, kPerCount>, kMaxRows - 1> by_rows_{};
  std::array<int64_t, kMaxRows - 1> n_by_rows_{};
  std::vector<std::pair<int, double>> curve_;  // fixed: (rows, relative cost)
  double curve_one_seconds_ = 0;               // fixed: one row's seconds
  std::array<double, kSamples> overhead_{};    // drafting forwards' overheads, a ring buffer
  int64_t n_overhead_ = 0;
  double fixed_overhead_ = -1.0;
};

// The pricing rule over one sequence's rows. `shared_rows`: rows other sequences put into the same forward
// (a server's batch, prefill chunks included): this sequence's rows are priced at the margin of theirs.
class RowPricer {
 public:
  RowPricer(const RowCostModel& cost, int shared_rows = 0) : cost_(&cost), shared_(shared_rows) {}  // NOLINT: implicit
  // Cost of a forward with this sequence's `rows` rows relative to one with its single row.
  double relative(int rows) const;
  // RowCostModel::draft_overhead of the cost model priced on.
  double draft_overhead() const { return cost_->draft_overhead(); }
  // Extra rows are sent only when they raise the expected rate by more than this: below it the gain is within
  // the error of a measured cost curve (the default model's time(2)/time(1), measured 1.02-1.14 on one
  // machine), and rows sent at a curve measured too cheap lose more than rows left out at one too dear.
  static constexpr double kMargin = 0.03;
  // The k in [0, p.size()] that maximises (tokens + sum_{i<k} p_0 ... p_i + bonus_i) / relative(rows + k), 0
  // unless that beats sending nothing by kMargin: how many of a chain's draft tokens to send after `rows` rows
  // expected to commit `tokens`. bonus (empty, or
  // one per token): what sending token i is worth beyond its own acceptance (a Jacobi row's prediction for
  // the next forward). Ties: the shorter. `best_rate`: where to put that k's rate. `beside` (empty, or one per
  // token): rows sent along with the first k tokens (a tree around the chain), priced with them.
  int best_chain(std::span<const double> p, double tokens = 1.0, int rows = 1, std::span<const double> bonus = {},
                 double* best_rate = nullptr, std::span<const int> beside = {}) const;
  // The same over rows that each add their own expected tokens, gains[i] for row i (a draft tree's nodes,
  // likeliest first: each its chance of acceptance): the n that maximises (tokens + sum_{i<n} gains_i) /
  // relative(rows + n + beside[n - 1]), 0 unless that beats sending nothing by `margin`; ties: the fewer.
  int best_count(std::span<const double> gains, double tokens = 1.0, int rows = 1, double margin = kMargin,
                 double* best_rate = nullptr, std::span<const int> beside = {}) const;
  // Whether `extra` more rows expected to add `gain` tokens pay: (tokens + gain) / relative(rows + extra)
  // > (1 + kMargin) tokens / relative(rows).
  bool pays(double tokens, int rows, double gain, int extra) const;
  // The expected tokens per unit of cost, (tokens) / relative(rows).
  double rate(double tokens, int rows) const { return tokens / relative(rows); }

 private:
  const RowCostModel* cost_;
  int shared_;
};

// How often draft token i was accepted, given that tokens 0..i-1 were, per kind of proposal (1..kinds: a
// decoder's kinds of drafts, e.g. pld's source and matched suffix length, Jacobi's guesses vs predictions);
// and the draft length that maximises expected committed tokens per unit of forward time.
class DraftLengthPolicy {
 public:
  DraftLengthPolicy(int kinds, int draft_max);
  // Best length <= available for a proposal of this kind after `rows` rows expected to commit `tokens`
  // (0: forward none of it).
  int choose(int kind, int available, const RowPricer& price, double tokens = 1.0, int rows = 1);
  // The same for a draft whose token i is of kind kinds[i]. Tokens of kind `from` (0: none) turn into kind
  // `to` for the next forward when their rows are sent (Jacobi: guesses into predictions), so each is also
  // worth what `to` is expected to accept at its place beyond what `from` is: the reason to send guesses.
  // After kRetry decisions in a row that sent nothing, the next two send the first token if it would pay at
  // an untried case's estimate (1/2): a case stopped after a few unlucky tries is otherwise never measured
  // again. Two, because a Jacobi guess sent on a retry turns into a prediction that the next one tries. A
  // retry whose token is rejected doubles the wait for the next, up to kMaxRetry decisions (where drafting
  // does not pay, fixed retries would cost ~2% of the forwards' time); an accepted one resets it.
  int choose(std::span<const int> kinds, const RowPricer& price, double tokens = 1.0, int rows = 1, int from = 0,
             int to = 0, std::span<const int> beside = {});
  // Expected accepted tokens of the first `length` tokens of a proposal of this kind.
  double expected(int kind, int length) const;
  // The best expected committed tokens per unit of cost over the prefixes of a draft of these kinds (the
  // pending row's token plus the draft's accepted ones): what a decoder can expect from drafts of that make.
  double best_rate(std::span<const int> kinds, const RowPricer& price) const;
  // Of the first `length` tokens of a draft of these kinds, with their worth to the next forward as in choose().
  double expected(std::span<const int> kinds, int length, int from = 0, int to = 0) const;
  // Records a verified proposal of `drafted` tokens of which the first `accepted` matched.
  void record(int kind, int drafted, int accepted);
  void record(std::span<const int> kinds, int drafted, int accepted);
  // P(token i accepted | 0..i-1 accepted), with two observations at the estimate for position i - 1 as the
  // prior (1/2 for position 0), and at least 1/2 until the case has been tried kExplore times.
  double p_accept(int kind, int i) const;
  static constexpr int64_t kExplore = 8;
  static constexpr int64_t kRetry = 32, kMaxRetry = 512;

 private:
  size_t cell(int kind, int i) const { return static_cast<size_t>(kind - 1) * positions_ + std::min(i, positions_ - 1); }
  int positions_;
  std::vector<int64_t> tried_, hit_;  // [cell(kind, i)]
  // p_[i], bonus_[i] of a draft (choose's scratch)
  void price_tokens(std::span<const int> kinds, int from, int to) const;
  int64_t unsent_ = 0;  // decisions in a row that sent nothing
  int retries_left_ = 0;
  int64_t retry_every_ = kRetry;
  bool retried_ = false;  // the last decision that sent a token was a retry (record() judges it)
  mutable std::vector<double> p_, bonus_;
  mutable std::vector<int> kinds_;
};

// Tokens a group of rows that do not commit by themselves (lookahead's window, multiblock's pseudo-active
// blocks and recycled candidates) has added per row sent: a moving ratio (the text changes, and with it what
// the group is worth), starting from an optimistic prior so that the group is tried before it is judged.
class RowYield {
 public:
  explicit RowYield(double prior_per_row = 0.25, double prior_rows = 16)
      : prior_(prior_per_row), gain_(prior_per_row * prior_rows), rows_(prior_rows) {}
  // `rows` sent (0: none this forward) and the tokens credited to the group.
  void record(int64_t rows, double gain) {
    if (rows > 0) {
      gain_ *= kKeep, rows_ *= kKeep;
      skipped_ = 0;
      // Worth its prior again: retries go back to every kRetry-th time.
      if (gain >= prior_ * static_cast<double>(rows)) retry_every_ = kRetry;
    }
    rows_ += static_cast<double>(rows);
    gain_ += gain;
  }
  double per_row() const { return std::max(0.0, gain_ / rows_); }
  // What it was assumed to be worth before any evidence.
  double prior_per_row() const { return prior_; }
  // Call when the group was not sent because it did not pay: true when it should be sent anyway (where it
  // could pay at the prior): its worth may have changed, and unsent it is never measured. Every kRetry-th
  // time at first, then twice as far apart after each retry that did not pay, up to kMaxRetry: a group of
  // many rows (multiblock's pseudo-active blocks: a whole block) retried at a fixed rate would cost a
  // CPU, where it seldom pays, a tenth of its time.
  bool retry() {
    if (++skipped_ < retry_every_) return false;
    skipped_ = 0;
    retry_every_ = std::min(2 * retry_every_, kMaxRetry);
    return true;
  }
  static constexpr double kKeep = 0.97;  // per forward that sent the group: about the last 30 count
  static constexpr int64_t kRetry = 16, kMaxRetry = 512;

 private:
  double prior_, gain_, rows_;
  int64_t skipped_ = 0, retry_every_ = kRetry;
};

}  // namespace jf
