// The decisions of jf tune on synthetic cost curves and TPF tables, the config file, and a short real
// tuning on stories260K.
#include <algorithm>
#include <cmath>
#include <fstream>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/progress.h"
#include "model/loader.h"
#include "fake_model.h"
#include "test_support.h"
#include "tune/cost_chart.h"
#include "tune/select.h"
#include "tune/tuner.h"

namespace jf::tune {
namespace {

const std::vector<int> kRows = {1, 2, 4, 8, 16, 32};

// Compute-bound (a tiny model): every row costs as much as the first.
CostTable compute_bound() {
  CostTable t{{64}, kRows, {{}}};
  for (int m : kRows) t.seconds[0].push_back(1e-4 * m);
  return t;
}

// Memory-bound (a large model on a CPU): flat up to 16 rows, then growing; slower at a longer context.
CostTable memory_bound() {
  CostTable t{{64, 1024}, kRows, {{}, {}}};
  for (int m : kRows) {
    t.seconds[0].push_back(0.05 * (m <= 16 ? 1.0 + 0.005 * m : m / 14.0));
    t.seconds[1].push_back(1.5 * t.seconds[0].back());
  }
  return t;
}

TEST(CostTable, InterpolatesInRowsAndContext) {
  const CostTable t = memory_bound();
  EXPECT_DOUBLE_EQ(t.at(1, 64), t.seconds[0][0]);
  EXPECT_DOUBLE_EQ(t.at(3, 64), (t.seconds[0][1] + t.seconds[0][2]) / 2);
  EXPECT_DOUBLE_EQ(t.at(1, 544), 1.25 * t.seconds[0][0]);  // halfway between the contexts
  EXPECT_GT(t.at(64, 64), t.at(32, 64));                   // extrapolated past the last row count
  EXPECT_EQ(t.free_rows(0), 16);
  EXPECT_EQ(compute_bound().free_rows(0), 1);
}

TEST(Select, RuleFromCostPicksArOnComputeBoundAndAWideDraftOnMemoryBound) {
  std::string why;
  EXPECT_EQ(rule_from_cost(compute_bound(), &why), "ar") << why;
  const std::string wide = rule_from_cost(memory_bound(), &why);
  EXPECT_NE(wide, "ar") << why;
  EXPECT_NE(wide.rfind("lookahead", 0), std::string::npos) << wide;
  // A couple of free rows: the cheap drafter.
  CostTable two{{64}, {1, 2, 4}, {{1.0, 1.1, 2.0}}};
  EXPECT_EQ(rule_from_cost(two, &why), "pld:draft-max=2");
  // A disturbed measurement at one context does not hide free rows seen at another.
  CostTable noisy{{64, 256}, {1, 2, 4, 8, 16}, {{1.0, 1.6, 1.7, 1.8, 3.0}, {1.2, 1.22, 1.25, 1.3, 1.35}}};
  EXPECT_NE(rule_from_cost(noisy, &why).rfind("lookahead", 0), std::string::npos) << why;
  // A draft layer: its trees, sized to the free rows, where rows are free; pld where two are.
  EXPECT_EQ(rule_from_cost(memory_bound(), &why, true), "jacobi:tree=16") << why;
  EXPECT_EQ(rule_from_cost(two, &why, true), "pld:draft-max=2");
}

std::vector<Candidate> table() {
  // spec, measured, tpf, rows/forward, lossless
  return {{"ar", true, 1.0, 1.0, true}, {"pld:draft-max=4", true, 1.3, 2.0, true},
          {"lookahead:W=8:N=4:G=8", true, 2.0, 30.0, true}, {"jacobi:block=4", true, 1.1, 3.0, true},
          {"broken", true, 3.0, 2.0, false}, {"multiblock:block=4:K=2", false}};
}

TEST(Select, PredictionsFollowTheCostCurve) {
  std::vector<Candidate> c = table();
  predict(compute_bound(), 64, c);
  // Compute-bound: every extra row costs a full forward, so ar predicts fastest among the lossless.
  EXPECT_GT(c[0].predicted_tps, c[1].predicted_tps);
  EXPECT_GT(c[0].predicted_tps, c[2].predicted_tps);
  EXPECT_EQ(c[5].predicted_tps, 0);  // not measured
  predict(memory_bound(), 64, c);
  EXPECT_GT(c[1].predicted_tps, c[0].predicted_tps);  // 2 rows nearly free: pld's TPF wins
  const std::vector<size_t> v = to_verify(c, 2);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(c[v[0]].spec, "pld:draft-max=4");  // 1.3 / t(2) beats 2.0 / t(30) and jacobi
  for (size_t i : v) EXPECT_TRUE(c[i].lossless && c[i].spec != "ar");
}

TEST(Select, ChoosesTheFastestVerifiedLosslessConfigurationOrAr) {
  std::vector<Candidate> c = table();
  for (Candidate& x : c) x.verified = x.measured;
  c[0].measured_tps = 100, c[1].measured_tps = 130, c[2].measured_tps = 90, c[3].measured_tps = 101;
  c[4].measured_tps = 500;  // fastest but not lossless: never chosen
  std::string why;
  EXPECT_EQ(choose(c, 0.02, &why), "pld:draft-max=4");
  EXPECT_NE(why.find("1.30x"), std::string::npos) << why;
  c[1].measured_tps = 101;  // within the margin of ar
  EXPECT_EQ(choose(c, 0.02, &why), "ar") << why;
  c[1].verified = c[2].verified = c[3].verified = false;
  EXPECT_EQ(choose(c, 0.02, &why), "ar");
}

TEST(Select, GridCoversEveryGreedyDecoderFamily) {
  const std::vector<std::string> g = tuning_grid();
  for (const char* family : {"ar", "jacobi:", "lookahead:", "pld:", "multiblock:"})
    EXPECT_TRUE(std::any_of(g.begin(), g.end(), [&](const std::string& s) { return s.rfind(family, 0) == 0; })) << family;
  for (const std::string& s : g) EXPECT_NO_THROW(parse_decoder_spec(s, DecoderOptions{}).validate(true)) << s;
}

// Where rows are free (a GPU below its knee) the grid adds Figure 7's wide configurations, only those whose
// rows fit 4 x the free rows; on a CPU it stays narrow.
TEST(Select, GridWidensWhereRowsAreFree) {
  const std::vector<std::string> narrow = tuning_grid(4), gpu = tuning_grid(16), wide = tuning_grid(128);
  EXPECT_EQ(narrow, tuning_grid());
  auto has = [](const std::vector<std::string>& g, const std::string& s) { return std::find(g.begin(), g.end(), s) != g.end(); };
  EXPECT_FALSE(has(narrow, "jacobi:block=16"));
  EXPECT_TRUE(has(gpu, "jacobi:block=16") && has(gpu, "multiblock:block=16:K=3:r=0.5") && has(gpu, "jacobi:block=64"));
  EXPECT_FALSE(has(gpu, "multiblock:block=16:K=4:r=0.5:pool=8"));  // 80 rows: past 4 x 16
  EXPECT_TRUE(has(wide, "multiblock:block=64:K=4:r=0.5:pool=8"));
  EXPECT_GT(wide.size(), gpu.size());
  EXPECT_GT(gpu.size(), narrow.size());
  for (const std::string& s : wide) EXPECT_NO_THROW(parse_decoder_spec(s, DecoderOptions{}).validate(true)) << s;
  // With a draft layer, draft trees: a small priced one anywhere, whole ones up to the free rows.
  const std::vector<std::string> cpu_trees = tuning_grid(4, true), gpu_trees = tuning_grid(32, true);
  EXPECT_FALSE(has(narrow, "jacobi:tree=8"));
  EXPECT_TRUE(has(cpu_trees, "jacobi:tree=8") && !has(cpu_trees, "jacobi:tree=16"));
  EXPECT_TRUE(has(gpu_trees, "jacobi:tree=16") && has(gpu_trees, "jacobi:tree=32") && !has(gpu_trees, "jacobi:tree=64"));
  for (const std::string& s : gpu_trees) EXPECT_NO_THROW(parse_decoder_spec(s, DecoderOptions{}).validate(true)) << s;
}

// Every row count is timed in each round, so a busy spell cannot fall on one row count alone: timed one
// after another, the one-row forwards all fell in it and two rows came out as cheap as one.
TEST(CostTable, MeasurementIsFairToEveryRowCountWhenTheLoadChanges) {
  test::BusyThenQuiet fwd;
  const CostTable t = measure_cost(fwd, {0}, {1, 2, 4, 8}, 0.02);
  const auto& s = t.seconds[0];
  EXPECT_NEAR(s[1] / s[0], 2.0, 0.5);
  EXPECT_NEAR(s[3] / s[0], 8.0, 2.0);
}

TEST(CostChart, OneMarkPerMeasuredPointAndAKneePerContext) {
  const CostTable t = memory_bound();
  const viz::LineChart c = cost_chart(t, "cost");
  const std::string svg = viz::line_chart_svg(c);
  size_t marks = 0;
  for (size_t p = svg.find("class=\"mark\""); p != std::string::npos; p = svg.find("class=\"mark\"", p + 1)) marks++;
  EXPECT_EQ(marks, 2 * kRows.size());
  EXPECT_EQ(c.x_marks, (std::vector<double>{16, 16}));
}

size_t marks_in(const std::string& svg) {
  size_t marks = 0;
  for (size_t p = svg.find("class=\"mark\""); p != std::string::npos; p = svg.find("class=\"mark\"", p + 1)) marks++;
  return marks;
}

// Two devices' curves, each divided by its own one-row cost at the first context.
TEST(CostChart, RelativeCurvesDivideByTheirOwnOneRow) {
  CostTable gpu = memory_bound(), cpu = memory_bound();
  for (auto& row : gpu.seconds)
    for (double& s : row) s *= 0.01;  // a faster device with the same shape
  cpu.seconds[0].back() *= 3;  // the CPU's largest forward costs 3x more
  const viz::LineChart c = relative_cost_chart({{"gpu", gpu}, {"cpu", cpu}}, "rows");
  ASSERT_EQ(c.series.size(), 2u);
  EXPECT_EQ(c.series[0].x.size(), kRows.size());
  EXPECT_DOUBLE_EQ(c.series[0].y[0], 1.0);
  EXPECT_NEAR(c.series[0].y.back(), memory_bound().seconds[0].back() / memory_bound().seconds[0][0], 1e-9);
  EXPECT_NEAR(c.series[1].y.back(), 3 * c.series[0].y.back(), 1e-9);
  EXPECT_EQ(marks_in(viz::line_chart_svg(c)), 2 * kRows.size());
}

// A point per decoder at (TPF, speedup); the guides y = TPF and y = 0.85 TPF are dashed lines, not points.
TEST(SpeedupChart, OnePointPerDecoderAndDashedGuides) {
  const viz::LineChart c = speedup_chart({{"ar", 1, 1}, {"jacobi", 1.8, 1.5}, {"multiblock", 2.4, 1.7}}, "s");
  ASSERT_EQ(c.series.size(), 5u);
  EXPECT_EQ(c.series[1].x, (std::vector<double>{1.8}));
  EXPECT_EQ(c.series[1].y, (std::vector<double>{1.5}));
  EXPECT_TRUE(c.series[3].reference && c.series[4].reference);
  EXPECT_DOUBLE_EQ(c.series[4].y.back(), 0.85 * c.series[4].x.back());
  const std::string svg = viz::line_chart_svg(c);
  EXPECT_EQ(marks_in(svg), 3u);
  EXPECT_NE(svg.find("stroke-dasharray=\"6,4\""), std::string::npos);
}

TEST(TuneConfig, BadFilesAreErrors) {
  test::TempDir dir("tune");
  EXPECT_THROW(read_tune_config(dir / "missing.json"), Error);
  const std::string bad = R"({"format":"jf-tune-1","decoder":"warp-drive"})";
  write_file_atomic(dir / "bad.json", bad.data(), bad.size());
  EXPECT_THROW(read_tune_config(dir / "bad.json"), Error);
  const std::string other = R"({"decoder":"ar"})";
  write_file_atomic(dir / "other.json", other.data(), other.size());
  EXPECT_THROW(read_tune_config(dir / "other.json"), Error);
}

TEST(ModelKey, DependsOnContents) {
  test::TempDir dir("key");
  const std::string a = "aaaa", b = "aaab";
  write_file_atomic(dir / "a", a.data(), a.size());
  write_file_atomic(dir / "b", b.data(), b.size());
  EXPECT_NE(model_key(dir / "a"), model_key(dir / "b"));
  EXPECT_EQ(model_key(dir / "a"), model_key(dir / "a"));
  EXPECT_NE(cache_path("k", "machine 1"), cache_path("k", "machine 2"));
}

// A configuration tuned on a GPU is never picked up by --decoder auto on the CPU, nor the other way round.
TEST(MachineKey, TellsTheDeviceApart) {
  EXPECT_EQ(machine_key(), machine_key("cpu"));
  EXPECT_NE(machine_key("cpu"), machine_key("vulkan:0 (NVIDIA H200)"));
  EXPECT_NE(machine_key("vulkan:0 (NVIDIA H200)"), machine_key("vulkan:1 (llvmpipe (LLVM 15.0.6, 256 bits))"));
}

TEST(Progress, TextShowsCountRateAndEta) {
  EXPECT_EQ(cli::format_duration(65), "1:05");
  EXPECT_EQ(cli::format_duration(3723), "1:02:03");
  EXPECT_EQ(cli::format_duration(-1), "?");
  // 10 of 40 in 5 s: 2/s, 30 left -> 15 s.
  EXPECT_EQ(cli::progress_text(10, 40, 5.0, "x", 8), "[##......] 10/40  2.00/s  ETA 0:15  x");
  EXPECT_EQ(cli::progress_text(0, 40, 5.0, "", 0), "0/40  0.00/s  ETA ?");
  EXPECT_EQ(cli::progress_text(40, 40, 8.0, "", 4), "[####] 40/40  5.00/s  ETA 0:00");
}

// A real tuning with a small budget: the tiny model is compute-bound, so the result is ar or a cheap
// drafter, and the config round-trips.
TEST(Tune, StoriesWithATinyBudget) {
  JF_SHARED_PATH(path, "models/stories260K/stories260K.gguf");
  LoadedModel lm = load_model(path);
  Session s(*lm.model, 512);
  GenerationConfig gen;
  gen.eos_ids = {lm.tokenizer->eos()};
  std::vector<std::vector<int32_t>> prompts = {lm.tokenizer->encode("Once upon a time", true, false),
                                               lm.tokenizer->encode("The cat sat", true, false)};
  TuneOptions o;
  o.budget_seconds = 3;
  o.max_new_tokens = 24;
  int calls = 0, last_done = -1, last_total = 0;
  const TuneResult r = tune(s, prompts, gen, DecoderOptions{}, o, [&](int d, int t, const std::string&) {
    calls++, last_done = d, last_total = t;
  });
  EXPECT_GT(calls, 5);
  EXPECT_EQ(last_done, last_total);
  ASSERT_FALSE(r.cost.empty());
  EXPECT_TRUE(r.candidates[0].measured && r.candidates[0].verified && r.candidates[0].spec == "ar");
  for (const Candidate& c : r.candidates)
    if (c.measured) {
      EXPECT_TRUE(c.lossless) << c.spec;  // every greedy decoder is lossless
    }
  // ar, or a drafter whose forwards stay narrow (a wide draft cannot pay where rows are not free).
  for (const Candidate& c : r.candidates)
    if (c.spec == r.decoder) {
      EXPECT_LE(c.rows_per_forward, 3.0) << r.decoder << ": " << r.why;
    }
  test::TempDir dir("tune");
  const std::string json = tune_config_json(r, TuneConfig{}, o);
  write_file_atomic(dir / "c.json", json.data(), json.size());
  EXPECT_EQ(read_tune_config(dir / "c.json").decoder, r.decoder);
}

}  // namespace
}  // namespace jf::tune
