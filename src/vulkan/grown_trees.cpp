// Draft trees asked for up front (SequenceInput::grow_tree), grown in the forward's own submission by the rule
// of model/tree_growth.h: after the draft head, shaders/tree_plan.comp (a workgroup a tree) finds each tree's
// verified row and, level by level, chooses the nodes to expand and writes their pass; every tree's nodes of a
// level are the rows of one draft-layer pass, whose top guesses (shaders/top_k.comp) the next plan step reads.
// Each level's rows have fixed cache slots past the sequence's (a row not chosen computes a harmless row that
// sees only itself), so one recording serves every tree of the same shape. The host reads the candidates back.
#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "vulkan/kv_storage.h"
#include "vulkan/vulkan_forward.h"
#include "vulkan/vulkan_forward_parts.h"

namespace jf::vulkan {

namespace {
constexpr int kMaxWidth = 16;         // top_k.comp's MAX_K
constexpr int kMaxCandidates = 1024;  // tree_plan.comp's MAX_CANDS
constexpr uint32_t kCand = 6;         // a candidate's words in the plan's state (tree_plan.comp's CAND)

bool same_shape(const TreeGrowth& a, const TreeGrowth& b) {
  return a.levels == b.levels && a.width == b.width && a.beam == b.beam && a.max_nodes == b.max_nodes && a.depths == b.depths &&
         a.buckets == b.buckets;
}

void check_growth(const TreeGrowth& g) {
  JF_CHECK(g.levels >= 0 && g.beam >= 1 && g.max_nodes >= 0 && g.depths >= 1 && g.buckets >= 1, "SequenceInput::grow_tree: a bad shape");
  JF_CHECK(g.a.size() == static_cast<size_t>(g.depths * g.buckets) && g.b.size() == g.a.size(),
           "SequenceInput::grow_tree: the estimate tables must have depths x buckets entries");
}
}  // namespace

uint32_t VulkanForward::grow_state_stride() const {
  return static_cast<uint32_t>(3 + growth_.levels * growth_.beam) + static_cast<uint32_t>(growth_.max_candidates()) * kCand;
}

// Which sequences' trees grow inside this forward: those that asked, with the first one's shape, a level of
// at most kChainRows rows in all, and the cache room for every level's rows; their table and level passes.
// None where a hidden state's bytes are not a multiple of the device's binding alignment (grown by the decoder).
bool VulkanForward::plan_grown_trees(std::span<SequenceInput* const> seqs) {
  // (each level's rows are bound where they lie in grow_x_: a row's bytes a multiple of the binding alignment,
  // as every model's width of a multiple of 64 gives)
  if (uint64_t(cfg_.dim) * 4 % ctx_->offset_alignment() != 0) return false;
  std::vector<size_t> fits;
  std::vector<int> logit_first(seqs.size());
  const TreeGrowth* shape = nullptr;
  int first_logit = 0;
  for (size_t s = 0; s < seqs.size(); s++) {
    const SequenceInput& in = *seqs[s];
    const TreeGrowth& g = in.grow_tree;
    const int nl = static_cast<int>(in.logit_rows.size());
    logit_first[s] = first_logit;
    first_logit += nl;
    if (!g.asked() || !in.draft_logits || nl == 0) continue;
    check_growth(g);
    check_verify_parent(in);
    // (otherwise grown by the decoder, a level a submission)
    if (nl > kChainTreeRows || g.levels < 1 || g.width > kMaxWidth || g.width > cfg_.vocab_size || g.max_candidates() > kMaxCandidates) continue;
    if ((shape && !same_shape(*shape, g)) || static_cast<int>(fits.size() + 1) * g.beam > kChainRows) continue;
    if (in.cache->capacity() - in.cache->size() < g.levels * g.beam) continue;
    shape = &g;
    fits.push_back(s);
  }
  if (fits.empty()) return false;
  growth_ = *shape;
  const size_t T = fits.size(), DB = growth_.a.size();
  int32_t* ext = upload_walk_meta(*grow_meta_, seqs, fits, logit_first, static_cast<uint32_t>(1 + 2 * DB), tree_of_logit_);
  grow_first_logit_.clear();
  for (size_t t = 0; t < T; t++) {
    const SequenceInput& in = *seqs[fits[t]];
    int32_t* e = ext + t * (1 + 2 * DB);
    e[0] = in.cache->size();  // (the level rows' first slot: past the forward's rows)
    std::memcpy(e + 1, in.grow_tree.a.data(), DB * 4);
    std::memcpy(e + 1 + DB, in.grow_tree.b.data(), DB * 4);
    grow_first_logit_.push_back(logit_first[fits[t]]);
  }
  upload_grow_levels(seqs, fits, logit_first);
  return true;
}

// Level s's pass: beam rows a tree (a sequence of its own), row r at slot base + s * beam + r, its slot list the
// cache before the forward followed by room for the path, its ancestors and itself (the plan kernel's); then
// the levels' activations and the plan's buffers.
void VulkanForward::upload_grow_levels(std::span<SequenceInput* const> seqs, const std::vector<size_t>& fits,
                                       const std::vector<int>& logit_first) {
  const int T = static_cast<int>(fits.size()), B = growth_.beam, L = growth_.levels;
  const int R = T * B, V = cfg_.vocab_size, W = growth_.width;
  upload_virtual_steps(seqs, fits, logit_first, L, B, grow_plan_, grow_in_);
  grow_activations(*grow_act_, R, true);
  const auto words = [](int64_t n) { return static_cast<size_t>(std::max<int64_t>(n, 1)) * 4; };
  ensure_size(*ctx_, grow_state_, words(int64_t{T} * grow_state_stride()), Buffer::Kind::Host);
  ensure_size(*ctx_, grow_gather_, words(T + int64_t{L} * 2 * R), Buffer::Kind::Device);
  ensure_size(*ctx_, grow_lead_, words(int64_t{T} * V), Buffer::Kind::Device);
  ensure_size(*ctx_, grow_topk_, words((T + int64_t{L} * R) * 2 * W), Buffer::Kind::Device);
  ensure_size(*ctx_, grow_x_, words(int64_t{L} * R * cfg_.dim), Buffer::Kind::Device);
}

void VulkanForward::top_k(View x, uint32_t rows, uint32_t k, View out, uint32_t out_off) {
  struct {
    uint32_t n_rows, n, k, x_off, out_off;
  } p{rows, static_cast<uint32_t>(cfg_.vocab_size), k, 0, out_off};
  rec_.dispatch(kernels_->get("top_k", 2), {x, out}, p, rows);
}

// In the forward's recording, after its draft head: the plan's first step and the first level's guesses, then
// per level its plan step and its pass, then the last level's children.
void VulkanForward::record_grown_trees() {
  const uint32_t T = static_cast<uint32_t>(grow_first_logit_.size()), B = static_cast<uint32_t>(growth_.beam), R = T * B;
  const uint32_t L = static_cast<uint32_t>(growth_.levels), W = static_cast<uint32_t>(growth_.width);
  const uint32_t dim = static_cast<uint32_t>(cfg_.dim), V = static_cast<uint32_t>(cfg_.vocab_size);
  auto plan = [&](uint32_t step, const Inputs& in) {
    struct {
      uint32_t n_trees, rows_off, step, levels, half_dim, width, beam, max_nodes;
      uint32_t depths, buckets, tree_off, state_stride, topk_off;
      uint32_t info_off, slots_off, cos_off, sin_off, table_off;
    } p{T, grow_meta_->info, step, L, static_cast<uint32_t>(cfg_.rope_dim / 2), W, B, static_cast<uint32_t>(growth_.max_nodes),
        static_cast<uint32_t>(growth_.depths), static_cast<uint32_t>(growth_.buckets), grow_meta_->extra, grow_state_stride(), T * 2 * W,
        in.info, in.slots, in.cos, in.sin, in.extra};
    rec_.dispatch(kernels_->get("tree_plan", 6),
                  {grow_meta_->device.view(), act_->picks.view(), grow_topk_.view(), in.device.view(), grow_gather_.view(), grow_state_.view()}, p, T);
  };
  plan(0, *grow_in_[0]);
  const Activations& da = *draft_act_;
  const DeviceMatrix draft_logits{da.draft_logits_dev.view(), DType::F32, static_cast<uint32_t>(draft_plan_.logit_src.size()), V};
  get_rows(draft_logits, grow_gather_.view(), 0, T, grow_lead_.view(), 1.0f);
  top_k(grow_lead_.view(), T, W, grow_topk_.view(), 0);
  rows_ = &grow_plan_, a_ = grow_act_.get();
  Activations& a = *a_;
  for (uint32_t s = 0; s < L; s++) {
    const uint64_t dispatches0 = rec_.dispatches(), barriers0 = rec_.barriers();
    in_ = grow_in_[s].get();
    plan(s + 1, *in_);
    const uint32_t gather = T + s * 2 * R;  // the level's tokens, then the rows their hidden states come from
    const DeviceMatrix from = s == 0 ? DeviceMatrix{da.x.view(), DType::F32, static_cast<uint32_t>(draft_plan_.rows.size()), dim}
                                     : DeviceMatrix{grow_x_.view(0, uint64_t{s} * R * dim * 4), DType::F32, s * R, dim};
    // (the level's residual stream is its own rows of grow_x_, where the next levels gather their parents)
    const View x = grow_x_.view(uint64_t{s} * R * dim * 4, uint64_t{R} * dim * 4);
    add_token_embeddings(grow_gather_.view(), gather, R, x, &from, grow_gather_.view(), gather + R);
    record_layer(cfg_.n_layers, x);
    record_draft_head(x, R, a.head.view());
    top_k(a.head.view(), R, W, grow_topk_.view(), (T + s * R) * 2 * W);
    if (s == 0 && !rec_.keying()) tree_level_counts_ = {rec_.dispatches() - dispatches0, rec_.barriers() - barriers0};
  }
  plan(L + 1, *grow_in_[L - 1]);
  rows_ = &plan_, a_ = act_.get(), in_ = main_in_.get();
}

// After the forward: each tree's candidates, as the rule made them.
void VulkanForward::read_grown_trees() {
  const auto* state = static_cast<const int32_t*>(grow_state_.mapped());
  const uint32_t stride = grow_state_stride(), cands = static_cast<uint32_t>(3 + growth_.levels * growth_.beam);
  grown_.resize(grow_first_logit_.size());
  std::vector<int32_t> children;
  for (size_t t = 0; t < grown_.size(); t++) {
    const int32_t* S = state + t * stride;
    GrownTree& g = grown_[t];
    const int n = S[0];
    JF_CHECK(n >= 0 && n <= growth_.max_candidates(), "Vulkan: a draft tree's plan wrote a bad state");
    g.source = grow_first_logit_[t] + S[1];
    g.candidates.resize(static_cast<size_t>(n));
    children.assign(static_cast<size_t>(n) + 1, 0);  // (children seen per parent, parent + 1: a candidate's rank)
    for (int i = 0; i < n; i++) {
      const int32_t* c = S + cands + static_cast<uint32_t>(i) * kCand;
      GrownCandidate& out = g.candidates[static_cast<size_t>(i)];
      out.token = c[0];
      std::memcpy(&out.prob, &c[1], 4);
      std::memcpy(&out.score, &c[2], 4);
      out.parent = c[3], out.depth = c[4], out.expanded = c[5] >= 0;
      JF_CHECK(out.parent >= -1 && out.parent < i && out.token >= 0 && out.token < cfg_.vocab_size, "Vulkan: a draft tree's plan wrote a bad candidate");
      out.rank = children[static_cast<size_t>(out.parent + 1)]++;
    }
    bytes_to_host_ += (cands + static_cast<uint64_t>(n) * kCand) * 4;
  }
  trees_in_forward_ += grown_.size();
}

const GrownTree* VulkanForward::row_grown_tree(int r) {
  for (const GrownTree& g : grown_)
    if (g.source == r) return &g;
  return nullptr;
}

}  // namespace jf::vulkan
