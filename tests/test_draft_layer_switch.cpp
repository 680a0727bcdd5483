// Draft work only where it pays: the cost model learns what the draft layer adds to a forward apart from
// the rows' cost, the switch follows the better way and keeps probing the other, and on the shipped code
// model with its draft file a costly layer is skipped (forwards run without it, output still `ar`'s) while a
// cheap one runs and buys tokens per forward.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "decode/decoder.h"
#include "decode/draft_layer_switch.h"
#include "decode/options.h"
#include "decode/session.h"
#include "model/draft_file.h"
#include "model/loader.h"

namespace jf {
namespace {

TEST(RowCostModel, LearnsTheDraftOverheadApartFromTheCurve) {
  RowCostModel m;
  EXPECT_DOUBLE_EQ(m.draft_overhead(), 0.0);  // optimistic before any drafting forward
  m.record(2, 3.0e-3, true);                  // no plain forward yet to compare with: ignored
  EXPECT_DOUBLE_EQ(m.draft_overhead(), 0.0);
  for (int i = 0; i < 20; i++) {
    m.record(1, 1.0e-3);
    m.record(3, 1.6e-3);
    m.record(1, 1.5e-3, true);  // +50% with the layer
    m.record(3, 2.4e-3, true);  // 1.6 ms of rows, +50%
  }
  EXPECT_NEAR(m.draft_overhead(), 0.5, 0.02);
  EXPECT_NEAR(m.relative(3), 1.6, 0.02);  // the drafting forwards did not move the rows' curve
  m.set_curve({{1, 2.0e-3}, {8, 2.0e-3}});
  for (int i = 0; i < 20; i++) m.record(4, 5.0e-3, true);  // against the fixed curve's 2 ms: +150%
  EXPECT_NEAR(m.draft_overhead(), 1.5, 0.02);
  m.set_draft_overhead(0.1);
  EXPECT_DOUBLE_EQ(m.draft_overhead(), 0.1);
}

// Probes come further apart while they change nothing (a CPU where the layer never pays would otherwise
// spend a layer and a chain on every kProbe-th forward), and a flip starts them again at kProbe.
TEST(DraftLayerSwitch, FollowsTheBetterWayAndProbesTheOtherLessOftenWhileItHolds) {
  DraftLayerSwitch sw;
  std::vector<int> probes;  // the forwards that ran the layer
  for (int i = 1; i <= 1504; i++)
    if (sw.choose(1.0, 2.0)) probes.push_back(i);
  EXPECT_EQ(probes, (std::vector<int>{32, 96, 224, 480, 992, 1504}));  // 32 apart, doubling to kMaxProbe
  std::vector<int> skipped;  // now the layer wins: followed at once, and probed kProbe forwards on
  for (int i = 1; i <= 2 * DraftLayerSwitch::kProbe; i++)
    if (!sw.choose(3.0, 2.0)) skipped.push_back(i);
  EXPECT_EQ(skipped, std::vector<int>{DraftLayerSwitch::kProbe});
}

struct CodeModel {
  CodeModel() : lm(load_model(JF_SOURCE_DIR "/models/pycode-ar-q8_0.gguf")) {
    attach_draft_file(*lm.model, JF_SOURCE_DIR "/models/pycode-ar-q8_0.draft.gguf");
  }
  LoadedModel lm;
};

GenerationResult run(Session& s, const std::string& spec, const std::vector<int32_t>& prompt, int n) {
  DecoderOptions o = parse_decoder_spec(spec, DecoderOptions{});
  GenerationConfig cfg;
  cfg.max_new_tokens = n;
  o.validate(true);
  return make_decoder(o)->generate(s, prompt, cfg);
}

TEST(DraftLayerSwitch, SkipsACostlyLayerAndRunsACheapOne) {
  CodeModel m;
  ASSERT_TRUE(m.lm.model->config().draft_layer);
  const std::vector<int32_t> prompt = m.lm.tokenizer->encode("def quicksort(items):\n", true, false);
  for (const char* spec : {"jacobi:block=16", "multiblock:block=16"}) {
    Session s(*m.lm.model, 512);
    s.row_cost().set_curve({{1, 1.0}, {64, 1.0}});  // rows free: only the layer's cost decides
    const GenerationResult ar = run(s, "ar", prompt, 192);
    s.row_cost().set_draft_overhead(0.0);
    const GenerationResult cheap = run(s, spec, prompt, 192);
    s.row_cost().set_draft_overhead(20.0);  // the layer costs 21 forwards: never worth it
    const GenerationResult costly = run(s, spec, prompt, 192);
    EXPECT_EQ(cheap.tokens, ar.tokens) << spec;
    EXPECT_EQ(costly.tokens, ar.tokens) << spec;
    // Cheap: the layer runs on nearly every forward (not on the probes, nor while the rows' own predictions
    // are still tried at their optimistic prior); costly: on nearly none.
    const int64_t cheap_without = cheap.stats.counter("forwards_without_draft_layer");
    const int64_t costly_with = costly.stats.n_forwards - costly.stats.counter("forwards_without_draft_layer");
    std::printf("%s: without the layer on %lld of %lld forwards when cheap; with it on %lld of %lld when costly\n", spec,
                static_cast<long long>(cheap_without), static_cast<long long>(cheap.stats.n_forwards),
                static_cast<long long>(costly_with), static_cast<long long>(costly.stats.n_forwards));
    EXPECT_LE(cheap_without, cheap.stats.n_forwards / 4) << spec;
    EXPECT_LE(costly_with, costly.stats.n_forwards / 8) << spec;
    EXPECT_GT(cheap.stats.tpf(), 1.3 * costly.stats.tpf()) << spec << ": the layer's drafts bought nothing";
  }
}

}  // namespace
}  // namespace jf
