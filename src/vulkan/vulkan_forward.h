// The forward pass on a Vulkan device: weights uploaded once, every layer's work recorded into one command
// buffer per forward shape (and submitted again for the next forward of that shape), KV caches in device
// memory, only the requested rows' logits read back. Batch-invariant
// like the CPU forward (shaders/common.glsl), so every decoder returns `ar`'s tokens on the device too.
#pragma once
#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "model/draft_tree_plan.h"
#include "model/row_plan.h"
#include "model/transformer.h"
#include "vulkan/attention_sweep.h"
#include "vulkan/device_weights.h"
#include "vulkan/k_slices.h"
#include "vulkan/kernels.h"
#include "vulkan/matmul_grid.h"
#include "vulkan/recorder.h"
#include "vulkan/replay_cache.h"

namespace jf::vulkan {

class DeviceKvStore;

class VulkanForward : public ForwardPass {
 public:
  // Uploads the weights to device `device_index` (see list_devices); throws jf::Error when the device cannot
  // run the model (a missing feature, an unsupported weight type, too little memory). every_matrix: the FMA
  // family member (matmul_family.h) every matrix runs; unset, JF_VULKAN_KERNELS (a member's name, a choices
  // file, or "default"), else the members `jf tune --kernels` chose for this device (KernelChoices::load), else
  // the default. math: how matrix products are computed (matmul_grid.h); unset, JF_VULKAN_MATMUL (fma, tiles,
  // matrix-units) or fma; the tiles cover JF_VULKAN_TILE_ROWS rows a workgroup (16, 32 or 64; 16 unset).
  VulkanForward(int device_index, const ModelConfig& cfg, const ModelWeights& w, std::optional<MatmulKernel> every_matrix = {},
                std::optional<MatrixMath> math = std::nullopt);
  ~VulkanForward() override;

  const ModelConfig& config() const override { return cfg_; }
  KvCache make_cache(int capacity, DType type = DType::F32) override;
  // f16: perplexity within 0.1% of the CPU's f32 on lavapipe (stories260K +0.006%, the code model -0.05%;
  // BENCHMARKS.md §8), half the bytes attention reads.
  DType preferred_kv_type() const override { return DType::F16; }
  double last_device_seconds() const override { return device_seconds_; }
  DeviceSyncs device_syncs() const override { return {ctx_->submissions(), ctx_->submissions(), extra_fetches_, bytes_to_host_}; }
  std::string take_profile() override;
  const DeviceInfo& device() const { return ctx_->info(); }
  // "vulkan:N (NAME)", with ", tiles" / ", matrix-units" (and ", 64-row tiles" past 16) when matrix products
  // are not plain FMAs
  std::string device_name() const override {
    return "vulkan:" + std::to_string(ctx_->info().index) + " (" + ctx_->info().name + ")" +
           (math_ == MatrixMath::Fma ? "" : std::string(", ") + matrix_math_name(math_)) +
           (math_ == MatrixMath::Fma || tile_rows_ == kTileRows ? "" : ", " + std::to_string(tile_rows_) + "-row tiles");
  }
  size_t weight_bytes() const { return weights_->bytes(); }
  MatrixMath matrix_math() const { return math_; }
  // The FMA member a matrix of this shape runs, and where that choice came from ("chosen by jf tune --kernels
  // (FILE)", "JF_VULKAN_KERNELS", "default", ...).
  MatmulKernel kernel_for(const MatmulShape& s) const;
  const std::string& kernel_source() const { return kernel_source_; }
  // The model's matrices (each shape once), for timing the family on them (kernel_sweep.h).
  std::vector<DeviceMatrix> distinct_matrices() const;
  Context& context() { return *ctx_; }
  Kernels& kernels() { return *kernels_; }
  // Whether forwards of a shape seen before submit its kept command buffer (replay_cache.h) instead of
  // recording again; on by default (JF_VULKAN_REPLAY=0 turns it off, to compare).
  void set_replay(bool on) { replay_on_ = on; }
  // Attention in chunks of visible slots (shaders/attention_split.comp; a multiple of 64) with 1, 2 or 4 rows
  // a workgroup, or whole rows: a workgroup per row and query head over all its slots (chunk 0;
  // JF_VULKAN_ATTENTION=whole|split-C[-rR]). attention() says what runs: whole rows where the model's query
  // groups are above 8, and fewer rows a workgroup where they would not fit (attention_rows_fit).
  void set_attention(AttentionChoice a) { attention_ = a; }
  AttentionChoice attention() const;
  void set_attention_chunk(uint32_t slots) { attention_ = {slots, 1}; }
  uint32_t attention_chunk() const { return attention().chunk; }
  uint64_t replayed_forwards() const { return replay_.replays(); }
  uint64_t replayed_chains() const { return chain_replay_.replays(); }  // draft chains, likewise
  // Rows the draft layer ran on, over every forward (the rows of the sequences that draft from it).
  uint64_t n_draft_layer_rows() const { return n_draft_layer_rows_; }
  // Caches whose slot moves (KvCache::keep) ran first in a submission, and draft chains that ran inside a
  // forward's submission (asked for up front), over every forward.
  uint64_t moved_caches() const { return moved_caches_; }
  uint64_t chains_in_forward() const { return chains_in_forward_; }
  uint64_t trees_in_forward() const { return trees_in_forward_; }  // draft trees grown there (SequenceInput::grow_tree)
  // Dispatches and barriers of the model's first layer in the last forward recorded (a replayed one records
  // nothing): what a layer costs in launches and synchronisation.
  struct LayerCounts {
    uint64_t dispatches = 0, barriers = 0;
  };
  LayerCounts layer_counts() const { return layer_counts_; }
  // The same for the first level of the last draft tree grown in a forward (SequenceInput::grow_tree): its plan
  // step, the draft layer's input, the layer, the draft head and its top guesses; or for the last pass past a
  // tree's first that expand_tree recorded (the same but the plan step).
  LayerCounts tree_level_counts() const { return tree_level_counts_; }
  // Gate/up products recorded with the GLU in their epilogue (matmul_io.glsl's store_glu), since construction.
  uint64_t glu_epilogues() const { return glu_epilogues_; }
  // One-row products recorded with their member's one-row twin (matmul_grid.h's dispatched_member).
  uint64_t one_row_twins() const { return one_row_twins_; }
  // Products recorded with a twin chosen for their row count (KernelChoices::Choice::by_rows: qmm members).
  uint64_t rows_twins() const { return rows_twins_; }

 protected:
  void run(std::span<SequenceInput* const> seqs) override;
  const float* row_logits(int r) override;
  int32_t row_greedy(int r) override;
  bool has_draft_logits() const override { return drafted_; }
  const float* row_draft_logits(int r) override;
  int32_t row_draft_greedy(int r) override;
  int row_chain(int r, int32_t first, int count, int32_t* out) override;  // draft_chain.cpp
  int row_tree(int r, std::span<const DraftNode> nodes, int k, DraftGuess* out) override;  // draft_tree.cpp
  void end_row_tree() override;
  const GrownTree* row_grown_tree(int r) override;  // grown_trees.cpp

 private:
  struct Activations;
  struct Inputs;
  void grow_activations(Activations& a, int64_t rows, bool draft_layer);
  void upload_inputs(uint32_t extra = 0);
  void mark_own_slots(int32_t* list);
  // x: the residual stream's rows, read and updated in place (default: the pass's activations' x). Counts its
  // dispatches and barriers into layer_counts_ for layer 0.
  void record_layer(int l, View x = {});
  void record_layer_body(int l, View x);
  void record_attention(int l, bool local);
  uint32_t plan_attention_chunks(bool local, std::vector<uint32_t>& chunks);
  bool split_attention() const;
  bool attention_rows_fit(uint32_t rows) const;
  const Kernel& attention_kernel(bool f16, uint32_t rows);
  void record_output();
  void record_head(const DeviceMatrix& head, View in, uint32_t rows, const Buffer& dev, const Buffer& host, const Buffer& picks,
                   const std::vector<char>& to_host);
  void plan_host_copies(std::span<SequenceInput* const> seqs);  // logit_host_, draft_host_
  const float* fetched_row(const Buffer& dev, const Buffer& host, int row, std::vector<char>& on_host);
  void record_draft_layer();
  // rows x vocab draft-head logits of the draft layer's outputs x into `logits` (draft_output_norm folded into
  // the product): what chains, expanded trees and grown trees take their guesses from.
  void record_draft_head(View x, uint32_t rows, View logits);
  bool plan_draft_rows(std::span<SequenceInput* const> seqs);  // draft_plan_ and its maps (draft_rows.cpp)
  void record_draft_rows(bool drafts);
  // draft_chain.cpp: chains asked for up front, in the forward's submission; chains asked for later
  bool plan_chains(std::span<SequenceInput* const> seqs);
  static void check_verify_parent(const SequenceInput& in);
  int32_t* upload_walk_meta(Inputs& meta, std::span<SequenceInput* const> seqs, const std::vector<size_t>& fits,
                            const std::vector<int>& logit_first, uint32_t ext, std::vector<int32_t>& seq_of_logit);
  void write_end_angles(std::span<SequenceInput* const> seqs, const std::vector<size_t>& fits, const std::vector<int>& logit_first, int ahead,
                        float* table);
  void upload_virtual_steps(std::span<SequenceInput* const> seqs, const std::vector<size_t>& fits, const std::vector<int>& logit_first,
                            int steps, int per_seq, RowPlan& p, std::vector<std::unique_ptr<Inputs>>& ins);
  void upload_chain_steps(std::span<SequenceInput* const> seqs, const std::vector<size_t>& fits, const std::vector<int>& logit_first);
  void record_planned_chains();
  void read_planned_chains();
  int planned_chain(int logit_row, int32_t first, int count, int32_t* out);
  void record_chain_steps(int steps);
  void expand_tree_rows(std::span<const DraftNode> nodes, int k, DraftGuess* out);  // draft_tree.cpp
  // grown_trees.cpp: trees asked for up front (SequenceInput::grow_tree), grown in the forward's submission
  bool plan_grown_trees(std::span<SequenceInput* const> seqs);
  void upload_grow_levels(std::span<SequenceInput* const> seqs, const std::vector<size_t>& fits, const std::vector<int>& logit_first);
  void record_grown_trees();
  void read_grown_trees();
  uint32_t grow_state_stride() const;
  void top_k(View x, uint32_t rows, uint32_t k, View out, uint32_t out_off);
  void record_forward(bool draft_layer, bool drafts, bool chains, bool trees);
  void submit(ReplayCache& kept, bool profile, std::span<DeviceKvStore* const> stores, const std::function<void()>& record);
  void collect_stores(const RowPlan& plan);  // into stores_
  void choose_kernels();
  struct SplitOutputs {  // a concatenated matrix's outputs n1 .. n2 - 1 (y2) and n2 .. N - 1 (y3, or none)
    View y2, y3;
    uint32_t n1 = 0, n2 = 0;
  };
  // glu_out (1 silu, 2 gelu): w is gate and up concatenated and y takes act(gate) up (matmul_io.glsl's
  // store_glu), where glu_in_epilogue(w).
  void matmul(const DeviceMatrix& w, View x, uint32_t rows, View y, bool accumulate, View norm_gain = {}, View glu_up = {},
              const SplitOutputs* split = nullptr, uint32_t glu_out = 0);

  void rmsnorm(View x, View out, View gain, uint32_t rows, uint32_t n, bool accumulate, int gather_at = -1);
  void softcap(View x, uint64_t n);
  void argmax(View x, uint32_t rows, View out, uint32_t out_off);
  // Rows rows[rows_off ..] of `table` into out, times scale.
  void get_rows(const DeviceMatrix& table, View rows, uint32_t rows_off, uint32_t n_rows, View out, float scale);
  // The draft layer's input, one dispatch (shaders/get_rows.comp): x's first n_rows rows += draft_token_scale
  // times the embeddings of tokens[tokens_off ..]; with `from`, x's rows = its rows from_rows[from_off ..] + that.
  void add_token_embeddings(View tokens, uint32_t tokens_off, uint32_t n_rows, View x, const DeviceMatrix* from = nullptr,
                            View from_rows = {}, uint32_t from_off = 0);
  View arena() const;  // the current pass's inputs on the device
  int32_t draft_row(int logit_row) const;  // its row of draft logits, or -1
  void stage_inputs(const Inputs& in);
  using TypedKernels = std::array<const Kernel*, 32>;  // by DType (GGML ids, all below 32)
  const Kernel& typed_kernel(TypedKernels& cache, const char* prefix, DType t, uint32_t bindings);

  std::unique_ptr<Context> ctx_;
  std::unique_ptr<Kernels> kernels_;
  ModelConfig cfg_;
  std::unique_ptr<DeviceWeights> weights_;
  std::unique_ptr<Activations> act_, chain_act_;  // a forward's rows; draft chains' virtual rows (one per chain)
  std::unique_ptr<Inputs> main_in_;
  std::vector<std::unique_ptr<Inputs>> chain_in_;  // a draft chain's steps' (one submission for them all)
  // Chains asked for up front (draft_chain.cpp): the plan kernel's table, each chain's source row and path end,
  // each logit row's chain (or -1), the chains (rows of one pass) and steps, and what they drafted.
  static constexpr int kChainRows = 64, kChainTreeRows = 1024;  // (a.head's rows; chain_plan.comp's MAX_ROWS)
  std::unique_ptr<Inputs> chain_meta_;
  Buffer chain_source_;
  std::vector<int32_t> chain_of_logit_, chain_tokens_, chain_end_;
  int chain_rows_ = 0, chain_steps_ = 0;
  AttentionChoice attention_;
  Buffer attention_part_;  // split attention's per-chunk results
  Buffer attention_done_;  // split attention's chunks finished a (row, key-value head): zero between dispatches
  bool zero_attention_done_ = false;  // made since the last submission: zeroed first in the next
  std::unique_ptr<KSliceScratch> k_slices_;  // the K-sliced matrix members' partial sums and counters
  const Kernel* attention_kernels_[2][4] = {};  // [f16][whole, split 1, 2, 4 rows], specialized for the model (attention_kernel)
  // An open draft tree (draft_tree.cpp): its nodes' rows, its source row's place in the draft layer's pass, the
  // nodes' layer outputs (tree_x_, row 0 the source's); a level's pass.
  DraftTreePlan tree_;
  int32_t tree_layer_row_ = -1;
  Buffer tree_x_;
  RowPlan tree_plan_;
  std::unique_ptr<Activations> tree_act_;
  std::unique_ptr<Inputs> tree_in_;
  // Trees asked for up front (grown_trees.cpp): the plan kernel's table, each level's pass (its arena), the
  // plan's state (read back: the candidates), its gather indices, the first level's logits and every level's
  // top guesses, the expanded rows' layer outputs; the shape every tree of the forward grows by; the trees.
  std::unique_ptr<Inputs> grow_meta_;
  std::vector<std::unique_ptr<Inputs>> grow_in_;
  std::unique_ptr<Activations> grow_act_;
  Buffer grow_state_, grow_gather_, grow_lead_, grow_topk_, grow_x_;
  RowPlan grow_plan_;
  TreeGrowth growth_;
  std::vector<int32_t> tree_of_logit_;
  std::vector<int> grow_first_logit_;  // [tree]
  std::vector<GrownTree> grown_;
  uint64_t trees_in_forward_ = 0;
  // The draft layer's rows (model/draft_rows.h) and their pass (draft_rows.cpp): those rows alone, in order.
  DraftRows draft_rows_;
  RowPlan draft_plan_;
  std::unique_ptr<Activations> draft_act_;
  std::unique_ptr<Inputs> draft_in_;
  uint64_t n_draft_layer_rows_ = 0;
  Recorder rec_, moves_rec_;  // a forward's (or chain's) recording; the KV moves that go first in its submission
  VkCommandBuffer moves_cmd_ = VK_NULL_HANDLE;
  std::vector<DeviceKvStore*> stores_;  // the current forward's KV stores
  ReplayCache replay_, chain_replay_;
  std::unique_ptr<Profiler> profiler_;  // JF_VULKAN_PROFILE=1
  ShapeKey key_;  // the current submission's recording's (kept: no allocation per forward)
  bool replay_on_ = true;
  RowPlan plan_, chain_plan_;
  TypedKernels get_rows_{};
  // Matrix products: each matrix's kernel (by DeviceMatrix::id, found on first use) and what chooses it.
  struct MemberPipelines {
    const Kernel* kernel = nullptr;
    const Kernel* one_row = nullptr;  // what a one-row product runs (matmul_grid.h's dispatched_member)
    MatmulKernel member;
  };
  struct MatrixKernel : MemberPipelines {
    // The cached choice whose twins by row count this matrix runs (null: member at every count), and each
    // twin's pipelines, in its by_rows order.
    const KernelChoices::Choice* twins = nullptr;
    std::vector<MemberPipelines> twin_pipelines;
  };
  std::vector<MatrixKernel> matrix_kernels_;
  const MatrixKernel& kernel_of(const DeviceMatrix& w);
  // Whether w's member pairs its outputs for the GLU in the epilogue (matmul_split and matmul_vec members with
  // an even number of outputs a workgroup); the others fold the GLU into the down projection's inputs.
  bool glu_in_epilogue(const DeviceMatrix& w);
  uint64_t glu_epilogues_ = 0;  // products recorded with the GLU in their epilogue (glu_epilogues())
  uint64_t rows_twins_ = 0;     // (rows_twins())
  uint64_t one_row_twins_ = 0;  // one-row products recorded with their member's one-row twin (one_row_twins())
  std::optional<MatmulKernel> every_matrix_;
  KernelChoices choices_;
  std::string kernel_source_;
  uint32_t split_min_k_ = 0;
  MatrixMath math_ = MatrixMath::Fma;
  uint32_t tile_rows_ = kTileRows;
  // What the recording helpers work on: the forward's (plan_, act_, main_in_) or a chain step's.
  RowPlan* rows_ = &plan_;
  Activations* a_ = nullptr;
  Inputs* in_ = nullptr;
  bool drafted_ = false;
  // Whether each logit row's logits (and each draft-logit row's) are copied to the host by the forward: those
  // of sequences that need them (SequenceInput::need); others are fetched when read (extra_fetches_).
  std::vector<char> logit_host_, draft_host_;
  std::vector<int32_t> own_slots_;  // mark_own_slots' table (kept: no allocation per forward)
  uint64_t extra_fetches_ = 0, bytes_to_host_ = 0, moved_caches_ = 0, chains_in_forward_ = 0;
  LayerCounts layer_counts_, tree_level_counts_;
  bool layer_ran_ = false;  // the last forward ran the draft layer (a draft chain needs its output)
  double device_seconds_ = -1.0;
  VkQueryPool timer_ = VK_NULL_HANDLE;
  // JF_VULKAN_FAULT=FIRST:COUNT: forwards FIRST .. FIRST+COUNT-1 throw as a device error would (the server's
  // tests of a device error inside a batch)
  uint64_t n_forwards_ = 0, fault_first_ = 0, fault_count_ = 0;
};

}  // namespace jf::vulkan
