// Draft trees on the device (ForwardResult::expand_tree): the draft layer after a forward on a tree level's
// nodes as rows of one pass, one submission a level, as Transformer::row_tree does on the CPU. Each node reads
// its parent's layer output (kept on the device: tree_x_, row 0 the source row's, node i's at row i + 1),
// gathered by index, plus its token's embedding, and attends to the cache and its ancestors, whose keys and
// values sit in the cache slots past the sequence's own until end_row_tree(). The draft head's logits come
// back as each node's top k (taken on the device: shaders/top_k.comp; a wider k reads the logits back).
#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "kernels/ops.h"
#include "vulkan/kv_storage.h"
#include "vulkan/vulkan_forward.h"
#include "vulkan/vulkan_forward_parts.h"

namespace jf::vulkan {

namespace {
constexpr int kTreeRows = 64;     // nodes a pass (the head's rows a product: kHeadRows); a wider level takes several
constexpr int kTreeNodes = 1024;  // nodes a tree (tree_x_ is sized for them when the tree opens)
constexpr int kDeviceTopK = 16;   // MAX_K in shaders/top_k.comp
}

int VulkanForward::row_tree(int logit_row, std::span<const DraftNode> nodes, int k, DraftGuess* out) {
  if (!cfg_.draft_layer) return 0;
  tree_.check(nodes, cfg_.vocab_size);
  if (!tree_.open()) {
    JF_CHECK(layer_ran_, "a draft tree after a forward that did not run the draft layer (no draft_logits asked for)");
    const int64_t source = plan_.chain_source(logit_row, nodes[0].token, cfg_.vocab_size);
    tree_layer_row_ = draft_rows_.place[static_cast<size_t>(source)];  // its row in the draft layer's pass
    JF_CHECK(tree_layer_row_ >= 0, "a draft tree from a sequence that did not draft in the last forward");
    const PlannedRow& row = plan_.rows[static_cast<size_t>(source)];
    tree_.start(row.cache, row.pos, logit_row);
    ensure_size(*ctx_, tree_x_, static_cast<size_t>(kTreeNodes + 1) * static_cast<size_t>(cfg_.dim) * 4, Buffer::Kind::Device);
  }
  tree_.check_row(logit_row);
  const int count = tree_.room(static_cast<int>(nodes.size()), kTreeNodes);
  for (int i = 0; i < count; i += kTreeRows) {
    const int m = std::min(count - i, kTreeRows);
    expand_tree_rows(nodes.subspan(static_cast<size_t>(i), static_cast<size_t>(m)), k, out + static_cast<int64_t>(i) * k);
  }
  return count;
}

void VulkanForward::end_row_tree() { tree_.close(); }

// One pass of up to kTreeRows nodes whose parents are all expanded: planned, uploaded, run in one submission.
void VulkanForward::expand_tree_rows(std::span<const DraftNode> nodes, int k, DraftGuess* out) {
  const uint32_t m = static_cast<uint32_t>(nodes.size()), dim = static_cast<uint32_t>(cfg_.dim);
  const int64_t V = cfg_.vocab_size;
  const int first = tree_.nodes();
  RowPlan& p = tree_plan_;
  p.rows.clear(), p.slot_list.clear(), p.logit_src.clear();
  p.seq_first = {0, static_cast<int32_t>(m)};
  tree_.add_rows(nodes, p);
  rows_ = &tree_plan_, a_ = tree_act_.get(), in_ = tree_in_.get();
  struct Restore {  // the forward's pass again, also when a step throws
    VulkanForward* f;
    ~Restore() { f->rows_ = &f->plan_, f->a_ = f->act_.get(), f->in_ = f->main_in_.get(); }
  } restore{this};
  upload_inputs();
  Activations& a = *a_;
  grow_activations(a, m, true);
  const bool on_device = k <= kDeviceTopK;  // (else the logits come back, for the host's top k)
  ensure_size(*ctx_, a.logits, (on_device ? size_t{2} * static_cast<size_t>(k) : static_cast<size_t>(V)) * m * 4, Buffer::Kind::Host);
  ensure_size(*ctx_, a.tokens, static_cast<size_t>(m) * 4, Buffer::Kind::Host);
  auto* parents = static_cast<int32_t*>(a.tokens.mapped());  // each node's parent's row of tree_x_
  for (uint32_t j = 0; j < m; j++) parents[j] = nodes[j].parent + 1;
  DeviceKvStore* store = const_cast<DeviceKvStore*>(&dynamic_cast<const DeviceKvStore&>(*p.rows[0].cache->device_store()));
  submit(chain_replay_, false, std::span<DeviceKvStore* const>(&store, 1), [&] {
    stage_inputs(*in_);
    const uint64_t dispatches0 = rec_.dispatches(), barriers0 = rec_.barriers();
    if (first == 0) rec_.copy(draft_act_->x.view(static_cast<size_t>(tree_layer_row_) * dim * 4, dim * 4), tree_x_.view(0, dim * 4));
    const uint64_t row_bytes = uint64_t{dim} * 4;
    const DeviceMatrix outputs{tree_x_.view(0, uint64_t(first + 1) * row_bytes), DType::F32, static_cast<uint32_t>(first + 1), dim};
    // The pass's residual stream is its nodes' own rows of tree_x_, where later passes gather their parents (no
    // copy), where a row's bytes are a multiple of the binding alignment; else a.x, copied there after.
    const bool in_place = row_bytes % ctx_->offset_alignment() == 0;
    const View x = in_place ? tree_x_.view(uint64_t(first + 1) * row_bytes, uint64_t{m} * row_bytes) : a.x.view();
    add_token_embeddings(arena(), 0, m, x, &outputs, a.tokens.view(), 0);  // (the nodes' tokens lead the arena)
    record_layer(cfg_.n_layers, x);
    if (!in_place) rec_.copy(a.x.view(0, uint64_t{m} * row_bytes), tree_x_.view(uint64_t(first + 1) * row_bytes, uint64_t{m} * row_bytes));
    record_draft_head(x, m, a.head.view());
    if (on_device) {
      top_k(a.head.view(), m, static_cast<uint32_t>(k), a.logits.view(), 0);
    } else {
      rec_.copy(a.head.view(0, uint64_t{m} * static_cast<uint64_t>(V) * 4), a.logits.view(0, uint64_t{m} * static_cast<uint64_t>(V) * 4));
    }
    if (first > 0 && !rec_.keying()) tree_level_counts_ = {rec_.dispatches() - dispatches0, rec_.barriers() - barriers0};
  });
  extra_fetches_++;
  bytes_to_host_ += uint64_t{m} * (on_device ? 2 * static_cast<uint64_t>(k) : static_cast<uint64_t>(V)) * 4;
  if (on_device) {
    const auto* words = static_cast<const uint32_t*>(a.logits.mapped());
    for (uint32_t j = 0; j < m; j++)
      for (int g = 0; g < k; g++) {
        const uint32_t* row = words + size_t{j} * 2 * static_cast<size_t>(k);
        float prob;
        std::memcpy(&prob, &row[k + g], 4);
        out[int64_t{j} * k + g] = {static_cast<int32_t>(row[g]), prob};
      }
    return;
  }
  const auto* logits = static_cast<const float*>(a.logits.mapped());
  std::vector<int32_t> ids(static_cast<size_t>(k));
  std::vector<float> probs(static_cast<size_t>(k));
  for (uint32_t j = 0; j < m; j++) {
    softmax_top_k(logits + int64_t{j} * V, V, k, ids.data(), probs.data());
    for (int g = 0; g < k; g++) out[int64_t{j} * k + g] = {ids[static_cast<size_t>(g)], probs[static_cast<size_t>(g)]};
  }
}

}  // namespace jf::vulkan
