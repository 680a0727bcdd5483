// What decoders need from a model: one forward over a batch of sequences, and its results as a value that
// answers by logit row. The CPU Transformer and the Vulkan backend implement it; tests substitute
// deterministic fakes to drive decoders through exact scenarios.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "kernels/ops.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/kv_cache.h"

namespace jf {

class ForwardPass;

// Where a forward pass's device waited or was asked for work, counted by the backend: each submission of
// work to a GPU and each time the host waited for one (a CPU counts none). A decode step of every decoder
// makes one of each (docs/ARCHITECTURE.md, "One Jacobi step"); `extra_fetches` counts what a decoder read
// that its input did not ask for up front (logits of a greedy row, a longer draft chain), each a submission;
// `bytes_to_host` the bytes the device copied back (logits, greedy tokens, drafts).
struct DeviceSyncs {
  uint64_t submissions = 0, waits = 0, extra_fetches = 0, bytes_to_host = 0;
};

// A node of a draft layer's tree (ForwardResult::expand_tree): its token, and its parent, an earlier expanded
// node's index or -1 for a child of the tree's source row.
struct DraftNode {
  int32_t parent = -1;
  int32_t token = 0;
};
// One of a node's most likely next tokens and its draft probability.
struct DraftGuess {
  int32_t token = 0;
  float prob = 0.0f;
};

// The results of one forward: its logit rows (the rows every sequence asked for in SequenceInput::logit_rows,
// sequence after sequence; a slice is one sequence's), answered by index. Valid until the next forward of the
// same ForwardPass: any use after it throws jf::Error (a result is a value, but its rows live in the backend's
// buffers). Cheap to copy.
class ForwardResult {
 public:
  ForwardResult() = default;
  int rows() const { return rows_; }
  int vocab_size() const;
  // Row r's logits (vocab_size floats, valid as long as the result). A backend that keeps logits on a device
  // copies them back only for sequences that asked (SequenceInput::need); any other row is fetched when asked
  // for, as one more submission (DeviceSyncs::extra_fetches).
  const float* logits(int r) const;
  // Row r's greedy token: the index of its largest logit, the lowest among equals (a GPU computes it there).
  int32_t greedy(int r) const;
  // Whether the forward gave draft logits (a sequence set SequenceInput::draft_logits and the model drafts).
  bool drafted() const;
  // The draft head's logits of row r, or null when its sequence asked for none. A backend may compute a row
  // only when it is first asked for (the CPU does for a draft layer's rows): ask for each row used.
  const float* draft_logits(int r) const;
  // The greedy token of row r's draft logits; -1 when the row has none.
  int32_t draft_greedy(int r) const;
  // A draft layer's chain (ForwardPass::draft_shift 1; ModelConfig::draft_chain says how far its file was
  // trained to go) from row r, its sequence's last verified row, whose shifted draft is `first`: the drafts
  // after `first`, up to `count`, into `out`; returns how many. The sequence's cache must end with that row (its
  // accepted path kept, KvCache::keep). A backend computes it in the forward's own submission when the input
  // asked for it (SequenceInput::chain), else on this call (counted as an extra fetch on a device).
  int chain(int r, int32_t first, int count, int32_t* out) const;
  // A draft layer's tree (the chain branched: decode/tree_draft.h) from row r, its sequence's last verified row
  // (the cache ending with it, as for chain()). Runs the layer on `nodes` as virtual rows of one pass: node i
  // reads its parent's layer output (row r's for parent -1) plus its token's embedding, one position past its
  // parent, attending to the cache and its ancestors; writes its `k` most likely next tokens, most likely
  // first, to out[i * k ..]. Nodes are numbered in the order expanded, across calls, until end_tree(); a parent
  // must come from an earlier call. Returns how many of `nodes` it expanded: fewer when the context is full,
  // 0 where the backend or model has no trees (the decoder then drafts a chain).
  int expand_tree(int r, std::span<const DraftNode> nodes, int k, DraftGuess* out) const;
  // The tree the input asked for up front (SequenceInput::grow_tree) when it grew from row r (the row the
  // backend found verified); null where none did (a backend that grows trees only when asked: the decoder
  // then grows it with expand_tree).
  const GrownTree* grown_tree(int r) const;
  // Drops the tree's virtual rows (their cache slots): before the next forward, which refuses to run with a tree
  // open.
  void end_tree() const;
  // Rows [first, first + n) as a result of their own (one sequence's rows of a batched forward).
  ForwardResult slice(int first, int n) const;

 private:
  friend class ForwardPass;
  ForwardResult(ForwardPass* pass, uint64_t serial, int first, int rows) : pass_(pass), serial_(serial), first_(first), rows_(rows) {}
  int at(int r) const;  // the forward's row index of r, checked
  ForwardPass* pass_ = nullptr;
  uint64_t serial_ = 0;
  int first_ = 0, rows_ = 0;
};

class ForwardPass {
 public:
  virtual ~ForwardPass() = default;
  // Runs every sequence's new tokens through the model in one pass, appends their keys/values to each
  // sequence's cache (size grows by the number of new tokens), and returns the requested rows' results.
  // Throws jf::Error on bad tokens/positions or a full cache.
  ForwardResult forward(std::span<SequenceInput* const> seqs);
  ForwardResult forward(SequenceInput& seq) {
    SequenceInput* p = &seq;
    return forward(std::span<SequenceInput* const>(&p, 1));
  }
  virtual const ModelConfig& config() const = 0;
  int vocab_size() const { return config().vocab_size; }
  // Which token a draft row predicts: 0, the one after its input (a draft head on the model's hidden
  // state); 1, the one after that (a draft layer, given the input's hidden state and the model's greedy
  // next token there: the last verified row then drafts the token after the bonus one).
  virtual int draft_shift() const { return config().draft_layer ? 1 : 0; }

  // A KV cache for this forward pass (a GPU backend keeps its keys and values in device memory). Every
  // sequence a forward gets must use a cache made by that forward pass's make_cache.
  virtual KvCache make_cache(int capacity, DType type = DType::F32) { return KvCache(config(), capacity, type); }
  // The KV cache type the backend runs best with where the user does not choose (--kv-type auto): f32 on the
  // CPU (exact); a GPU backend may prefer f16 (half the attention reads) where it keeps perplexity within 0.1%.
  virtual DType preferred_kv_type() const { return DType::F32; }
  // Device time of the last forward in seconds, where the backend measures it (GPU timestamps); < 0: not measured.
  virtual double last_device_seconds() const { return -1.0; }
  // Submissions and waits since the pass was made (DeviceSyncs); all zero on the CPU.
  virtual DeviceSyncs device_syncs() const { return {}; }
  // Where the device time of the forwards since the last call went, per kernel (a Markdown table), where the
  // backend profiles them (JF_VULKAN_PROFILE=1); "" otherwise.
  virtual std::string take_profile() { return ""; }
  // Where the forward runs, for reports: "cpu", or a GPU backend's device name.
  virtual std::string device_name() const { return "cpu"; }

 protected:
  // The backend's forward (see forward()); its results are read through the row_* calls below until the next.
  virtual void run(std::span<SequenceInput* const> seqs) = 0;
  // Logit row r of the last forward (0 <= r < its logit rows).
  virtual const float* row_logits(int r) = 0;
  virtual int32_t row_greedy(int r) { return static_cast<int32_t>(argmax(row_logits(r), vocab_size())); }
  // Whether the last forward gave draft logits; a row's draft logits (null: none for its sequence).
  virtual bool has_draft_logits() const { return false; }
  virtual const float* row_draft_logits(int r) {
    (void)r;
    return nullptr;
  }
  virtual int32_t row_draft_greedy(int r) {
    const float* d = row_draft_logits(r);
    return d ? static_cast<int32_t>(argmax(d, vocab_size())) : -1;
  }
  // ForwardResult::chain on logit row r; 0 without a draft layer.
  virtual int row_chain(int r, int32_t first, int count, int32_t* out) {
    (void)r, (void)first, (void)count, (void)out;
    return 0;
  }
  // ForwardResult::expand_tree and end_tree on logit row r; 0 (no trees) by default.
  virtual int row_tree(int r, std::span<const DraftNode> nodes, int k, DraftGuess* out) {
    (void)r, (void)nodes, (void)k, (void)out;
    return 0;
  }
  virtual void end_row_tree() {}
  virtual const GrownTree* row_grown_tree(int r) {
    (void)r;
    return nullptr;
  }

 private:
  friend class ForwardResult;
  uint64_t serial_ = 0;  // forwards run: a result of an earlier one is stale
  int rows_ = 0;         // the last forward's logit rows
};

}  // namespace jf
