// Jacobi trajectories and packing: collected states are real Jacobi states ending in the AR output;
// collection resumes and shards; noise, schedules, packed layout, positions and NC / NC-IC masks on
// hand-made examples.
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "base/mapped_file.h"
#include "fake_model.h"
#include "model/random_model.h"
#include "model_helpers.h"
#include "train/packing.h"
#include "train/trajectory.h"
#include "test_support.h"

namespace jf {
namespace {

using test::temp_path;

std::vector<int32_t> text_for_oracle(int n, int vocab) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; i++) t.push_back(static_cast<int32_t>((i * 7 + (i / 5) * 3) % vocab));
  return t;
}

TEST(Trajectories, StatesAreJacobiStatesEndingAtTheArOutput) {
  const int V = 40, n = 8;
  auto text = text_for_oracle(300, V);
  test::FakeModel fake(V, test::oracle_rule(text, V));
  Session s(fake, 256);
  std::vector<std::vector<int32_t>> prompts = {std::vector<int32_t>(text.begin(), text.begin() + 6),
                                               std::vector<int32_t>(text.begin(), text.begin() + 11)};
  const std::string path = temp_path("traj.jsonl");
  std::remove(path.c_str());
  CollectOptions opt;
  opt.block = n;
  opt.max_new_tokens = 40;
  opt.context_size = 256;
  CollectSummary sum = collect_trajectories(fake, prompts, opt, path);
  EXPECT_EQ(sum.prompts, 2);
  auto recs = read_trajectories(path);
  ASSERT_EQ(recs.size(), 2u);
  for (const TrajectoryRecord& r : recs) {
    // AR output for the same prompt.
    GenerationConfig cfg;
    cfg.max_new_tokens = 40;
    GenerationResult ar = ArDecoder().generate(s, r.prompt, cfg);
    EXPECT_EQ(r.tokens, ar.tokens);
    const std::vector<int32_t> full = r.full();
    ASSERT_GE(r.blocks.size(), 4u);
    for (const TrajectoryBlock& b : r.blocks) {
      EXPECT_EQ(b.fixed, std::vector<int32_t>(full.begin() + b.start, full.begin() + b.start + n));
      EXPECT_EQ(b.states.front()[0], b.fixed[0]);  // the block's first token is known when it starts
      int prev_correct = 0;
      for (const auto& st : b.states) {  // the correct prefix never shrinks
        const int c = first_mismatch(st, b.fixed);
        EXPECT_GE(c, prev_correct);
        prev_correct = c;
      }
      if (b.start > static_cast<int64_t>(r.prompt.size()) - 1) {
        EXPECT_EQ(b.start, r.blocks.front().start + n * (&b - &r.blocks.front()));
      }
    }
  }
  std::remove(path.c_str());
}

// The block in which the model emits EOS is recorded: text up to EOS, then EOS, padded with EOS — also when EOS
// falls in the block's last slot (nothing to pad); EOS right after a complete block leaves that block whole.
TEST(Trajectories, TheBlockHoldingEosIsKept) {
  const int V = 41, n = 8, eos = 40;
  for (int slot : {6, 7, 8}) {  // blocks start at 5, 13, 21; EOS at index 21 + slot
    SCOPED_TRACE(slot);
    auto text = text_for_oracle(300, 40);
    text[21 + slot] = eos;
    test::FakeModel fake(V, test::oracle_rule(text, V));
    const std::string path = temp_path("traj_eos.jsonl");
    std::remove(path.c_str());
    CollectOptions opt;
    opt.block = n;
    opt.max_new_tokens = 40;
    opt.eos_ids = {eos};
    opt.context_size = 256;
    collect_trajectories(fake, {std::vector<int32_t>(text.begin(), text.begin() + 6)}, opt, path);
    auto recs = read_trajectories(path);
    ASSERT_EQ(recs.size(), 1u);
    const TrajectoryRecord& r = recs[0];
    EXPECT_EQ(r.stop, "eos");
    EXPECT_EQ(r.tokens, std::vector<int32_t>(text.begin() + 6, text.begin() + 21 + slot));
    ASSERT_EQ(r.blocks.size(), 3u);
    const TrajectoryBlock& b = r.blocks.back();
    EXPECT_EQ(b.start, 21);
    const int want_eos = slot < n ? slot : -1;
    EXPECT_EQ(b.eos, want_eos);
    std::vector<int32_t> want(text.begin() + 21, text.begin() + 21 + std::min(slot, n));
    want.resize(n, eos);
    EXPECT_EQ(b.fixed, want);
    for (const auto& st : b.states) EXPECT_EQ(static_cast<int>(st.size()), n);
    EXPECT_EQ(r.blocks[0].eos, -1);
    // Packing keeps it as the last block of its sequence.
    PackOptions po;
    uint64_t rs = 1;
    auto seqs = pack_record(r, po, &rs);
    ASSERT_EQ(seqs.size(), 1u);
    EXPECT_EQ(seqs[0].blocks(), 3);
    EXPECT_EQ(seqs[0].eos, want_eos);
    EXPECT_EQ(seqs[0].valid(2), std::min(slot + 1, n));
    EXPECT_EQ(seqs[0].valid(1), n);
    EXPECT_EQ(PackedSequence::from_json(seqs[0].to_json()).eos, want_eos);
    std::remove(path.c_str());
  }
}

TEST(Trajectories, ResumeSkipsCompletedAndDropsACutLine) {
  const int V = 30;
  auto text = text_for_oracle(200, V);
  test::FakeModel fake(V, test::oracle_rule(text, V));
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 6; i++) prompts.emplace_back(text.begin() + i, text.begin() + i + 5);
  const std::string path = temp_path("resume.jsonl");
  std::remove(path.c_str());
  CollectOptions opt;
  opt.block = 4;
  opt.max_new_tokens = 16;
  opt.context_size = 128;
  opt.parallel = 4;  // lines still go out in prompt order
  opt.shards = 2;
  opt.shard = 0;
  EXPECT_EQ(collect_trajectories(fake, prompts, opt, path).prompts, 3);  // ids 0, 2, 4
  // Simulate an interruption in the middle of writing the next line.
  {
    std::string text_now = read_text_file(path);
    text_now += "{\"id\": 1, \"n\": 4, \"prom";
    write_file_atomic(path, text_now.data(), text_now.size());
  }
  opt.shard = 1;
  CollectSummary second = collect_trajectories(fake, prompts, opt, path);
  EXPECT_EQ(second.prompts, 3);  // ids 1, 3, 5; the cut line is gone
  opt.shards = 1, opt.shard = 0;
  CollectSummary third = collect_trajectories(fake, prompts, opt, path);
  EXPECT_EQ(third.prompts, 0);
  EXPECT_EQ(third.skipped, 6);
  auto recs = read_trajectories(path);
  std::vector<int64_t> ids;
  for (auto& r : recs) ids.push_back(r.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  std::remove(path.c_str());
}

// Prompts decoded together (really: forwards carry several) write the same file as one at a time: the real
// model's batch invariance, and lines in prompt order whichever generation finishes first.
TEST(Trajectories, ThePromptsInFlightDoNotChangeTheFile) {
  std::unique_ptr<Model> model = random_model(preset_config("tiny"), DType::F32, 5);
  const int V = model->config().vocab_size;
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 9; i++) prompts.push_back(test::random_tokens(2 + 5 * (i % 4), V, 40 + i));
  CollectOptions opt;
  opt.block = 4;
  opt.max_new_tokens = 12 + 3 * 4;
  opt.context_size = 128;
  opt.eos_ids = {test::random_tokens(1, V, 3)[0]};  // some prompts end early
  std::string files[2];
  for (int k = 0; k < 2; k++) {
    opt.parallel = k == 0 ? 1 : 4;
    const std::string path = temp_path("parallel" + std::to_string(k) + ".jsonl");
    std::remove(path.c_str());
    test::CountingForward fwd(*model);
    EXPECT_EQ(collect_trajectories(fwd, prompts, opt, path).prompts, 9);
    EXPECT_EQ(fwd.most_sequences, opt.parallel);  // the prompts really share forwards
    files[k] = read_text_file(path);
    std::vector<int64_t> ids;
    for (const TrajectoryRecord& r : read_trajectories(path)) ids.push_back(r.id);
    EXPECT_EQ(ids, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
    std::remove(path.c_str());
  }
  EXPECT_EQ(files[0], files[1]);
}

TEST(Packing, NoiseRatioAndSchedules) {
  std::vector<int32_t> fixed = {1, 2, 3, 4};
  EXPECT_EQ(noise_ratio(fixed, fixed), 0.0);
  EXPECT_EQ(noise_ratio({1, 2, 9, 9}, fixed), 0.5);
  EXPECT_EQ(noise_ratio({9, 2, 3, 4}, fixed), 1.0);
  PackOptions o;  // targets linspace(0, 1, 5): 0, 0.25, 0.5, 0.75, 1
  uint64_t rs = 1;
  EXPECT_EQ(schedule_target(o, 5, 0, &rs), 0.0);
  EXPECT_EQ(schedule_target(o, 5, 3, &rs), 0.75);
  EXPECT_EQ(schedule_target(o, 5, 4, &rs), 1.0);
  EXPECT_EQ(schedule_target(o, 5, 6, &rs), 0.25);
  EXPECT_EQ(schedule_target(o, 1, 3, &rs), 0.0);
  o.schedule = NoiseSchedule::Reverse;
  EXPECT_EQ(schedule_target(o, 5, 0, &rs), 1.0);
  EXPECT_EQ(schedule_target(o, 5, 4, &rs), 0.0);
  o.schedule = NoiseSchedule::Random;
  for (int k = 0; k < 20; k++) {
    double t = schedule_target(o, 5, k, &rs);
    EXPECT_TRUE(t == 0 || t == 0.25 || t == 0.5 || t == 0.75 || t == 1.0);
  }
  // The window fits the response unless fixed.
  o.window = 16;
  EXPECT_EQ(schedule_window(o, 8), 8);
  EXPECT_EQ(schedule_window(o, 40), 16);
  o.fit_window = false;
  EXPECT_EQ(schedule_window(o, 8), 16);
}

// A response of `blocks` blocks of n = 4 whose trajectories hold a state of every noise level.
TrajectoryRecord all_noise_record(int blocks) {
  TrajectoryRecord r;
  r.n = 4;
  r.prompt = {1, 2};
  for (int i = 2; i < 4 * blocks + 2; i++) r.tokens.push_back(100 + i);
  const std::vector<int32_t> full = r.full();
  for (int k = 0; k < blocks; k++) {
    TrajectoryBlock b;
    b.start = 1 + 4 * k;
    b.fixed.assign(full.begin() + b.start, full.begin() + b.start + 4);
    for (int m = 0; m <= 4; m++) {  // first mismatch m: noise (4 - m) / 4
      std::vector<int32_t> st = b.fixed;
      for (int i = m; i < 4; i++) st[i] = 99;
      b.states.push_back(st);
    }
    r.blocks.push_back(b);
  }
  return r;
}

std::vector<double> packed_noise(const TrajectoryRecord& r, const PackOptions& o) {
  uint64_t rs = o.seed;
  std::vector<double> out;
  for (const PackedSequence& p : pack_record(r, o, &rs))
    for (int fm : p.first_mismatch) out.push_back(double(p.n - fm) / p.n);
  return out;
}

TEST(Packing, ScheduleCoversTheWholeWindowPerResponse) {
  TrajectoryRecord r = all_noise_record(5);
  PackOptions o;  // window 16, fitted to the 5 blocks
  EXPECT_EQ(packed_noise(r, o), (std::vector<double>{0, 0.25, 0.5, 0.75, 1.0}));
  o.schedule = NoiseSchedule::Reverse;
  EXPECT_EQ(packed_noise(r, o), (std::vector<double>{1.0, 0.75, 0.5, 0.25, 0}));
  o.schedule = NoiseSchedule::Linear;
  o.window = 2;  // cycles: 0, 1, 0, 1, 0
  EXPECT_EQ(packed_noise(r, o), (std::vector<double>{0, 1.0, 0, 1.0, 0}));
  o.window = 16;
  o.fit_window = false;  // targets 0 .. 4/15: never above 0.25 in 5 blocks (the old problem)
  for (double x : packed_noise(r, o)) EXPECT_LE(x, 0.25);
}

// A hand-made record: prompt [10, 11, 12], n = 2, two blocks.
TrajectoryRecord toy_record() {
  TrajectoryRecord r;
  r.id = 0, r.n = 2;
  r.prompt = {10, 11, 12};
  r.tokens = {20, 21, 22, 23};  // full text: 10 11 12 20 21 22 23; block 0 = [12, 20] at 2, block 1 = [21, 22] at 4
  TrajectoryBlock b0;
  b0.start = 2;
  b0.states = {{12, 99}, {12, 20}};
  b0.fixed = {12, 20};
  TrajectoryBlock b1;
  b1.start = 4;
  b1.states = {{21, 98}, {21, 22}};
  b1.fixed = {21, 22};
  r.blocks = {b0, b1};
  return r;
}

TEST(Packing, LayoutPositionsAndStateChoice) {
  PackOptions o;
  o.window = 2;  // targets 0 for block 0, 1 for block 1 (closest state: noise 0.5)
  uint64_t rs = 1;
  auto seqs = pack_record(toy_record(), o, &rs);
  ASSERT_EQ(seqs.size(), 1u);
  const PackedSequence& p = seqs[0];
  EXPECT_EQ(p.context_len, 2);
  // [10 11] [noisy0: 12 20 (noise 0)] [clean0: 12 20] [noisy1: 21 98 (noise 0.5)] [clean1: 21 22]
  EXPECT_EQ(p.tokens, (std::vector<int32_t>{10, 11, 12, 20, 12, 20, 21, 98, 21, 22}));
  EXPECT_EQ(p.positions, (std::vector<int32_t>{0, 1, 2, 3, 2, 3, 4, 5, 4, 5}));
  EXPECT_EQ(p.first_mismatch, (std::vector<int>{2, 1}));
  auto back = PackedSequence::from_json(p.to_json());
  EXPECT_EQ(back.tokens, p.tokens);
  EXPECT_EQ(back.positions, p.positions);
}

std::vector<std::string> mask_rows(const PackedSequence& p) {
  VisibilityMask m;
  p.build_mask(m);
  std::vector<std::string> rows;
  for (int i = 0; i < m.size(); i++) {
    std::string r;
    for (int j = 0; j < m.size(); j++) r += m.get(i, j) ? '1' : '.';
    rows.push_back(r);
  }
  return rows;
}

TEST(Packing, NoiseConditionedMasks) {
  PackOptions o;
  o.window = 2;
  uint64_t rs = 1;
  PackedSequence p = pack_record(toy_record(), o, &rs)[0];
  //                 ctx   n0    c0    n1    c1
  const std::vector<std::string> nc = {
      "1.........",  // ctx 0
      "11........",  // ctx 1
      "111.......",  // noisy0[0]
      "1111......",  // noisy0[1]
      "11..1.....",  // clean0[0]
      "11..11....",  // clean0[1]
      "1111..1...",  // noisy1[0]: context + earlier NOISY block + itself
      "1111..11..",  // noisy1[1]
      "11..11..1.",  // clean1[0]: context + earlier clean block
      "11..11..11",  // clean1[1]
  };
  EXPECT_EQ(mask_rows(p), nc);
  p.mask = MaskKind::CleanContext;
  std::vector<std::string> clean = nc;
  clean[6] = "11..111...";  // noisy1 sees the earlier CLEAN block instead
  clean[7] = "11..1111..";
  EXPECT_EQ(mask_rows(p), clean);
  p.mask = MaskKind::NCIC;  // both blocks in one noise window (w = 2): the same as NC
  EXPECT_EQ(mask_rows(p), nc);
}

// A cap on context noise: a noisy block noisier than the cap is seen clean by later noisy blocks.
TEST(Packing, ContextNoiseCapShowsNoisyContextBlocksClean) {
  PackOptions o;
  o.window = 2;
  uint64_t rs = 1;
  PackedSequence p = pack_record(toy_record(), o, &rs)[0];
  p.first_mismatch[0] = 1;  // block 0 half noise (its packed state is the fixed point; the mask reads only this)
  const std::vector<std::string> nc = mask_rows(p);
  ASSERT_EQ(p.noise(0), 0.5);
  p.context_noise_cap = p.noise(0);  // at the cap: still seen noisy
  EXPECT_EQ(mask_rows(p), nc);
  p.context_noise_cap = p.noise(0) / 2;  // above it: noisy1 sees clean0, as under the clean-context mask
  PackedSequence clean = p;
  clean.mask = MaskKind::CleanContext;
  EXPECT_EQ(mask_rows(p), mask_rows(clean));
  EXPECT_NE(mask_rows(p), nc);
  // The cap travels with the packed sequence.
  EXPECT_EQ(PackedSequence::from_json(p.to_json()).context_noise_cap, p.context_noise_cap);
  o.context_noise_cap = 0.25;
  rs = 1;
  EXPECT_EQ(pack_record(toy_record(), o, &rs)[0].context_noise_cap, 0.25);
}

// NC-IC: noisy within a noise window, clean across windows. Context 1, n = 1, three blocks, w = 2.
TEST(Packing, NcIcIsNoisyWithinAWindowCleanAcross) {
  PackedSequence p;
  p.n = 1, p.context_len = 1, p.window = 2;
  p.tokens = {1, 2, 2, 3, 3, 4, 4};
  p.positions = {0, 1, 1, 2, 2, 3, 3};
  p.first_mismatch = {0, 0, 0};
  p.mask = MaskKind::NCIC;
  //                       c n0 c0 n1 c1 n2 c2
  EXPECT_EQ(mask_rows(p), (std::vector<std::string>{"1......",
                                                    "11.....",
                                                    "1.1....",
                                                    "11.1...",    // n1: same window as n0 -> noisy n0
                                                    "1.1.1..",
                                                    "1.1.11.",    // n2: next window -> clean c0, c1
                                                    "1.1.1.1"}));
  p.block0 = 1;  // the sequence starts at the response's block 1: windows {1} | {2, 3}
  EXPECT_EQ(mask_rows(p), (std::vector<std::string>{"1......",
                                                    "11.....",
                                                    "1.1....",
                                                    "1.11...",    // n1 (block 2): c0 (block 1, earlier window)
                                                    "1.1.1..",
                                                    "1.11.1.",    // n2 (block 3): c0, and n1 of its window
                                                    "1.1.1.1"}));
  p.mask = MaskKind::CleanContext;
  EXPECT_EQ(mask_rows(p)[5], "1.1.11.");
  EXPECT_THROW(PackedSequence::from_json(R"({"tokens": [1, 2, 2], "positions": [0, 1, 1], "context_len": 1, "n": 1,
                                            "first_mismatch": [0], "mask": "nc-ic"})"), Error);
}

TEST(Packing, LongResponsesSplitWithCleanContext) {
  TrajectoryRecord r = toy_record();
  PackOptions o;
  o.window = 2;
  o.max_len = 7;  // context 2 + one block pair (4) fits, two do not
  uint64_t rs = 1;
  auto seqs = pack_record(r, o, &rs);
  ASSERT_EQ(seqs.size(), 2u);
  EXPECT_EQ(seqs[0].blocks(), 1);
  EXPECT_EQ(seqs[1].blocks(), 1);
  // The second sequence's context is the clean text before block 1, cut to max_len - 2n = 3 tokens.
  const std::vector<int32_t> ctx(seqs[1].tokens.begin(), seqs[1].tokens.begin() + seqs[1].context_len);
  EXPECT_EQ(ctx, (std::vector<int32_t>{11, 12, 20}));
  EXPECT_EQ(seqs[1].positions[seqs[1].context_len], seqs[1].context_len);
  o.max_len = 3;
  EXPECT_THROW(pack_record(r, o, &rs), Error);
}

TEST(Packing, MalformedInputsAreErrors) {
  EXPECT_THROW(TrajectoryRecord::from_json("{\"id\": 1}"), Error);
  EXPECT_THROW(TrajectoryRecord::from_json("not json"), Error);
  EXPECT_THROW(PackedSequence::from_json("{\"tokens\": [1], \"positions\": [], \"context_len\": 1, \"n\": 2, \"first_mismatch\": [], \"mask\": \"nc\"}"), Error);
}

}  // namespace
}  // namespace jf
