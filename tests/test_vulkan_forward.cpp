// The forward pass on a Vulkan device (lavapipe in CI): batch invariance for every architecture and the
// batch shapes decoders and the server send (many rows, several sequences, explicit positions, tree masks,
// slots moved by keep), agreement with the CPU forward within a stated tolerance, draft heads and layers, and
// the errors a user meets (too little memory, caches of another device). (A layer's shape and its kernels:
// test_vulkan_layer.cpp.)
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>

#include "base/error.h"
#include "device/device.h"
#include "kernels/ops.h"
#include "model_helpers.h"
#include "model/random_model.h"
#include "vulkan/vulkan_forward.h"
#include "vulkan_forward_support.h"
#include "vulkan_support.h"

namespace jf {
namespace {

using test::DraftModel;
using test::Logits;
using test::expect_bits;
using test::make_model;
using test::row_of;
using test::stepwise;

// Every batch shape against the one-token reference of `toks` (13 tokens).
void expect_batch_invariant(ForwardPass& fwd, const std::vector<int32_t>& toks, DType kv, const std::string& what) {
  const int V = fwd.vocab_size();
  const Logits ref = stepwise(fwd, toks, kv);
  // 1. all rows in one causal forward
  {
    KvCache c = fwd.make_cache(64, kv);
    SequenceInput in;
    in.set_causal(&c, toks, SequenceInput::Logits::All);
    const ForwardResult l = fwd.forward(in);
    for (size_t r = 0; r < toks.size(); r++) expect_bits(row_of(l, int(r)), ref[r], what + ": causal row " + std::to_string(r));
  }
  // 2. rows 8..11 beside another sequence (a prefill of 6 tokens) in one forward
  KvCache a = fwd.make_cache(64, kv), b = fwd.make_cache(64, kv);
  SequenceInput ia, ib;
  ia.set_causal(&a, std::vector<int32_t>(toks.begin(), toks.begin() + 8), SequenceInput::Logits::None);
  fwd.forward(ia);
  ia.set_causal(&a, std::vector<int32_t>(toks.begin() + 8, toks.begin() + 12), SequenceInput::Logits::All);
  ib.set_causal(&b, std::vector<int32_t>{3, 1, 4, 1, 5, 9}, SequenceInput::Logits::All);
  SequenceInput* both[] = {&ib, &ia};
  ForwardResult l = fwd.forward(std::span<SequenceInput* const>(both, 2));
  for (int r = 0; r < 4; r++) expect_bits(row_of(l, 6 + r), ref[8 + r], what + ": beside another sequence, row " + std::to_string(8 + r));
  // 3. a tree: t8, t9, a sibling of t9, t10, t11 with explicit positions and a mask; then keep() the path
  // and go on with t12 (slot moves on the device)
  KvCache c = fwd.make_cache(64, kv);
  SequenceInput in;
  in.set_causal(&c, std::vector<int32_t>(toks.begin(), toks.begin() + 8), SequenceInput::Logits::None);
  fwd.forward(in);
  in.reset_rows(&c, 5);
  const int32_t tree_tokens[5] = {toks[8], toks[9], (toks[9] + 1) % V, toks[10], toks[11]};
  const int32_t pos[5] = {8, 9, 9, 10, 11};
  const int parent[5] = {-1, 0, 0, 1, 3};
  for (int i = 0; i < 5; i++) {
    in.tokens[i] = tree_tokens[i], in.positions[i] = pos[i];
    for (int j = i; j >= 0; j = parent[j]) in.mask.set(i, j);
  }
  in.logit_rows = {0, 1, 3, 4};
  l = fwd.forward(in);
  for (int i = 0; i < 4; i++) expect_bits(row_of(l, i), ref[8 + i], what + ": tree row " + std::to_string(i));
  const int32_t path[4] = {8, 9, 11, 12};
  const DeviceSyncs before_keep = fwd.device_syncs();
  c.keep(8, path);
  EXPECT_EQ(fwd.device_syncs().submissions, before_keep.submissions) << what << ": keep waited for the device";
  in.set_causal(&c, std::vector<int32_t>{toks[12]}, SequenceInput::Logits::Last);
  expect_bits(row_of(fwd.forward(in), 0), ref[12], what + ": after keep");
  EXPECT_EQ(fwd.device_syncs().submissions, before_keep.submissions + 1) << what << ": the moves went apart from the forward";
}

// The largest |want - got| over the largest |want| (at least 1): how far the device is from the CPU.
float relative_error(const std::vector<float>& want, const std::vector<float>& got) {
  float scale = 1.0f, worst = 0.0f;
  for (size_t i = 0; i < want.size(); i++) scale = std::max(scale, std::fabs(want[i])), worst = std::max(worst, std::fabs(want[i] - got[i]));
  return worst / scale;
}

class VulkanArch : public ::testing::TestWithParam<std::string> {};

TEST_P(VulkanArch, BatchInvariantAndCloseToTheCpu) {
  JF_VULKAN_DEVICE(device);
  const std::unique_ptr<Model> m = make_model(preset_config(GetParam()), DType::F32, 11);
  const std::vector<int32_t> toks = test::random_tokens(13, m->config().vocab_size, 5);
  Transformer cpu(m->config(), m->weights());
  const Logits want = stepwise(cpu, toks);
  // Every way of computing matrix products: the device's default FMA kernel for these small matrices (a
  // thread per output), members of the split family that large matrices take (forced for every matrix), and
  // the fp16 tiles (with FMAs, and on matrix units where the device has them).
  struct Variant {
    std::optional<vulkan::MatmulKernel> kernel;
    vulkan::MatrixMath math;
    vulkan::AttentionChoice attention;  // whole rows, or chunks of slots (split-C) with rows a workgroup (-rR)
  };
  std::vector<Variant> variants{{{}, vulkan::MatrixMath::Fma, {}}, {{}, vulkan::MatrixMath::Fma, {64, 1}}, {{}, vulkan::MatrixMath::Fma, {64, 4}}};
  for (const vulkan::MatmulKernel& k : test::some_split_kernels(device)) variants.push_back({k, vulkan::MatrixMath::Fma, {}});
  for (vulkan::MatrixMath math : test::matrix_maths(device))
    if (math != vulkan::MatrixMath::Fma) variants.push_back({{}, math, {}});
  for (const Variant& v : variants) {
    const bool fp16 = v.math != vulkan::MatrixMath::Fma;
    const std::string what = GetParam() + (fp16 ? std::string(" ") + vulkan::matrix_math_name(v.math) : v.kernel ? std::string(" ") + v.kernel->name() : "") +
                             (v.attention.chunk ? " attention " + vulkan::attention_name(v.attention) : "");
    vulkan::VulkanForward fwd(device, m->config(), m->weights(), v.kernel, v.math);
    fwd.set_attention(v.attention);
    for (DType kv : {DType::F32, DType::F16}) expect_batch_invariant(fwd, toks, kv, what + " kv " + dtype_name(kv));
    // CPU and device sum in different orders: logits agree to 1e-4 of the largest logit's magnitude; the
    // tiles' fp16 weights and inputs (11 significant bits; ~1e-3 measured) to 5e-3.
    const Logits got = stepwise(fwd, toks);
    for (size_t r = 0; r < toks.size(); r++) EXPECT_LE(relative_error(want[r], got[r]), fp16 ? 5e-3f : 1e-4f) << what << " row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Presets, VulkanArch,
                         ::testing::Values("tiny", "llama3-tiny", "qwen2-tiny", "qwen2-yarn-tiny", "qwen3-tiny", "phi3-tiny",
                                           "gemma2-tiny", "gemma3-tiny"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

TEST(VulkanForward, BatchInvariantForEveryWeightType) {
  JF_VULKAN_DEVICE(device);
  for (DType t : {DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q6_K,
                  DType::IQ4_NL, DType::IQ4_XS}) {
    const ModelConfig c = preset_config(dtype_block_size(t) == 256 ? "tiny-256" : "tiny");
    const std::unique_ptr<Model> m = make_model(c, t, 3);
    // the default, and a split member with every option (the family's tests run every member on every type)
    for (const std::optional<vulkan::MatmulKernel>& k : {std::optional<vulkan::MatmulKernel>{}, std::optional{test::some_split_kernels(device).back()}}) {
      vulkan::VulkanForward fwd(device, m->config(), m->weights(), k, vulkan::MatrixMath::Fma);
      expect_batch_invariant(fwd, test::random_tokens(13, c.vocab_size, 8), DType::F32, dtype_name(t) + (k ? std::string(" ") + k->name() : std::string()));
    }
    for (vulkan::MatrixMath math : test::matrix_maths(device)) {
      if (math == vulkan::MatrixMath::Fma) continue;
      vulkan::VulkanForward fwd(device, m->config(), m->weights(), {}, math);
      expect_batch_invariant(fwd, test::random_tokens(13, c.vocab_size, 8), DType::F32, dtype_name(t) + " " + vulkan::matrix_math_name(math));
    }
  }
}

// The vec members (matmul_vec.comp: Q3_K-Q6_K, IQ4_XS and Q8_0) in whole forwards of each type, the norm and
// GLU folded into their loads and q/k/v and gate/up split over their outputs: batch-invariant, the CPU's
// logits, and not the default kernel's bits (they ran). K-sliced members (-kS) on the down projection, the one
// matrix they run (K >= 2N), of 1,024 inputs (4 super-blocks: slices of 2 and 1, some empty).
TEST(VulkanForward, VecMembersRunForwardsAsTheCpu) {
  JF_VULKAN_DEVICE(device);
  const std::vector<std::pair<DType, std::string>> cases = {{DType::Q4_K, "vec-wg32-o1-r8"},
                                                            {DType::Q5_K, "vec-wg64-o8-r4"}, {DType::Q6_K, "vec-wg128-o2-r8"},
                                                            {DType::Q8_0, "vec-wg32-o4-r4"}, {DType::Q3_K, "vec-wg64-o2-r4"},
                                                            {DType::IQ4_XS, "vec-wg128-o4-r8"}, {DType::Q4_K, "vec-wg64-o2-r4-k2"},
                                                            {DType::Q6_K, "vec-wg128-o1-r4-d2-k4"}, {DType::Q8_0, "vec-wg64-o1-r4-dot-k4"}};
  std::vector<vulkan::MatmulKernel> family;
  for (const vulkan::DeviceInfo& d : vulkan::list_devices())
    if (d.index == device) family = vulkan::matmul_family(d);
  if (std::none_of(family.begin(), family.end(), [](const auto& k) { return k.vec; }))
    GTEST_SKIP() << "SKIPPED: the device has no subgroup shuffles (no vec members)";
  for (const auto& [type, name] : cases) {
    const vulkan::MatmulKernel k = vulkan::parse_matmul_kernel(name);
    if (k.dot && std::find(family.begin(), family.end(), k) == family.end()) continue;  // (no OpSDot on this device)
    ASSERT_NE(std::find(family.begin(), family.end(), k), family.end()) << name;
    ModelConfig c = preset_config("tiny-256");
    if (k.slices > 1) c.ffn_dim = 1024;
    const std::unique_ptr<Model> m = make_model(c, type, 3);
    const std::vector<int32_t> toks = test::random_tokens(13, m->config().vocab_size, 8);
    Transformer cpu(m->config(), m->weights());
    const Logits want = stepwise(cpu, toks);
    vulkan::VulkanForward plain(device, m->config(), m->weights(), test::some_split_kernels(device)[0], vulkan::MatrixMath::Fma);
    const Logits split = stepwise(plain, toks);
    const std::string what = dtype_name(type) + " " + name;
    vulkan::VulkanForward fwd(device, m->config(), m->weights(), k, vulkan::MatrixMath::Fma);
    for (DType kv : {DType::F32, DType::F16}) expect_batch_invariant(fwd, toks, kv, what + " kv " + dtype_name(kv));
    const Logits got = stepwise(fwd, toks);
    // (-dot: the inputs rounded to int8s, which this CPU forward does not do: ~1e-2 measured, unsliced alike)
    for (size_t r = 0; r < toks.size(); r++) EXPECT_LE(relative_error(want[r], got[r]), k.dot ? 3e-2f : 1e-4f) << what << " row " << r;
    EXPECT_NE(got, split) << what << ": the bits of " << test::some_split_kernels(device)[0].name();
    if (k.slices > 1) {  // (every other matrix runs the default: the down projection's slices made the difference)
      vulkan::VulkanForward by_default(device, m->config(), m->weights(), {}, vulkan::MatrixMath::Fma);
      EXPECT_NE(got, stepwise(by_default, toks)) << what << ": the default kernels' bits";
    }
  }
}

// The tiles of 32 and 64 rows a workgroup (JF_VULKAN_TILE_ROWS; their kernels: test_vulkan_tiles) in whole
// forwards: every batch shape the bits of one token a forward.
TEST(VulkanForward, BatchInvariantWithWiderTiles) {
  JF_VULKAN_DEVICE(device);
  const ModelConfig c = preset_config("tiny-256");
  const std::unique_ptr<Model> m = make_model(c, DType::Q4_K, 3);
  for (const char* rows : {"32", "64"}) {
    setenv("JF_VULKAN_TILE_ROWS", rows, 1);
    for (vulkan::MatrixMath math : test::matrix_maths(device)) {
      if (math == vulkan::MatrixMath::Fma) continue;
      vulkan::VulkanForward fwd(device, m->config(), m->weights(), {}, math);
      EXPECT_NE(fwd.device_name().find(std::string(rows) + "-row tiles"), std::string::npos) << fwd.device_name();
      expect_batch_invariant(fwd, test::random_tokens(13, c.vocab_size, 8), DType::F32, std::string(rows) + "-row " + vulkan::matrix_math_name(math));
    }
    unsetenv("JF_VULKAN_TILE_ROWS");
  }
}

// A forward of a shape seen before submits the command buffer recorded for it: a decode (one shape token
// after token), then the batch shapes of expect_batch_invariant (new caches, trees, two sequences) give the
// same bits as forwards recorded every time, and most decode steps were replays.
TEST(VulkanForward, ReplaysRecordedShapesWithTheSameBits) {
  JF_VULKAN_DEVICE(device);
  const std::unique_ptr<Model> m = make_model(preset_config("tiny"), DType::Q8_0, 5);
  const std::vector<int32_t> toks = test::random_tokens(13, m->config().vocab_size, 9);
  vulkan::VulkanForward replayed(device, m->config(), m->weights()), recorded(device, m->config(), m->weights());
  recorded.set_replay(false);
  const Logits want = stepwise(recorded, toks), got = stepwise(replayed, toks);
  for (size_t r = 0; r < toks.size(); r++) expect_bits(got[r], want[r], "decode step " + std::to_string(r));
  EXPECT_GE(replayed.replayed_forwards(), 9u);  // (a few steps re-record: the arena grows with the context)
  EXPECT_EQ(recorded.replayed_forwards(), 0u);
  expect_batch_invariant(replayed, toks, DType::F32, "replayed");
  expect_batch_invariant(replayed, toks, DType::F16, "replayed, f16 KV");
  const Logits again = stepwise(replayed, toks);  // a fresh cache of the same shape: not the old one's recording
  for (size_t r = 0; r < toks.size(); r++) expect_bits(again[r], want[r], "decode again, step " + std::to_string(r));
}

// Chunked attention's partial results are sized for the pass's global layers before its first layer is
// recorded: with a sliding-window layer first (gemma2) and replay off, a global layer after it needing more
// chunks grew the buffer that the recording had already bound (the context refuses to submit such a recording).
TEST(VulkanForward, ChunkedAttentionGrowsNoBufferInTheMiddleOfARecording) {
  JF_VULKAN_DEVICE(device);
  const std::unique_ptr<Model> m = make_model(preset_config("gemma2-tiny"), DType::F32, 7);
  ASSERT_GT(m->config().sliding_window, 0);
  const std::vector<int32_t> toks = test::random_tokens(150, m->config().vocab_size, 3);  // 3 chunks of 64, the window 1
  vulkan::VulkanForward fwd(device, m->config(), m->weights());
  fwd.set_replay(false);
  fwd.set_attention({64, 1});
  Transformer cpu(m->config(), m->weights());
  auto last_row = [&](ForwardPass& f) {
    KvCache c = f.make_cache(160);
    SequenceInput in;
    in.set_causal(&c, toks, SequenceInput::Logits::Last);
    return row_of(f.forward(in), 0);
  };
  std::vector<float> got;
  ASSERT_NO_THROW(got = last_row(fwd));
  EXPECT_LE(relative_error(last_row(cpu), got), 1e-4f);
}

// A draft head and layer: the device's draft logits agree with the CPU's, and both heads stay batch-invariant,
// with every way of computing matrix products.
TEST(VulkanForward, DraftHeadAndLayerMatchTheCpu) {
  JF_VULKAN_DEVICE(device);
  for (vulkan::MatrixMath math : test::matrix_maths(device)) {
    DraftModel m(device, 21, math);
    const std::string what = std::string("draft layer model, ") + vulkan::matrix_math_name(math);
    const std::vector<int32_t> toks = test::random_tokens(13, m.cfg.vocab_size, 2);
    expect_batch_invariant(m.fwd, toks, DType::F32, what);
    auto drafts = [&](ForwardPass& f) {
      KvCache c = f.make_cache(64);
      SequenceInput in;
      in.set_causal(&c, toks, SequenceInput::Logits::All);
      in.draft_logits = true;
      std::vector<float> d = test::draft_rows(f.forward(in), static_cast<int>(toks.size()));
      EXPECT_FALSE(d.empty());
      return d;
    };
    EXPECT_LE(relative_error(drafts(m.cpu), drafts(m.fwd)), math == vulkan::MatrixMath::Fma ? 1e-4f : 5e-3f) << what;
  }
}

// In a batch mixing sequences that draft with one that does not (a server's), the draft layer runs on the
// drafting sequences' rows alone, and each sequence gets its lone bits: logits, draft logits and chain.
TEST(VulkanForward, AMixedBatchRunsTheDraftLayerOnlyOnTheRowsThatDraft) {
  JF_VULKAN_DEVICE(device);
  DraftModel m(device, 6);
  const int V = m.cfg.vocab_size;
  const std::vector<std::vector<int32_t>> tokens{{3, 1, 4, 1, 5}, {2, 7, 1, 8, 2, 8, 1, 8}, {9, 2, 6}};
  const std::vector<bool> drafting{true, false, true};  // the drafting rows in two runs, apart
  struct Out {
    std::vector<float> logits, drafts;
    std::vector<int32_t> chain;
  };
  // The sequences `which`, in one forward: each one's logits, draft logits and a chain of two after its last row
  // (and the draft layer's rows in that forward).
  auto run = [&](const std::vector<size_t>& which) {
    std::vector<KvCache> caches;
    for (size_t i = 0; i < which.size(); i++) caches.push_back(m.fwd.make_cache(64));
    std::vector<SequenceInput> ins(which.size());
    std::vector<SequenceInput*> seqs;
    for (size_t i = 0; i < which.size(); i++) {
      ins[i].set_causal(&caches[i], tokens[which[i]], SequenceInput::Logits::All);
      ins[i].draft_logits = drafting[which[i]];
      seqs.push_back(&ins[i]);
    }
    const uint64_t rows_before = m.fwd.n_draft_layer_rows();
    const ForwardResult res = m.fwd.forward(std::span<SequenceInput* const>(seqs));
    const uint64_t layer_rows = m.fwd.n_draft_layer_rows() - rows_before;
    std::vector<Out> out;
    int first = 0;
    for (size_t i = 0; i < which.size(); i++) {
      const int n = static_cast<int>(tokens[which[i]].size());
      const ForwardResult l = res.slice(first, n);
      Out o;
      o.logits = test::all_logits(l);
      if (drafting[which[i]]) {
        o.drafts = test::draft_rows(l, n);
        o.chain.assign(2, -1);
        EXPECT_EQ(2, l.chain(n - 1, 3, 2, o.chain.data()));
      } else {
        EXPECT_EQ(l.draft_logits(0), nullptr);  // not asked for: none, with the layer run in this forward
      }
      out.push_back(std::move(o));
      first += n;
    }
    return std::pair{out, layer_rows};
  };
  const auto [mixed, mixed_rows] = run({0, 1, 2});
  EXPECT_EQ(mixed_rows, tokens[0].size() + tokens[2].size());
  for (size_t i : {0u, 1u, 2u}) {
    const auto [alone, alone_rows] = run({i});
    EXPECT_EQ(alone_rows, drafting[i] ? tokens[i].size() : 0u) << "sequence " << i;
    EXPECT_EQ(mixed[i].logits, alone[0].logits) << "sequence " << i;
    EXPECT_EQ(mixed[i].drafts, alone[0].drafts) << "sequence " << i;
    EXPECT_EQ(mixed[i].chain, alone[0].chain) << "sequence " << i;
    EXPECT_EQ(mixed[i].drafts.size(), drafting[i] ? tokens[i].size() * V : 0u) << "sequence " << i;
  }
}

// A draft chain on the device: the CPU's chained drafts, the same after a batched forward as after a lone one,
// and the cache as it was after it (the next forward's logits unchanged).
TEST(VulkanForward, DraftChainMatchesTheCpuAndLeavesTheCacheAsItWas) {
  JF_VULKAN_DEVICE(device);
  for (vulkan::MatrixMath math : test::matrix_maths(device)) {
    SCOPED_TRACE(vulkan::matrix_math_name(math));
    DraftModel m(device, 3, math);  // a seed whose chain varies (75 144 144 179): a step that reads the wrong token fails
    const ModelConfig& cfg = m.cfg;
    vulkan::VulkanForward& fwd = m.fwd;
    const std::vector<int32_t> toks = test::random_tokens(10, cfg.vocab_size, 4), other = test::random_tokens(7, cfg.vocab_size, 5);
    // chain(f, batched): the 4 drafts after the last row of toks (first draft 3), and the next token's logits
    auto chain = [&](ForwardPass& f, bool batched) {
      KvCache c = f.make_cache(64), o = f.make_cache(64);
      SequenceInput in, io;
      in.set_causal(&c, toks, SequenceInput::Logits::Last);
      io.set_causal(&o, other, SequenceInput::Logits::Last);
      in.draft_logits = io.draft_logits = true;
      SequenceInput* both[] = {&io, &in};
      const ForwardResult l = batched ? f.forward(std::span<SequenceInput* const>(both, 2)) : f.forward(in);
      std::vector<int32_t> drafts(4, -1);
      EXPECT_EQ(4, l.chain(batched ? 1 : 0, 3, 4, drafts.data()));
      EXPECT_EQ(c.size(), 10);
      in.set_causal(&c, std::vector<int32_t>{7}, SequenceInput::Logits::Last);
      return std::pair{drafts, row_of(f.forward(in), 0)};
    };
    const auto [cpu_drafts, cpu_next] = chain(m.cpu, false);
    const auto [lone, lone_next] = chain(fwd, false);
    const auto [batched, batched_next] = chain(fwd, true);
    if (math == vulkan::MatrixMath::Fma) {
      EXPECT_EQ(lone, cpu_drafts);  // (fp16 tiles may pick other drafts)
    }
    EXPECT_EQ(batched, lone);
    expect_bits(batched_next, lone_next, "the forward after a chain");
    KvCache c = fwd.make_cache(64);
    SequenceInput in;
    in.set_causal(&c, toks, SequenceInput::Logits::None);
    fwd.forward(in);
    in.set_causal(&c, std::vector<int32_t>{7}, SequenceInput::Logits::Last);
    expect_bits(row_of(fwd.forward(in), 0), lone_next, "the forward without a chain");
  }
}

// A chain asked for up front (SequenceInput::chain_depth) runs in the forward's own submission from the row
// verification keeps: in a tree whose second branch is verified two deep, the drafts a chain asked for
// afterwards (a submission of its own) gives from that row, alone and beside another sequence; a chain from
// another row is computed apart, and counted.
// Also with attention in chunks of 64 slots after a prompt of P = 64: the path and chain slots past the chunk.
void expect_up_front_chain_from_the_verified_row(int device, int P, uint32_t chunk) {
  DraftModel m(device, 3);
  vulkan::VulkanForward& f = m.fwd;
  f.set_attention_chunk(chunk);
  const int cap = P + 57;
  const int V = m.cfg.vocab_size;
  const std::vector<int32_t> toks = test::random_tokens(P + 1, V, 4), other = test::random_tokens(5, V, 6);
  std::vector<int32_t> greedy;  // the model's next two tokens after toks
  {
    KvCache c = f.make_cache(cap);
    SequenceInput in;
    in.set_causal(&c, toks, SequenceInput::Logits::Last);
    greedy.push_back(f.forward(in).greedy(0));
    in.set_causal(&c, std::vector<int32_t>{greedy[0]}, SequenceInput::Logits::Last);
    greedy.push_back(f.forward(in).greedy(0));
  }
  // rows: the pending token, a wrong branch, then greedy[0], greedy[1] and a wrong token
  const int32_t tree[5] = {toks[P], (greedy[0] + 1) % V, greedy[0], greedy[1], (greedy[1] + 3) % V};
  const int parent[5] = {-1, 0, 0, 2, 3};
  auto chain_on = [&](ForwardPass& f, bool up_front, bool batched, int from, uint64_t* fetches) {
    KvCache c = f.make_cache(cap), o = f.make_cache(cap);
    SequenceInput in, io;
    in.set_causal(&c, std::span<const int32_t>(toks).first(static_cast<size_t>(P)), SequenceInput::Logits::None);
    in.draft_context = true;  // (the draft layer's keys and values of the prompt, which the chain attends to)
    f.forward(in);
    in.reset_rows(&c, 5);
    for (int i = 0; i < 5; i++) {
      in.tokens[i] = tree[i], in.positions[i] = P + (i == 0 ? 0 : i < 3 ? 1 : i - 1);
      for (int a = i; a >= 0; a = parent[a]) in.mask.set(i, a);
      in.logit_rows.push_back(i);
      in.verify_parent.push_back(parent[i]);
    }
    in.draft_logits = io.draft_logits = true;
    in.chain_depth = up_front ? 3 : 0;
    io.set_causal(&o, other, SequenceInput::Logits::Last);
    io.draft_logits = true;
    SequenceInput* both[] = {&io, &in};
    const ForwardResult all = batched ? f.forward(std::span<SequenceInput* const>(both, 2)) : f.forward(in);
    const ForwardResult res = batched ? all.slice(1, 5) : all;
    const std::vector<int32_t> kept = from == 3 ? std::vector<int32_t>{P, P + 2, P + 3} : std::vector<int32_t>{P};
    c.keep(P, kept);
    const uint64_t before = f.device_syncs().extra_fetches;
    std::vector<int32_t> drafts(3, -1);
    EXPECT_EQ(3, res.chain(from, res.draft_greedy(from), 3, drafts.data()));
    *fetches = f.device_syncs().extra_fetches - before;
    return drafts;
  };
  auto chain = [&](bool up_front, bool batched, int from, uint64_t* fetches) { return chain_on(f, up_front, batched, from, fetches); };
  uint64_t fetches = 0;
  const std::vector<int32_t> want = chain(false, false, 3, &fetches);
  EXPECT_EQ(fetches, 1u);  // not asked for: a submission of its own
  uint64_t cpu_fetches = 0;
  if (chunk == 0) {
    EXPECT_EQ(want, chain_on(m.cpu, false, false, 3, &cpu_fetches));  // (the CPU's chain from the same row)
  }
  const uint64_t in_forward = f.chains_in_forward();
  EXPECT_EQ(chain(true, false, 3, &fetches), want);
  EXPECT_EQ(fetches, 0u);
  EXPECT_EQ(chain(true, true, 3, &fetches), want);
  EXPECT_EQ(fetches, 0u);
  EXPECT_EQ(f.chains_in_forward() - in_forward, 2u);
  chain(true, false, 0, &fetches);  // the root is not the verified row: computed apart
  EXPECT_EQ(fetches, 1u);
}

TEST(VulkanForward, AChainAskedUpFrontRunsInTheForwardFromTheVerifiedRow) {
  JF_VULKAN_DEVICE(device);
  expect_up_front_chain_from_the_verified_row(device, 7, 0);
  expect_up_front_chain_from_the_verified_row(device, 64, 64);
}

// Draft chains are kept and replayed like forwards: the chains after each step of a decode give the drafts
// of chains recorded every time, and most were replays.
TEST(VulkanForward, DraftChainsReplayWithTheSameDrafts) {
  JF_VULKAN_DEVICE(device);
  DraftModel replayed(device, 3), recorded(device, 3);
  recorded.fwd.set_replay(false);
  const std::vector<int32_t> toks = test::random_tokens(12, replayed.cfg.vocab_size, 4);
  auto chains = [&](vulkan::VulkanForward& f) {
    KvCache c = f.make_cache(64);
    std::vector<int32_t> all;
    for (size_t t = 0; t < toks.size(); t++) {
      SequenceInput in;
      in.set_causal(&c, std::vector<int32_t>{toks[t]}, SequenceInput::Logits::Last);
      in.draft_logits = true;
      std::vector<int32_t> d(4, -1);
      EXPECT_EQ(4, f.forward(in).chain(0, toks[(t + 1) % toks.size()], 4, d.data()));
      all.insert(all.end(), d.begin(), d.end());
    }
    return all;
  };
  const std::vector<int32_t> want = chains(recorded.fwd), got = chains(replayed.fwd);
  EXPECT_EQ(got, want);
  EXPECT_GT(std::set<int32_t>(want.begin(), want.end()).size(), 4u);  // drafts that vary, or the check is empty
  EXPECT_GE(replayed.fwd.replayed_chains(), 8u);  // (a few re-record: the arenas grow with the context)
  EXPECT_EQ(recorded.fwd.replayed_chains(), 0u);
}

// Each row's greedy token comes from the device (a greedy decoder need not read the row back): the argmax of
// every row of logits and draft logits, and still that after the host copy of a row is changed.
TEST(VulkanForward, GreedyTokensComeFromTheDevice) {
  JF_VULKAN_DEVICE(device);
  DraftModel m(device, 3);
  const int V = m.cfg.vocab_size;
  KvCache c = m.fwd.make_cache(64), o = m.fwd.make_cache(64);
  SequenceInput in, other;
  in.set_causal(&c, test::random_tokens(9, V, 2), SequenceInput::Logits::All);
  other.set_causal(&o, test::random_tokens(4, V, 3), SequenceInput::Logits::All);
  in.draft_logits = true;
  SequenceInput* both[] = {&other, &in};
  const ForwardResult l = m.fwd.forward(std::span<SequenceInput* const>(both, 2));
  for (int r = 0; r < 13; r++)
    for (bool draft : {false, true}) {
      if (draft && r < 4) continue;  // (the other sequence asked for no drafts)
      const float* row = draft ? l.draft_logits(r) : l.logits(r);
      ASSERT_NE(row, nullptr);
      const int32_t want = static_cast<int32_t>(argmax(row, V));
      auto pick = [&] { return draft ? l.draft_greedy(r) : l.greedy(r); };
      EXPECT_EQ(pick(), want);
      float* host = const_cast<float*>(row);  // the host's copy changed: the device's pick stands
      host[(want + 1) % V] = host[want] + 1.0f;
      EXPECT_EQ(pick(), want);
    }
}

// A greedy sequence (SequenceInput::need) gets its greedy tokens and no logits copied back: a row read anyway
// is fetched then, counted, with the bits a sequence that needed logits got; draft rows likewise.
TEST(VulkanForward, GreedySequencesCopyNoLogitsAndFetchWhatTheyRead) {
  JF_VULKAN_DEVICE(device);
  DraftModel m(device, 3);
  const int V = m.cfg.vocab_size;
  const std::vector<int32_t> toks = test::random_tokens(6, V, 2);
  auto forward = [&](SequenceInput::Need need, std::vector<float>* logits, std::vector<float>* drafts) {
    KvCache c = m.fwd.make_cache(64);
    SequenceInput in;
    in.need = need;
    in.set_causal(&c, toks, SequenceInput::Logits::All);
    in.draft_logits = true;
    const DeviceSyncs before = m.fwd.device_syncs();
    const ForwardResult res = m.fwd.forward(in);
    const DeviceSyncs after = m.fwd.device_syncs();
    EXPECT_EQ(after.submissions - before.submissions, 1u);
    std::vector<int32_t> picks;
    for (int r = 0; r < res.rows(); r++) picks.push_back(res.greedy(r));
    const uint64_t copied = after.bytes_to_host - before.bytes_to_host;
    *logits = test::all_logits(res);
    *drafts = test::draft_rows(res, res.rows());
    const DeviceSyncs read = m.fwd.device_syncs();
    EXPECT_EQ(read.extra_fetches - after.extra_fetches, need == SequenceInput::Need::Greedy ? 2u * toks.size() : 0u);
    EXPECT_EQ(read.submissions - after.submissions, read.extra_fetches - after.extra_fetches);
    return std::pair{picks, copied};
  };
  std::vector<float> want_logits, want_drafts, got_logits, got_drafts;
  const auto [want_picks, all_bytes] = forward(SequenceInput::Need::Logits, &want_logits, &want_drafts);
  const auto [picks, greedy_bytes] = forward(SequenceInput::Need::Greedy, &got_logits, &got_drafts);
  EXPECT_EQ(picks, want_picks);
  EXPECT_EQ(got_logits, want_logits);
  EXPECT_EQ(got_drafts, want_drafts);
  EXPECT_EQ(greedy_bytes, 2u * toks.size() * 4);  // each row's greedy token and greedy draft, no logits
  EXPECT_EQ(all_bytes, greedy_bytes + 2u * toks.size() * V * 4);
}

// JF_VULKAN_PROFILE=1: the forwards' device time by kernel, the same logits as without it.
TEST(VulkanForward, ErrorsNameTheProblem) {
  JF_VULKAN_DEVICE(device);
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // matrix units on a device without them, and an unknown JF_VULKAN_MATMUL, named
  const std::unique_ptr<Model> tiny = make_model(preset_config("tiny"), DType::F32, 1);
  if (!vulkan::Context(device).info().matrix_units) {
    const std::string units = message([&] { vulkan::VulkanForward f(device, tiny->config(), tiny->weights(), {}, vulkan::MatrixMath::MatrixUnits); });
    EXPECT_NE(units.find("has no fp16 matrix units"), std::string::npos) << units;
    const std::string member = message([&] { vulkan::VulkanForward f(device, tiny->config(), tiny->weights(), vulkan::parse_matmul_kernel("tiles-r64")); });
    EXPECT_NE(member.find("cannot run the matrix kernel tiles-r64"), std::string::npos) << member;
  }
  setenv("JF_VULKAN_TILE_ROWS", "48", 1);
  EXPECT_NE(message([&] { vulkan::VulkanForward f(device, tiny->config(), tiny->weights()); }).find("unknown tile rows '48' (use 16, 32 or 64)"),
            std::string::npos);
  unsetenv("JF_VULKAN_TILE_ROWS");
  EXPECT_NE(message([&] { vulkan::parse_matrix_math("tensor"); }).find("unknown matrix math 'tensor' (use fma, tiles or matrix-units)"),
            std::string::npos);
  // more memory than the device has, and a matrix larger than one binding: refused before any upload (the
  // data pointers are never read)
  const vulkan::Context probe(device);
  const uint64_t free_bytes = probe.free_device_memory(), layer_bytes = uint64_t{4096} * 4096 * 4 * 4 + uint64_t{2048} * 4096 * 4 * 3;
  ModelConfig big = preset_config("tiny");
  big.n_layers = static_cast<int>(free_bytes / layer_bytes + 2), big.dim = 4096, big.ffn_dim = 4096, big.n_heads = 32, big.n_kv_heads = 32, big.head_dim = 128, big.rope_dim = 128;
  big.vocab_size = 1000;
  ModelWeights w;
  static const float ones[1] = {1.0f};
  const uint8_t* fake = reinterpret_cast<const uint8_t*>(uintptr_t{1} << 40);
  auto matrix = [&](int64_t rows, int64_t cols) {
    WeightMatrix m;
    m.type = DType::F32, m.rows = rows, m.cols = cols, m.data = fake;
    fake += rows * cols * 4;
    return m;
  };
  w.tok_embd = matrix(big.vocab_size, big.dim), w.output = matrix(big.vocab_size, big.dim), w.output_norm = ones;
  for (int l = 0; l < big.n_layers; l++) {
    LayerWeights L;
    L.attn_norm = L.ffn_norm = ones;
    L.wq = matrix(4096, 4096), L.wk = matrix(4096, 4096), L.wv = matrix(4096, 4096), L.wo = matrix(4096, 4096);
    L.w_gate = matrix(2048, 4096), L.w_up = matrix(2048, 4096), L.w_down = matrix(4096, 2048);  // each < 128 MiB
    w.layers.push_back(L);
  }
  const std::string too_big = message([&] { vulkan::VulkanForward f(device, big, w); });
  EXPECT_NE(too_big.find("the model needs"), std::string::npos) << too_big;
  EXPECT_NE(too_big.find("free"), std::string::npos) << too_big;
  w.layers[0].wq = matrix(static_cast<int64_t>(probe.info().max_binding_bytes / (4096 * 4) + 1), 4096);  // past one binding
  w.layers.resize(1);
  big.n_layers = 1;
  const std::string binding = message([&] { vulkan::VulkanForward f(device, big, w); });
  EXPECT_NE(binding.find("binds at once"), std::string::npos) << binding;
  // a KV cache in host memory, or of another forward pass
  const std::unique_ptr<Model> m = make_model(preset_config("tiny"), DType::F32, 1);
  vulkan::VulkanForward f1(device, m->config(), m->weights()), f2(device, m->config(), m->weights());
  KvCache host(m->config(), 16), other = f2.make_cache(16);
  for (KvCache* c : {&host, &other}) {
    SequenceInput in;
    in.set_causal(c, std::vector<int32_t>{1}, SequenceInput::Logits::Last);
    EXPECT_NE(message([&] { f1.forward(in); }).find("not made by this device"), std::string::npos);
  }
  // device choice
  EXPECT_NE(message([&] { make_forward_pass(*m, "gpu"); }).find("unknown device 'gpu'"), std::string::npos);
  EXPECT_NE(message([&] { make_forward_pass(*m, "vulkan:99"); }).find("no device 99"), std::string::npos);
  std::string note;
  auto fwd = make_forward_pass(*m, "auto", &note);  // lavapipe is never chosen by auto
  if (vulkan::Context(device).info().software) {
    EXPECT_NE(dynamic_cast<Transformer*>(fwd.get()), nullptr);
    EXPECT_NE(note.find("running on the CPU"), std::string::npos) << note;
  }
}

}  // namespace
}  // namespace jf
