#include "vulkan/vulkan_forward.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "vulkan/attention_sweep.h"
#include "vulkan/kv_storage.h"
#include "vulkan/matmul_grid.h"
#include "vulkan/tile_probe.h"
#include "vulkan/vulkan_forward_parts.h"

namespace jf::vulkan {

namespace {
constexpr uint32_t kHeadRows = 64;  // rows per output-head product over every row (a draft layer's greedy tokens)

}  // namespace

VulkanForward::VulkanForward(int device_index, const ModelConfig& cfg, const ModelWeights& w, std::optional<MatmulKernel> every_matrix,
                             std::optional<MatrixMath> math)
    : ctx_(std::make_unique<Context>(device_index)),
      kernels_(std::make_unique<Kernels>(*ctx_)),
      cfg_(cfg),
      act_(std::make_unique<Activations>()),
      chain_act_(std::make_unique<Activations>()),
      main_in_(std::make_unique<Inputs>()),
      chain_meta_(std::make_unique<Inputs>()),
      tree_act_(std::make_unique<Activations>()),
      tree_in_(std::make_unique<Inputs>()),
      grow_meta_(std::make_unique<Inputs>()),
      grow_act_(std::make_unique<Activations>()),
      draft_act_(std::make_unique<Activations>()),
      draft_in_(std::make_unique<Inputs>()),
      rec_(*ctx_),
      moves_rec_(*ctx_),
      replay_(*ctx_),
      chain_replay_(*ctx_),
      every_matrix_(every_matrix),
      split_min_k_(default_split_min_k(ctx_->info())) {
  k_slices_ = std::make_unique<KSliceScratch>(*ctx_);
  if (const char* f = std::getenv("JF_VULKAN_FAULT")) {  // "FIRST:COUNT": forwards FIRST.. fail (0-based)
    if (std::sscanf(f, "%" SCNu64 ":%" SCNu64, &fault_first_, &fault_count_) != 2)
      throw Error("JF_VULKAN_FAULT must be FIRST:COUNT (forwards that fail as a device error would), got '" + std::string(f) + "'");
  }
  if (const char* r = std::getenv("JF_VULKAN_REPLAY")) replay_on_ = std::strcmp(r, "0") != 0;
  const char* attention = std::getenv("JF_VULKAN_ATTENTION");
  if (const char* prof = std::getenv("JF_VULKAN_PROFILE"); prof && std::strcmp(prof, "0") != 0) {
    profiler_ = std::make_unique<Profiler>(*ctx_);
    rec_.set_profiler(profiler_.get());
    replay_on_ = false;  // (a replayed recording would write its timestamps too, but keep it simple)
  }
  const char* m = std::getenv("JF_VULKAN_MATMUL");
  math_ = math ? *math : m && *m ? parse_matrix_math(m) : MatrixMath::Fma;
  if (const char* rows = std::getenv("JF_VULKAN_TILE_ROWS"); rows && *rows) tile_rows_ = parse_tile_rows(rows);
  if (math_ == MatrixMath::MatrixUnits && !ctx_->info().matrix_units)
    throw Error("Vulkan: device " + std::to_string(device_index) + " (" + ctx_->info().name +
                ") has no fp16 matrix units jf can use (VK_NV_cooperative_matrix, 16x16x16 on subgroups of 32); "
                "JF_VULKAN_MATMUL=tiles computes the same tiles with FMAs");
  if (math_ == MatrixMath::MatrixUnits) {
    const TileProbe probe = probe_tile_positions(*ctx_, *kernels_, math_, tile_rows_);
    if (!probe.ok())
      throw Error("Vulkan: " + ctx_->info().name + "'s matrix units fail jf's tile-position probe (" + probe.detail +
                  "), so jf does not use them: batch invariance would not hold; JF_VULKAN_MATMUL=tiles computes the same tiles with FMAs");
  }
  if (cfg.head_dim > 256) throw Error("Vulkan: head_dim " + std::to_string(cfg.head_dim) + " is above the backend's 256");
  choose_kernels();
  // Attention: JF_VULKAN_ATTENTION, else what jf tune --kernels chose for this device, else the default.
  if (attention && *attention) attention_ = parse_attention_name(attention);
  else if (choices_.attention) attention_ = *choices_.attention;
  else attention_ = default_attention(ctx_->info().software);
  weights_ = std::make_unique<DeviceWeights>(*ctx_, cfg, w);
  matrix_kernels_.resize(weights_->matrix_count());
  if (ctx_->timestamps()) {
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2;
    check(api().vkCreateQueryPool(ctx_->device(), &qi, nullptr, &timer_), "creating a timer");
  }
}

VulkanForward::~VulkanForward() {
  if (timer_) api().vkDestroyQueryPool(ctx_->device(), timer_, nullptr);
}

// The profiler's table, then what a layer records (its dispatches and barriers) and where its kernels came from.
std::string VulkanForward::take_profile() {
  std::string report = profiler_ ? profiler_->take_report() : "";
  if (report.empty()) return report;
  return report + "\na layer: " + std::to_string(layer_counts_.dispatches) + " dispatches, " + std::to_string(layer_counts_.barriers) +
         " barriers\nmatrix kernels: " + kernel_source_ + "\n";
}

KvCache VulkanForward::make_cache(int capacity, DType type) { return make_device_cache(*ctx_, *kernels_, cfg_, capacity, type); }

View VulkanForward::arena() const { return in_->device.view(); }

void VulkanForward::stage_inputs(const Inputs& in) { rec_.copy(in.arena.view(), in.device.view()); }

// Writes the forward's tokens, row table, slot list, logit rows and RoPE angles (computed as the CPU forward
// computes them) into the host-visible arena, with `extra` words left free before the slot list (at in_->extra).
void VulkanForward::upload_inputs(uint32_t extra) {
  const size_t n = rows_->rows.size(), half = static_cast<size_t>(cfg_.rope_dim / 2);
  const bool local_rope = cfg_.rope_theta_local > 0.0f;
  // (the slot list last: every other offset depends on the row counts alone, so a replayed recording's
  // push constants still point at the right places)
  in_->info = u32(n);
  in_->logit = in_->info + u32(5 * n);
  in_->cos = in_->logit + u32(rows_->logit_src.size());
  in_->sin = in_->cos + u32(n * half);
  in_->lcos = in_->sin + u32(n * half);
  in_->lsin = in_->lcos + u32(local_rope ? n * half : 0);
  in_->extra = in_->lsin + u32(local_rope ? n * half : 0);
  in_->slots = in_->extra + extra;
  const size_t total = in_->slots + rows_->slot_list.size();
  ensure_size(*ctx_, in_->arena, total * 4, Buffer::Kind::Host);
  ensure_size(*ctx_, in_->device, in_->arena.size(), Buffer::Kind::Device);
  auto* ints = static_cast<int32_t*>(in_->arena.mapped());
  auto* floats = static_cast<float*>(in_->arena.mapped());
  for (size_t r = 0; r < n; r++) {
    const PlannedRow& row = rows_->rows[r];
    ints[r] = row.token;
    int32_t* info = ints + in_->info + 5 * r;
    info[0] = row.slot, info[1] = row.slots_begin, info[2] = row.slots_end, info[3] = row.local_begin, info[4] = row.local_end;
    const RopeTable table = rope_table(cfg_, row.cache->capacity());
    rope_angles(table, cfg_.rope_dim, row.pos, floats + in_->cos + r * half, floats + in_->sin + r * half);
    if (local_rope) rope_angles(local_rope_table(cfg_), cfg_.rope_dim, row.pos, floats + in_->lcos + r * half, floats + in_->lsin + r * half);
  }
  std::copy(rows_->slot_list.begin(), rows_->slot_list.end(), ints + in_->slots);
  mark_own_slots(ints + in_->slots);
  std::copy(rows_->logit_src.begin(), rows_->logit_src.end(), ints + in_->logit);
}

// The slots the pass's own rows write, as -(row + 2) in the arena's slot list: attention reads those keys and
// values from the pass's activations and stores them itself (shaders/attention.comp), so no dispatch before it
// stores them. A sequence's own slots are a short range (its rows'), looked up in a table over that range.
void VulkanForward::mark_own_slots(int32_t* list) {
  const std::vector<PlannedRow>& rows = rows_->rows;
  for (size_t s = 0; s + 1 < rows_->seq_first.size(); s++) {
    const size_t a = static_cast<size_t>(rows_->seq_first[s]), b = static_cast<size_t>(rows_->seq_first[s + 1]);
    if (a == b) continue;
    int32_t lo = rows[a].slot, hi = rows[a].slot;
    for (size_t r = a; r < b; r++) lo = std::min(lo, rows[r].slot), hi = std::max(hi, rows[r].slot);
    own_slots_.assign(static_cast<size_t>(hi - lo + 1), -1);
    for (size_t r = a; r < b; r++) own_slots_[static_cast<size_t>(rows[r].slot - lo)] = static_cast<int32_t>(r);
    for (size_t r = a; r < b; r++)
      for (auto [from, to] : {std::pair{rows[r].slots_begin, rows[r].slots_end}, std::pair{rows[r].local_begin, rows[r].local_end}})
        for (int32_t i = from; i < to; i++) {
          const int32_t v = list[i];
          if (v >= lo && v <= hi && own_slots_[static_cast<size_t>(v - lo)] >= 0) list[i] = -own_slots_[static_cast<size_t>(v - lo)] - 2;
        }
  }
}

// The kernel of one weight type (PREFIX + the type's name), looked up once per type: no name is built per
// dispatch.
const Kernel& VulkanForward::typed_kernel(TypedKernels& cache, const char* prefix, DType t, uint32_t bindings) {
  const Kernel*& k = cache[static_cast<size_t>(t) % cache.size()];
  if (!k) k = &kernels_->get(prefix + dtype_name(t), bindings);
  return *k;
}

void VulkanForward::rmsnorm(View x, View out, View gain, uint32_t rows, uint32_t n, bool accumulate, int gather_at) {
  struct {
    uint32_t n_rows, n, x_off, x_stride, out_off, out_stride, g_off, gather, gather_off, accumulate;
    float eps;
  } p{rows, n, 0, n, 0, n, 0, gather_at >= 0 ? 1u : 0u, gather_at >= 0 ? u32(gather_at) : 0u, accumulate ? 1u : 0u, cfg_.norm_eps};
  const uint32_t gx = std::min<uint32_t>(rows, 65535), gy = (rows + gx - 1) / gx;
  rec_.dispatch(kernels_->get("rmsnorm", 4), {x, out, gain, arena()}, p, gx, gy);
}

void VulkanForward::softcap(View x, uint64_t n) {
  if (cfg_.final_softcap <= 0.0f) return;
  struct {
    uint32_t n, off;
    float cap;
  } p{u32(n), 0, cfg_.final_softcap};
  uint32_t gx, gy;
  Recorder::flat_grid(n, &gx, &gy);
  rec_.dispatch(kernels_->get("softcap", 1), {x}, p, gx, gy);
}

namespace {
struct GetRowsParams {
  uint32_t n_rows, K, rows_off, out_off;
  float scale;
  uint32_t mode, from_off;  // 0: rows; 1: out += S rows; 2: out = from's rows + S rows (shaders/get_rows.comp)
};
}  // namespace

void VulkanForward::get_rows(const DeviceMatrix& table, View rows, uint32_t rows_off, uint32_t n_rows, View out, float scale) {
  const GetRowsParams p{n_rows, table.cols, rows_off, 0, scale, 0, 0};
  rec_.dispatch(typed_kernel(get_rows_, "get_rows_", table.type, 6), {rows, out, table.data, out, out, rows}, p, n_rows);
}

void VulkanForward::add_token_embeddings(View tokens, uint32_t tokens_off, uint32_t n_rows, View x, const DeviceMatrix* from,
                                         View from_rows, uint32_t from_off) {
  const DeviceMatrix& e = weights_->tok_embd;
  JF_CHECK(!from || from->cols == e.cols, "Vulkan: hidden states and embeddings of different widths");
  const GetRowsParams p{n_rows, e.cols, tokens_off, 0, 1.0f, from ? 2u : 1u, from_off};
  rec_.dispatch(typed_kernel(get_rows_, "get_rows_", e.type, 6),
                {tokens, x, e.data, weights_->draft_token_scale, from ? from->data : x, from ? from_rows : tokens}, p, n_rows);
}

void VulkanForward::argmax(View x, uint32_t rows, View out, uint32_t out_off) {
  struct {
    uint32_t n_rows, n, x_off, out_off;
  } p{rows, u32(cfg_.vocab_size), 0, out_off};
  rec_.dispatch(kernels_->get("argmax", 2), {x, out}, p, rows);
}

// One layer over every row (l == n_layers: the draft layer, global attention): the same steps, in the same
// order, as Transformer::qkv_rows, attend_units and out_ffn_rows.
void VulkanForward::record_layer(int l, View x) {
  const uint64_t dispatches0 = rec_.dispatches(), barriers0 = rec_.barriers();
  record_layer_body(l, x.buffer ? x : a_->x.view());
  if (l == 0 && !rec_.keying()) layer_counts_ = {rec_.dispatches() - dispatches0, rec_.barriers() - barriers0};
}

void VulkanForward::record_layer_body(int l, View x) {
  const DeviceLayer& L = l < cfg_.n_layers ? weights_->layers[static_cast<size_t>(l)] : weights_->draft_layer;
  Activations& a = *a_;
  const uint32_t n = u32(rows_->rows.size()), dim = u32(cfg_.dim), qd = u32(cfg_.q_dim()), kvd = u32(cfg_.kv_dim());
  const uint32_t hd = u32(cfg_.head_dim);
  const bool local = l < cfg_.n_layers && cfg_.local_layer(l);
  // q, k and v: one product where their weights were concatenated, else apart (each reads only x, and
  // normalises it by attn_norm itself: no barrier between them)
  if (L.qkv_parts == 3) {
    const SplitOutputs to{a.k.view(), a.v.view(), qd, qd + kvd};
    matmul(L.wqkv, x, n, a.q.view(), false, L.attn_norm, {}, &to);
  } else if (L.qkv_parts == 2) {
    const SplitOutputs to{a.k.view(), {}, qd, qd + kvd};
    rec_.skip_barriers(1);
    matmul(L.wqkv, x, n, a.q.view(), false, L.attn_norm, {}, &to);
    matmul(L.wv, x, n, a.v.view(), false, L.attn_norm);
  } else {
    rec_.skip_barriers(2);
    matmul(L.wq, x, n, a.q.view(), false, L.attn_norm);
    matmul(L.wk, x, n, a.k.view(), false, L.attn_norm);
    matmul(L.wv, x, n, a.v.view(), false, L.attn_norm);
  }
  auto bias = [&](View y, View b, uint32_t width) {
    if (!b.buffer) return;
    struct {
      uint32_t n_rows, n, y_off, y_stride, b_off;
    } p{n, width, 0, width, 0};
    uint32_t gx, gy;
    Recorder::flat_grid(uint64_t{n} * width, &gx, &gy);
    rec_.dispatch(kernels_->get("add_bias", 2), {y, b}, p, gx, gy);
  };
  bias(a.q.view(), L.bq, qd);
  bias(a.k.view(), L.bk, kvd);
  bias(a.v.view(), L.bv, kvd);
  if (L.q_norm.buffer) rmsnorm(a.q.view(), a.q.view(), L.q_norm, n * u32(cfg_.n_heads), hd, false);
  if (L.k_norm.buffer) rmsnorm(a.k.view(), a.k.view(), L.k_norm, n * u32(cfg_.n_kv_heads), hd, false);
  record_attention(l, local);
  // x += Wo att (gemma: x += norm(Wo att)), then the feed-forward the same way
  if (L.post_attn_norm.buffer) {
    matmul(L.wo, a.att.view(), n, a.xb.view(), false);
    rmsnorm(a.xb.view(), x, L.post_attn_norm, n, dim, true);
  } else {
    matmul(L.wo, a.att.view(), n, x, true);
  }
  // gate and up (one product, or two that only read x), each normalising x by ffn_norm itself; the down
  // projection reads act(gate) * up as it loads its inputs, or (where the product's member pairs gate and up
  // in a workgroup) reads it from hg, the product's epilogue having stored it there
  const uint32_t ffn = u32(cfg_.ffn_dim), act = cfg_.gemma() ? 2u : 1u;
  const bool epilogue = L.w_gate_up && glu_in_epilogue(L.w_gate_up);
  if (epilogue) {
    matmul(L.w_gate_up, x, n, a.hg.view(), false, L.ffn_norm, {}, nullptr, act);
  } else if (L.w_gate_up) {
    const SplitOutputs to{a.hu.view(), {}, ffn, 2 * ffn};
    matmul(L.w_gate_up, x, n, a.hg.view(), false, L.ffn_norm, {}, &to);
  } else {
    rec_.skip_barriers(1);
    matmul(L.w_gate, x, n, a.hg.view(), false, L.ffn_norm);
    matmul(L.w_up, x, n, a.hu.view(), false, L.ffn_norm);
  }
  const View up = epilogue ? View{} : a.hu.view();
  if (L.post_ffn_norm.buffer) {
    matmul(L.w_down, a.hg.view(), n, a.xb.view(), false, {}, up);
    rmsnorm(a.xb.view(), x, L.post_ffn_norm, n, dim, true);
  } else {
    matmul(L.w_down, a.hg.view(), n, x, true, {}, up);
  }
}

// The requested rows' logits: the output head into device memory, each row's greedy token there
// (ForwardResult::greedy), and the rows copied out to the host-visible logits buffer.
void VulkanForward::record_output() {
  const uint32_t nl = u32(rows_->logit_src.size());
  if (nl == 0) return;
  rmsnorm(a_->x.view(), a_->xb.view(), weights_->output_norm, nl, u32(cfg_.dim), false, static_cast<int>(in_->logit));
  record_head(weights_->output, a_->xb.view(), nl, a_->logits_dev, a_->logits, a_->picks, logit_host_);
}

// rows x vocab logits = head(in) in `dev`, their greedy tokens into `picks`, and the rows marked in `to_host`
// copied to `host` (a greedy decoder's need none: it reads the picks).
void VulkanForward::record_head(const DeviceMatrix& head, View in, uint32_t rows, const Buffer& dev, const Buffer& host, const Buffer& picks,
                                const std::vector<char>& to_host) {
  const uint64_t row_bytes = uint64_t{u32(cfg_.vocab_size)} * 4;
  matmul(head, in, rows, dev.view(), false);
  softcap(dev.view(), rows * row_bytes / 4);
  argmax(dev.view(), rows, picks.view(), 0);
  std::vector<VkBufferCopy> regions;
  for (uint32_t r = 0; r < rows; r++) {
    if (!to_host[r]) continue;
    if (!regions.empty() && regions.back().srcOffset + regions.back().size == r * row_bytes) regions.back().size += row_bytes;
    else regions.push_back(VkBufferCopy{r * row_bytes, r * row_bytes, row_bytes});
  }
  rec_.copy_regions(dev.view(), host.view(), regions);
}

// Which logit rows (and draft-logit rows) the forward copies to the host: those of the sequences that need
// logits; a greedy sequence's rows stay on the device (their greedy tokens are read from the picks).
void VulkanForward::plan_host_copies(std::span<SequenceInput* const> seqs) {
  logit_host_.clear();
  for (const SequenceInput* s : seqs) logit_host_.insert(logit_host_.end(), s->logit_rows.size(), s->need == SequenceInput::Need::Logits ? 1 : 0);
  if (!cfg_.draft_layer) {
    draft_host_ = logit_host_;
    return;
  }
  draft_host_.assign(draft_plan_.logit_src.size(), 0);
  for (size_t i = 0; i < draft_rows_.draft_logit.size(); i++)
    if (draft_rows_.draft_logit[i] >= 0) draft_host_[static_cast<size_t>(draft_rows_.draft_logit[i])] = logit_host_[i];
}

// A row the forward left on the device, copied back now (its own submission, counted).
const float* VulkanForward::fetched_row(const Buffer& dev, const Buffer& host, int row, std::vector<char>& on_host) {
  const size_t row_bytes = static_cast<size_t>(cfg_.vocab_size) * 4, at = static_cast<size_t>(row) * row_bytes;
  if (!on_host[static_cast<size_t>(row)]) {
    Recorder copy(*ctx_);
    copy.begin();
    copy.copy_regions(dev.view(), host.view(), {VkBufferCopy{at, at, row_bytes}});
    copy.finish();
    on_host[static_cast<size_t>(row)] = 1;
    extra_fetches_++;
    bytes_to_host_ += row_bytes;
  }
  return reinterpret_cast<const float*>(static_cast<const char*>(host.mapped()) + at);
}

// A draft layer (Transformer::draft_layer): every row's greedy next token from the output head (in pieces of
// kHeadRows rows, its norm folded into the product), the layer on x + draft_token_scale * its embedding, then xb = the logit rows' output
// normalised by draft_output_norm, for the draft head.
void VulkanForward::record_draft_layer() {
  Activations& a = *a_;
  const uint32_t n = u32(rows_->rows.size()), dim = u32(cfg_.dim), V = u32(cfg_.vocab_size);
  for (uint32_t r0 = 0; r0 < n; r0 += kHeadRows) {
    const uint32_t m = std::min(kHeadRows, n - r0);
    matmul(weights_->output, a.x.view(r0 * dim * 4, m * dim * 4), m, a.head.view(), false, weights_->output_norm);  // (norm folded)
    softcap(a.head.view(), uint64_t{m} * V);
    argmax(a.head.view(), m, a.greedy.view(), r0);
  }
  add_token_embeddings(a.greedy.view(), 0, n, a.x.view());
  record_layer(cfg_.n_layers);
  const uint32_t nl = u32(rows_->logit_src.size());
  if (nl > 0) rmsnorm(a.x.view(), a.xb.view(), weights_->draft_output_norm, nl, dim, false, static_cast<int>(in_->logit));
}

void VulkanForward::record_draft_head(View x, uint32_t rows, View logits) {
  matmul(weights_->draft_output, x, rows, logits, false, weights_->draft_output_norm);
  softcap(logits, uint64_t{rows} * static_cast<uint64_t>(cfg_.vocab_size));
}

void VulkanForward::grow_activations(Activations& a, int64_t n, bool draft_layer) {
  auto grow = [&](Buffer& b, int64_t floats) { ensure_size(*ctx_, b, static_cast<size_t>(floats) * 4, Buffer::Kind::Device); };
  const int64_t dim = cfg_.dim;
  grow(a.x, n * dim);
  grow(a.xb, n * std::max(dim, int64_t{cfg_.q_dim()}));
  grow(a.q, n * cfg_.q_dim());
  grow(a.k, n * cfg_.kv_dim());
  grow(a.v, n * cfg_.kv_dim());
  grow(a.att, n * cfg_.q_dim());
  grow(a.hg, n * cfg_.ffn_dim);
  grow(a.hu, n * cfg_.ffn_dim);
  // Split attention's counters start at zero (each dispatch leaves them so): zeroed when made, first in the
  // next submission (every pass grows its activations before it records).
  const size_t counters = static_cast<size_t>(n) * static_cast<size_t>(cfg_.n_kv_heads) * 4;
  if (!attention_done_ || attention_done_.size() < counters) {
    ensure_size(*ctx_, attention_done_, counters, Buffer::Kind::Device);
    zero_attention_done_ = true;
  }
  if (draft_layer) {  // the draft layer's input: the greedy tokens (from the output head) and their embeddings
    grow(a.head, std::min<int64_t>(n, kHeadRows) * cfg_.vocab_size);
    grow(a.greedy, n);
  }
}

void VulkanForward::run(std::span<SequenceInput* const> seqs) {
  JF_CHECK(!tree_.open(), "a forward before the last draft tree's end_tree()");
  grown_.clear();
  rows_ = &plan_, a_ = act_.get(), in_ = main_in_.get();
  plan_.build(cfg_, seqs);
  for (size_t s = 0; s + 1 < plan_.seq_first.size(); s++)  // every sequence's cache is this device's
    if (plan_.seq_first[s] < plan_.seq_first[s + 1]) device_store(*plan_.rows[static_cast<size_t>(plan_.seq_first[s])].cache, ctx_.get());
  drafted_ = layer_ran_ = false;
  const int64_t n = static_cast<int64_t>(rows_->rows.size()), nl = static_cast<int64_t>(rows_->logit_src.size());
  const int64_t V = cfg_.vocab_size;
  Activations& a = *a_;
  ensure_size(*ctx_, a.logits, static_cast<size_t>(std::max<int64_t>(nl, 1) * V * 4), Buffer::Kind::Host);
  ensure_size(*ctx_, a.logits_dev, a.logits.size(), Buffer::Kind::Device);
  ensure_size(*ctx_, a.picks, static_cast<size_t>(std::max<int64_t>(nl, 1) * 4), Buffer::Kind::Host);
  if (n == 0) return;
  grow_activations(a, n, false);
  // The draft layer only on the rows of the sequences that draft from it (SequenceInput::draft_context):
  // `ar`, and a server's sequences that do not draft, pay nothing.
  const bool draft_layer = plan_draft_rows(seqs);
  plan_host_copies(seqs);
  layer_ran_ = draft_layer;
  const int64_t nd = cfg_.draft_layer ? static_cast<int64_t>(draft_plan_.logit_src.size()) : nl;  // draft-logit rows
  const bool drafts = weights_->draft_output && nd > 0 &&
                      std::any_of(seqs.begin(), seqs.end(), [](const SequenceInput* s) { return s->draft_logits; });
  Activations& da = cfg_.draft_layer ? *draft_act_ : a;
  if (drafts) {
    ensure_size(*ctx_, da.draft_logits, static_cast<size_t>(nd * V * 4), Buffer::Kind::Host);
    ensure_size(*ctx_, da.draft_logits_dev, da.draft_logits.size(), Buffer::Kind::Device);
    ensure_size(*ctx_, da.draft_picks, static_cast<size_t>(nd * 4), Buffer::Kind::Host);
  }
  upload_inputs();
  if (draft_layer) {
    grow_activations(*draft_act_, static_cast<int64_t>(draft_plan_.rows.size()), true);
    rows_ = &draft_plan_, in_ = draft_in_.get();
    upload_inputs();
    rows_ = &plan_, in_ = main_in_.get();
    n_draft_layer_rows_ += draft_plan_.rows.size();
  }

  const bool chains = draft_layer && drafts && plan_chains(seqs);
  const bool trees = draft_layer && drafts && plan_grown_trees(seqs);
  if (n_forwards_++ - fault_first_ < fault_count_)  // a device error where a submission would report one (tests)
    throw Error("Vulkan: device error (injected by JF_VULKAN_FAULT)");
  collect_stores(plan_);
  submit(replay_, true, stores_, [&] { record_forward(draft_layer, drafts, chains, trees); });
  if (chains) read_planned_chains();
  if (trees) read_grown_trees();
  else chain_tokens_.clear(), chain_end_.clear();
  drafted_ = drafts;
  const uint64_t row_bytes = static_cast<uint64_t>(V) * 4;
  bytes_to_host_ += nl * 4 + std::count(logit_host_.begin(), logit_host_.end(), 1) * row_bytes;
  if (drafts) bytes_to_host_ += nd * 4 + std::count(draft_host_.begin(), draft_host_.end(), 1) * row_bytes;
  if (timer_) {
    uint64_t ticks[2] = {0, 0};
    if (api().vkGetQueryPoolResults(ctx_->device(), timer_, 0, 2, sizeof ticks, ticks, 8, VK_QUERY_RESULT_64_BIT) == VK_SUCCESS)
      device_seconds_ = static_cast<double>(ticks[1] - ticks[0]) * ctx_->timestamp_period_ns() * 1e-9;
  }
}

void VulkanForward::record_forward(bool draft_layer, bool drafts, bool chains, bool trees) {
  Activations& a = *a_;
  const int64_t n = static_cast<int64_t>(rows_->rows.size()), nl = static_cast<int64_t>(rows_->logit_src.size());
  Api& vk = api();
  const bool timed = timer_ && !rec_.keying();
  if (timed) {
    vk.vkCmdResetQueryPool(rec_.cmd(), timer_, 0, 2);
    vk.vkCmdWriteTimestamp(rec_.cmd(), VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, timer_, 0);
  }
  stage_inputs(*main_in_);
  if (draft_layer) stage_inputs(*draft_in_);
  if (chains) {
    stage_inputs(*chain_meta_);
    for (int j = 0; j < chain_steps_; j++) stage_inputs(*chain_in_[static_cast<size_t>(j)]);
  }
  if (trees) {
    stage_inputs(*grow_meta_);
    for (int j = 0; j < growth_.levels; j++) stage_inputs(*grow_in_[static_cast<size_t>(j)]);
  }
  const float embed_scale = cfg_.gemma() ? std::sqrt(static_cast<float>(cfg_.dim)) : 1.0f;
  get_rows(weights_->tok_embd, arena(), 0, u32(n), a.x.view(), embed_scale);
  for (int l = 0; l < cfg_.n_layers; l++) record_layer(l);
  record_output();
  if (draft_layer) record_draft_rows(drafts);
  if (drafts && !cfg_.draft_layer) {  // a draft head on the model's own output (record_output's xb)
    record_head(weights_->draft_output, a.xb.view(), u32(nl), a.draft_logits_dev, a.draft_logits, a.draft_picks, draft_host_);
  }
  if (chains) record_planned_chains();
  if (trees) record_grown_trees();
  if (timed) vk.vkCmdWriteTimestamp(rec_.cmd(), VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, timer_, 1);
}

// One submission: the KV moves `stores` keep (KvCache::keep's, since their last submission) and split
// attention's new counters zeroed, then what
// `record` records: the recording `kept` holds for the same commands when replay is on (found by the key
// `record` writes in key mode: every kernel, grid, push constant and buffer it would use), else one recorded
// now (and kept). `profile`: timed by the profiler, where there is one.
void VulkanForward::submit(ReplayCache& kept, bool profile, std::span<DeviceKvStore* const> stores, const std::function<void()>& record) {
  std::array<VkCommandBuffer, 2> cmds{};
  size_t n = 0;
  if (zero_attention_done_ || std::any_of(stores.begin(), stores.end(), [](const DeviceKvStore* s) { return s->has_moves(); })) {
    if (!moves_cmd_) moves_cmd_ = ctx_->new_command_buffer();
    moves_rec_.begin(moves_cmd_);
    if (zero_attention_done_) api().vkCmdFillBuffer(moves_rec_.cmd(), attention_done_.handle(), 0, VK_WHOLE_SIZE, 0);
    zero_attention_done_ = false;
    for (DeviceKvStore* s : stores) moved_caches_ += s->record_moves(moves_rec_) ? 1 : 0;
    moves_rec_.barrier();
    cmds[n++] = moves_rec_.end();
  }
  if (replay_on_) {
    rec_.begin_key(&key_);
    k_slices_->restart();
    record();
    rec_.end_key();
  }
  VkCommandBuffer cmd = replay_on_ ? kept.find(key_) : VK_NULL_HANDLE;
  Profiler* profiler = profile && !cmd ? profiler_.get() : nullptr;
  if (!cmd) {
    const VkCommandBuffer target = replay_on_ ? kept.take() : VK_NULL_HANDLE;
    if (target) rec_.begin(target);
    else rec_.begin();
    if (profiler) profiler->begin(rec_.cmd());
    k_slices_->restart();
    record();
    cmd = rec_.end();
    if (target) kept.keep(key_, target);
  }
  cmds[n++] = cmd;
  ctx_->submit_and_wait(std::span<const VkCommandBuffer>(cmds.data(), n));
  k_slices_->release_retired();
  if (profiler) profiler->collect();
}

// The distinct KV stores of a pass's sequences (their pending moves go first in its submission).
void VulkanForward::collect_stores(const RowPlan& plan) {
  stores_.clear();
  for (size_t s = 0; s + 1 < plan.seq_first.size(); s++) {
    if (plan.seq_first[s] == plan.seq_first[s + 1]) continue;
    auto* store = const_cast<DeviceKvStore*>(&device_store(*plan.rows[static_cast<size_t>(plan.seq_first[s])].cache, ctx_.get()));
    if (std::find(stores_.begin(), stores_.end(), store) == stores_.end()) stores_.push_back(store);
  }
}

const float* VulkanForward::row_logits(int r) { return fetched_row(act_->logits_dev, act_->logits, r, logit_host_); }

int32_t VulkanForward::row_greedy(int r) { return static_cast<const int32_t*>(act_->picks.mapped())[r]; }

// A draft head's rows match the logit rows one for one; a draft layer's are the asking sequences' only
// (DraftRows::draft_logit): -1, none.
int32_t VulkanForward::draft_row(int r) const {
  if (!drafted_) return -1;
  return cfg_.draft_layer ? draft_rows_.draft_logit[static_cast<size_t>(r)] : r;
}

const float* VulkanForward::row_draft_logits(int r) {
  const int32_t d = draft_row(r);
  if (d < 0) return nullptr;
  const Activations& da = cfg_.draft_layer ? *draft_act_ : *act_;
  return fetched_row(da.draft_logits_dev, da.draft_logits, d, draft_host_);
}

int32_t VulkanForward::row_draft_greedy(int r) {
  const int32_t d = draft_row(r);
  if (d < 0) return -1;
  const Activations& da = cfg_.draft_layer ? *draft_act_ : *act_;
  return static_cast<const int32_t*>(da.draft_picks.mapped())[d];
}

}  // namespace jf::vulkan
