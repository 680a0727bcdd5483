// Attention in fixed chunks of visible slots on the device (JF_VULKAN_ATTENTION=split-C,
// shaders/attention_split.comp: the last chunk to finish folds), over contexts of several chunks: the same bits
// whatever the batch (all rows at once, row by row, beside another sequence, a tree) and whatever the rows a
// workgroup takes (-r2, -r4: rows sharing their key and value reads), close to the whole-row kernel and the
// CPU, for f32 and f16 caches and query groups of 1, 2 and 4; and a bad setting refused. (Every architecture
// with one chunk: test_vulkan_forward.cpp's VulkanArch, also with 4 rows a workgroup.)
#include <cmath>
#include <cstdlib>

#include <fstream>

#include "base/error.h"
#include "vulkan/attention_sweep.h"
#include "vulkan/matmul_family.h"
#include "vulkan/vulkan_forward.h"
#include "vulkan_forward_support.h"
#include "vulkan_support.h"

namespace jf {
namespace {

using test::expect_bits;
using test::row_of;

constexpr int kTokens = 150;  // three chunks of 64 (the last one short)

float relative_error(const std::vector<float>& want, const std::vector<float>& got) {
  float scale = 1.0f, worst = 0.0f;
  for (size_t i = 0; i < want.size(); i++) scale = std::max(scale, std::fabs(want[i])), worst = std::max(worst, std::fabs(want[i] - got[i]));
  return worst / scale;
}

// The logits of rows 140..149 of `toks`: the prefix in one forward, then those rows (a) together, (b) one by
// one, (c) beside another sequence's prefill.
std::vector<std::vector<float>> last_rows(ForwardPass& f, const std::vector<int32_t>& toks, DType kv, int how) {
  KvCache c = f.make_cache(256, kv), other = f.make_cache(256, kv);
  SequenceInput in, io;
  in.set_causal(&c, std::vector<int32_t>(toks.begin(), toks.begin() + 140), SequenceInput::Logits::None);
  f.forward(in);
  std::vector<std::vector<float>> out;
  if (how == 1) {
    for (int r = 140; r < kTokens; r++) {
      in.set_causal(&c, std::vector<int32_t>{toks[static_cast<size_t>(r)]}, SequenceInput::Logits::Last);
      out.push_back(row_of(f.forward(in), 0));
    }
    return out;
  }
  in.set_causal(&c, std::vector<int32_t>(toks.begin() + 140, toks.end()), SequenceInput::Logits::All);
  io.set_causal(&other, std::vector<int32_t>(toks.begin(), toks.begin() + 100), SequenceInput::Logits::Last);
  SequenceInput* both[] = {&io, &in};
  const ForwardResult l = how == 2 ? f.forward(std::span<SequenceInput* const>(both, 2)) : f.forward(in);
  for (int r = 0; r < 10; r++) out.push_back(row_of(l, r + (how == 2 ? 1 : 0)));
  return out;
}

// Every row's logits of an 8-row tree after the first 140 tokens of `toks`: siblings and cousins, so rows a
// workgroup takes together see different slots at the same place in their lists (their own rows' keys).
std::vector<std::vector<float>> tree_rows(ForwardPass& f, const std::vector<int32_t>& toks, DType kv) {
  KvCache c = f.make_cache(256, kv);
  SequenceInput in;
  in.set_causal(&c, std::vector<int32_t>(toks.begin(), toks.begin() + 140), SequenceInput::Logits::None);
  f.forward(in);
  const int parent[8] = {-1, 0, 0, 1, 2, 3, 4, 1};
  in.reset_rows(&c, 8);
  for (int i = 0; i < 8; i++) {
    in.tokens[i] = toks[static_cast<size_t>(141 + i)];
    in.positions[i] = parent[i] < 0 ? 140 : in.positions[parent[i]] + 1;
    for (int j = i; j >= 0; j = parent[j]) in.mask.set(i, j);
    in.logit_rows.push_back(i);
  }
  const ForwardResult l = f.forward(in);
  std::vector<std::vector<float>> out;
  for (int r = 0; r < 8; r++) out.push_back(row_of(l, r));
  return out;
}

TEST(VulkanAttention, ChunksGiveTheSameBitsInEveryBatchAndCloseToTheWholeRow) {
  JF_VULKAN_DEVICE(device);
  for (const char* preset : {"tiny", "llama3-tiny", "phi3-tiny"}) {  // query groups of 2, 4 and 1
    ModelConfig cfg = preset_config(preset);
    const std::unique_ptr<Model> m = test::make_model(cfg, DType::F32, 17);
    const std::vector<int32_t> toks = test::random_tokens(kTokens, cfg.vocab_size, 3);
    vulkan::VulkanForward whole(device, m->config(), m->weights()), split(device, m->config(), m->weights());
    for (DType kv : {DType::F32, DType::F16}) {
      const std::string what = std::string(preset) + " kv " + dtype_name(kv);
      split.set_attention_chunk(64);
      ASSERT_EQ(split.attention_chunk(), 64u);
      const auto ref = last_rows(split, toks, kv, 0);
      std::vector<std::vector<float>> tree;  // (with one row a workgroup)
      for (uint32_t rows : {1u, 2u, 4u}) {
        split.set_attention({64, rows});
        ASSERT_EQ(split.attention(), (vulkan::AttentionChoice{64, rows})) << what;
        for (int how : {0, 1, 2}) {
          if (rows == 1 && how == 0) continue;  // (the reference)
          const auto got = last_rows(split, toks, kv, how);
          for (size_t r = 0; r < ref.size(); r++)
            expect_bits(got[r], ref[r], what + " rows " + std::to_string(rows) + " way " + std::to_string(how) + " row " + std::to_string(140 + r));
        }
        if (rows == 1) tree = tree_rows(split, toks, kv);
        const auto got = tree_rows(split, toks, kv);
        for (size_t r = 0; r < tree.size(); r++) expect_bits(got[r], tree[r], what + " rows " + std::to_string(rows) + " tree row " + std::to_string(r));
      }
      split.set_attention_chunk(64);
      const auto want = last_rows(whole, toks, kv, 0);
      for (size_t r = 0; r < ref.size(); r++) EXPECT_LE(relative_error(want[r], ref[r]), 1e-4f) << what << " row " << 140 + r;
    }
  }
}

// The last 4 of `toks`' rows after the rest (in the cache), all at once, or one at a time.
std::vector<std::vector<float>> after_long_context(ForwardPass& f, KvCache& c, const std::vector<int32_t>& toks, bool together) {
  const int n = static_cast<int>(toks.size()) - 4;
  c.truncate(n);
  SequenceInput in;
  std::vector<std::vector<float>> out;
  if (together) {
    in.set_causal(&c, std::vector<int32_t>(toks.begin() + n, toks.end()), SequenceInput::Logits::All);
    const ForwardResult l = f.forward(in);
    for (int r = 0; r < 4; r++) out.push_back(row_of(l, r));
  } else {
    for (int r = n; r < n + 4; r++) {
      in.set_causal(&c, std::vector<int32_t>{toks[static_cast<size_t>(r)]}, SequenceInput::Logits::Last);
      out.push_back(row_of(f.forward(in), 0));
    }
  }
  return out;
}

// A context of more chunks than a workgroup has threads (65 chunks of 64): the fold takes them a block of 64
// at a time; the same bits whatever the batch and the rows a workgroup, close to the whole-row kernel on the
// same cache.
TEST(VulkanAttention, AFoldOfMoreChunksThanThreads) {
  JF_VULKAN_DEVICE(device);
  ModelConfig cfg = preset_config("tiny");
  cfg.context_length = 4160, cfg.n_layers = 1;  // (a layer: the prompt's attention is most of the test's time)
  const std::unique_ptr<Model> m = test::make_model(cfg, DType::F32, 23);
  const std::vector<int32_t> toks = test::random_tokens(4104, cfg.vocab_size, 4);
  vulkan::VulkanForward f(device, m->config(), m->weights());
  KvCache c = f.make_cache(4160);
  SequenceInput in;
  f.set_attention_chunk(1024);
  for (int done = 0; done < 4100; done += 1025) {  // (the prompt, in 4 forwards)
    in.set_causal(&c, std::vector<int32_t>(toks.begin() + done, toks.begin() + done + 1025), SequenceInput::Logits::None);
    f.forward(in);
  }
  f.set_attention_chunk(64);
  const auto ref = after_long_context(f, c, toks, true);
  const auto alone = after_long_context(f, c, toks, false);
  f.set_attention({64, 4});
  const auto grouped = after_long_context(f, c, toks, true);
  f.set_attention({0, 1});
  const auto want = after_long_context(f, c, toks, true);
  for (size_t r = 0; r < 4; r++) {
    expect_bits(alone[r], ref[r], "one at a time, row " + std::to_string(r));
    expect_bits(grouped[r], ref[r], "4 rows a workgroup, row " + std::to_string(r));
    EXPECT_LE(relative_error(want[r], ref[r]), 1e-4f) << "row " << r;
  }
}

// jf tune --kernels times attention too: every choice at a context on the device, one chosen by the least time
// at one row (within 3%, the least at 16 rows), kept in the device's choices file, which every forward then
// reads (JF_VULKAN_ATTENTION overrides it); a bad value in the file names the file.
TEST(VulkanAttention, TuningChoosesAndEveryForwardRunsTheChoice) {
  using vulkan::AttentionTimes;
  using vulkan::AttentionChoice;
  EXPECT_EQ(vulkan::choose_attention({AttentionTimes{{0, 1}, 1.00, 5.0}, AttentionTimes{{256, 1}, 1.01, 2.0}, AttentionTimes{{1024, 1}, 0.99, 4.0}}), 1u);
  EXPECT_EQ(vulkan::choose_attention({AttentionTimes{{0, 1}, 1.00, 5.0}, AttentionTimes{{256, 4}, 1.10, 2.0}}), 0u);
  JF_VULKAN_DEVICE(device);
  const std::unique_ptr<Model> m = test::make_model(preset_config("tiny"), DType::F32, 2);
  vulkan::VulkanForward fwd(device, m->config(), m->weights());
  fwd.set_attention_chunk(64);
  const vulkan::AttentionSweep s = vulkan::sweep_attention(fwd, 150, 1);
  EXPECT_EQ(s.context, 150);
  ASSERT_EQ(s.options.size(), 8u);  // whole, 64, 256, 1024, and 64 and 256 with 2 and 4 rows a workgroup
  EXPECT_EQ(s.options.back().kernel, (AttentionChoice{256, 4}));
  for (const AttentionTimes& t : s.options) EXPECT_GT(t.one_row, 0.0) << vulkan::attention_name(t.kernel);
  EXPECT_EQ(s.chosen, vulkan::choose_attention(s.options));
  EXPECT_EQ(fwd.attention_chunk(), 64u);  // (left as it was)
  EXPECT_NE(vulkan::attention_table(s).find("chosen"), std::string::npos);

  vulkan::KernelChoices c;
  c.device = fwd.device().name, c.driver = fwd.device().driver, c.attention = AttentionChoice{256, 2};
  const std::string path = ::testing::TempDir() + "jf_attention_choices.json";
  c.write(path);
  EXPECT_EQ(vulkan::KernelChoices::read(path, fwd.device()).attention, std::optional<AttentionChoice>(AttentionChoice{256, 2}));
  setenv("JF_VULKAN_KERNELS", path.c_str(), 1);
  EXPECT_EQ(vulkan::VulkanForward(device, m->config(), m->weights()).attention(), (AttentionChoice{256, 2}));
  setenv("JF_VULKAN_ATTENTION", "whole", 1);
  EXPECT_EQ(vulkan::VulkanForward(device, m->config(), m->weights()).attention_chunk(), 0u);
  unsetenv("JF_VULKAN_ATTENTION");
  { std::ofstream(path) << R"({"device": "x", "driver": "y", "matrices": [], "attention": "split-7"})"; }
  try {
    vulkan::VulkanForward bad(device, m->config(), m->weights());
    ADD_FAILURE() << "a bad attention choice was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  unsetenv("JF_VULKAN_KERNELS");
}

TEST(VulkanAttention, BadSettingsAreRefused) {
  JF_VULKAN_DEVICE(device);
  const std::unique_ptr<Model> m = test::make_model(preset_config("tiny"), DType::F32, 1);
  for (const char* bad : {"split-100", "split-", "split-0", "halves", "split-64x", "split-64-r3", "split-64-r", "split-64-r4x", "split-64-4"}) {
    setenv("JF_VULKAN_ATTENTION", bad, 1);
    EXPECT_THROW(vulkan::VulkanForward(device, m->config(), m->weights()), Error) << bad;
  }
  setenv("JF_VULKAN_ATTENTION", "split-128", 1);
  EXPECT_EQ(vulkan::VulkanForward(device, m->config(), m->weights()).attention_chunk(), 128u);
  setenv("JF_VULKAN_ATTENTION", "split-128-r4", 1);
  EXPECT_EQ(vulkan::VulkanForward(device, m->config(), m->weights()).attention(), (vulkan::AttentionChoice{128, 4}));
  unsetenv("JF_VULKAN_ATTENTION");
}

}  // namespace
}  // namespace jf
