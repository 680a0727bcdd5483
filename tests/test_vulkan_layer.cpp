// A Vulkan layer's shape and the kernels its products run: what a layer records (dispatches, barriers, the
// profile by kernel), concatenated matrices giving the bits of separate ones, the family members `jf tune
// --kernels` chose being the ones a forward runs, and the objective that chooses them.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "base/error.h"
#include "vulkan/kernel_sweep.h"
#include "vulkan/vulkan_forward.h"
#include "vulkan_forward_support.h"
#include "vulkan_support.h"

namespace jf {
namespace {

using test::expect_bits;
using test::Logits;
using test::make_model;
using test::stepwise;

TEST(VulkanForward, ProfilesDeviceTimeByKernel) {
  JF_VULKAN_DEVICE(device);
  const std::unique_ptr<Model> m = make_model(preset_config("tiny"), DType::Q8_0, 5);
  const std::vector<int32_t> toks = test::random_tokens(3, m->config().vocab_size, 9);
  vulkan::VulkanForward plain(device, m->config(), m->weights());
  EXPECT_EQ(plain.take_profile(), "");
  ::setenv("JF_VULKAN_PROFILE", "1", 1);
  vulkan::VulkanForward profiled(device, m->config(), m->weights());
  ::unsetenv("JF_VULKAN_PROFILE");
  const Logits want = stepwise(plain, toks), got = stepwise(profiled, toks);
  for (size_t r = 0; r < toks.size(); r++) expect_bits(got[r], want[r], "step " + std::to_string(r));
  const std::string report = profiled.take_profile();
  for (const char* kernel : {"matmul_", "attention_f32", "rmsnorm", "all (3 forwards)", "a layer: ", "matrix kernels: "})
    EXPECT_NE(report.find(kernel), std::string::npos) << kernel << " in\n" << report;
  EXPECT_EQ(profiled.take_profile(), "");  // taken: the next report starts afresh
  // What a llama-shaped layer records (issue 54's target is 6 and 5): q/k/v as one product, its norm folded
  // in; attention with RoPE and the KV store folded in; the output projection; gate/up as one product; the
  // down projection with the GLU folded into its inputs.
  EXPECT_LE(profiled.layer_counts().dispatches, 5u);
  EXPECT_LE(profiled.layer_counts().barriers, 5u);
  EXPECT_GE(profiled.layer_counts().dispatches, 5u);  // (counted at all)
  // Attention in chunks (a GPU's default) too: the last chunk to finish folds them, no pass of its own.
  profiled.set_attention_chunk(64);
  ASSERT_EQ(profiled.attention_chunk(), 64u);
  const Logits chunked = stepwise(profiled, toks);
  EXPECT_LE(profiled.layer_counts().dispatches, 5u);
  EXPECT_LE(profiled.layer_counts().barriers, 5u);
  EXPECT_NE(profiled.take_profile().find("attention_split_f32"), std::string::npos);
  for (size_t r = 0; r < toks.size(); r++) EXPECT_NEAR(chunked[r][0], want[r][0], 1e-3f) << "step " << r;
  // With 4 rows a workgroup: a sequence's 5 rows run the 4-row kernel, its 3 rows the 2-row one, one row the
  // one-row kernel (the same bits, without the unused rows' registers).
  profiled.set_attention({64, 4});
  stepwise(profiled, toks);
  EXPECT_EQ(profiled.take_profile().find("attention_split_f32-r"), std::string::npos);
  for (const auto& [rows, kernel] : {std::pair{5, "attention_split_f32-r4"}, std::pair{3, "attention_split_f32-r2"}}) {
    KvCache c = profiled.make_cache(64);
    SequenceInput in;
    in.set_causal(&c, std::vector<int32_t>(static_cast<size_t>(rows), 1), SequenceInput::Logits::Last);
    profiled.forward(in);
    const std::string report = profiled.take_profile();
    EXPECT_NE(report.find(kernel), std::string::npos) << report;
  }
}

// q/k/v and gate/up uploaded concatenated, each one product whose outputs are split over their matrices, give
// the bits of the products apart (JF_VULKAN_FUSE=0), with the default kernels and with split and vec members,
// step by step; and they cut a layer's dispatches by three. Members with an even number of outputs a workgroup
// put the GLU in gate/up's epilogue (silu, and gemma's gelu), the others fold it into the down projection's
// inputs, as the products apart do: the same bits either way.
TEST(VulkanForward, ConcatenatedMatricesGiveTheBitsOfSeparateOnes) {
  JF_VULKAN_DEVICE(device);
  for (const char* preset : {"tiny", "gemma2-tiny"})
    for (DType t : {DType::F32, DType::Q8_0}) {
      const std::unique_ptr<Model> m = make_model(preset_config(preset), t, 7);
      const std::vector<int32_t> toks = test::random_tokens(6, m->config().vocab_size, 3);
      std::vector<std::optional<vulkan::MatmulKernel>> members{std::nullopt, test::some_split_kernels(device)[1],
                                                               vulkan::parse_matmul_kernel("split-wg64-o1-r4")};
      if (t == DType::Q8_0) members.push_back(vulkan::parse_matmul_kernel("vec-wg64-o2-r4"));
      for (const std::optional<vulkan::MatmulKernel>& k : members) {
        const std::string what = std::string(preset) + " " + dtype_name(t) + (k ? " " + k->name() : std::string(" default"));
        vulkan::VulkanForward fused(device, m->config(), m->weights(), k);
        ::setenv("JF_VULKAN_FUSE", "0", 1);
        vulkan::VulkanForward apart(device, m->config(), m->weights(), k);
        ::unsetenv("JF_VULKAN_FUSE");
        const Logits a = stepwise(fused, toks), b = stepwise(apart, toks);
        for (size_t r = 0; r < toks.size(); r++) expect_bits(a[r], b[r], what + " step " + std::to_string(r));
        EXPECT_EQ(fused.layer_counts().dispatches + 3, apart.layer_counts().dispatches) << what;
        const bool pairs = k && k->outputs % 2 == 0;  // (the default here: a thread per output)
        EXPECT_EQ(fused.glu_epilogues() > 0, pairs) << what;
        EXPECT_EQ(apart.glu_epilogues(), 0u) << what;
      }
    }
}

// The members `jf tune --kernels` keeps are the ones a forward runs: a choices file naming a split member for
// every shape gives the bits of that member forced on every matrix (not the default's, a thread per output
// on these small matrices), the profile names it, and a malformed file or a member the device cannot run is
// refused with the file named.
TEST(VulkanForward, RunsTheKernelsTuningChose) {
  JF_VULKAN_DEVICE(device);
  const std::unique_ptr<Model> m = make_model(preset_config("tiny"), DType::Q8_0, 5);
  const std::vector<int32_t> toks = test::random_tokens(3, m->config().vocab_size, 9);
  const vulkan::MatmulKernel member = vulkan::parse_matmul_kernel("split-wg128-o2-r4-pair");
  vulkan::VulkanForward forced(device, m->config(), m->weights(), member), plain(device, m->config(), m->weights());
  vulkan::KernelChoices choices;
  choices.device = forced.device().name, choices.driver = forced.device().driver;
  for (const vulkan::DeviceMatrix& w : forced.distinct_matrices()) choices.by_shape[{w.rows, w.cols, w.type}] = {member, {{1, 1e-5}}, {}};
  const std::string dir = ::testing::TempDir() + "jf_kernel_choices", path = dir + "/choices.json";
  choices.write(path);
  ::setenv("JF_VULKAN_KERNELS", path.c_str(), 1);
  ::setenv("JF_VULKAN_PROFILE", "1", 1);
  vulkan::VulkanForward tuned(device, m->config(), m->weights());
  ::unsetenv("JF_VULKAN_PROFILE");
  ::unsetenv("JF_VULKAN_KERNELS");
  EXPECT_NE(tuned.kernel_source().find(path), std::string::npos) << tuned.kernel_source();
  const vulkan::DeviceMatrix w0 = tuned.distinct_matrices()[0];
  EXPECT_EQ(tuned.kernel_for({w0.rows, w0.cols, w0.type}).name(), member.name());
  const Logits want = stepwise(forced, toks), got = stepwise(tuned, toks), other = stepwise(plain, toks);
  bool differs = false;
  for (size_t r = 0; r < toks.size(); r++) {
    expect_bits(got[r], want[r], "step " + std::to_string(r));
    differs = differs || std::memcmp(got[r].data(), other[r].data(), other[r].size() * 4) != 0;
  }
  EXPECT_TRUE(differs) << "the tuned forward has the default kernels' bits: the choices did not run";
  const std::string report = tuned.take_profile();  // (one-row steps: the member's one-row twin)
  EXPECT_NE(report.find(vulkan::dispatched_member(member, vulkan::MatrixMath::Fma, 1).name()), std::string::npos) << report;
  // A member this device cannot run, and a malformed file: one line naming the file.
  { std::ofstream(path) << "{\"device\": \"x\", \"driver\": \"y\", \"matrices\": [{\"n\": 1}]}"; }
  ::setenv("JF_VULKAN_KERNELS", path.c_str(), 1);
  try {
    vulkan::VulkanForward bad(device, m->config(), m->weights());
    ADD_FAILURE() << "a malformed choices file was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  ::setenv("JF_VULKAN_KERNELS", "split-wg64-o3-r8", 1);
  EXPECT_THROW(vulkan::VulkanForward(device, m->config(), m->weights()), Error);
  if (vulkan::Context(device).info().subgroup_shuffle) {  // K slices chosen for a matrix of K < 2N (q, k, v: 64 inputs)
    vulkan::KernelChoices sliced = choices;
    for (auto& [shape, choice] : sliced.by_shape) choice.kernel = vulkan::parse_matmul_kernel("vec-wg64-o1-r4-k2");
    sliced.write(path);
    ::setenv("JF_VULKAN_KERNELS", path.c_str(), 1);
    try {
      vulkan::VulkanForward bad(device, m->config(), m->weights());
      ADD_FAILURE() << "K slices were accepted for a short-K matrix";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("does not run a "), std::string::npos) << e.what();
    }
  }
  ::unsetenv("JF_VULKAN_KERNELS");
}

// A one-row product runs its member's one-row twin (the member compiled for R = 1: matmul_grid.h's
// dispatched_member), and a token decoded alone gets the bits it gets as a row of a prompt, which runs the
// R-row member: split members (shared-memory and subgroup sums) and a vec member, the profile naming the twin.
TEST(VulkanForward, OneRowProductsRunTheMembersOneRowTwin) {
  JF_VULKAN_DEVICE(device);
  const std::unique_ptr<Model> m = make_model(preset_config("tiny"), DType::Q8_0, 11);
  const std::vector<int32_t> toks = test::random_tokens(5, m->config().vocab_size, 4);
  std::vector<std::string> names = {"split-wg128-o2-r4-pair", "split-wg64-o1-r8", "vec-wg64-o2-r4"};
  if (vulkan::Context(device).info().subgroup_shuffle) names.push_back("split-wg64-o4-r4-sg"), names.push_back("vec-wg64-o1-r4-k2");  // (the down projection's K slices)
  for (const std::string& name : names) {
    const vulkan::MatmulKernel member = vulkan::parse_matmul_kernel(name);
    ::setenv("JF_VULKAN_PROFILE", "1", 1);
    vulkan::VulkanForward fwd(device, m->config(), m->weights(), member);
    ::unsetenv("JF_VULKAN_PROFILE");
    KvCache cache = fwd.make_cache(64, DType::F32);
    SequenceInput in;
    in.set_causal(&cache, toks, SequenceInput::Logits::All);
    const ForwardResult& prompt = fwd.forward(in);
    Logits rows;
    for (size_t r = 0; r < toks.size(); r++) rows.push_back(test::row_of(prompt, static_cast<int>(r)));
    EXPECT_EQ(fwd.one_row_twins(), 0u) << name << ": a prompt of " << toks.size() << " rows ran a one-row twin";
    const std::string prompt_report = fwd.take_profile();
    EXPECT_NE(prompt_report.find(name), std::string::npos) << prompt_report;
    const Logits steps = stepwise(fwd, toks);
    EXPECT_GT(fwd.one_row_twins(), 0u) << name;
    const std::string twin = vulkan::dispatched_member(member, vulkan::MatrixMath::Fma, 1).name(), report = fwd.take_profile();
    EXPECT_NE(twin.find("-r1"), std::string::npos) << twin;
    EXPECT_NE(report.find(twin), std::string::npos) << report;
    for (size_t r = 0; r < toks.size(); r++) expect_bits(steps[r], rows[r], name + " token " + std::to_string(r) + " alone");
  }
}

// A cached choice with twins by row count (qmm members, which give each other's bits) runs, for each product,
// the twin its row count names: a prompt of 5 rows the 64-row one, a step the one-row one (a 16-row qmm member
// on Q8_0, a vec -qmm member's one-row twin on Q4_K, Q5_K, Q3_K and IQ4_XS: the bandwidth-shaped kernel beside the
// tile), both in
// the profile; the logits are the bits of one qmm member forced on every matrix, prompt and steps alike.
void runs_the_twin_chosen_for_each_row_count(int device, const char* preset, DType type, const char* one_name,
                                             const char* forced_name) {
  SCOPED_TRACE(dtype_name(type) + " " + one_name);
  const std::unique_ptr<Model> m = make_model(preset_config(preset), type, 13);
  const std::vector<int32_t> toks = test::random_tokens(5, m->config().vocab_size, 6);
  const vulkan::MatmulKernel one = vulkan::parse_matmul_kernel(one_name), many = vulkan::parse_matmul_kernel("qmm-o32-r64");
  const std::string step_member = vulkan::dispatched_member(one, vulkan::MatrixMath::Fma, 1).name();
  vulkan::VulkanForward forced(device, m->config(), m->weights(), vulkan::parse_matmul_kernel(forced_name));
  if (one.qmm_order && !(forced.device().int_dot && forced.device().subgroup_shuffle)) return;  // (no -qmm members there)
  vulkan::KernelChoices choices;
  choices.device = forced.device().name, choices.driver = forced.device().driver;
  for (const vulkan::DeviceMatrix& w : forced.distinct_matrices())
    if (w.type == type) choices.by_shape[{w.rows, w.cols, w.type}] = {one, {{1, 1e-5}}, {{1, one}, {64, many}}};
  ASSERT_FALSE(choices.by_shape.empty());
  const std::string dir = ::testing::TempDir() + "jf_qmm_choices", path = dir + "/choices.json";
  choices.write(path);
  EXPECT_EQ(vulkan::KernelChoices::read(path, forced.device()).by_shape.begin()->second.by_rows.size(), 2u);  // (written and read)
  ::setenv("JF_VULKAN_KERNELS", path.c_str(), 1);
  ::setenv("JF_VULKAN_PROFILE", "1", 1);
  vulkan::VulkanForward tuned(device, m->config(), m->weights());
  ::unsetenv("JF_VULKAN_PROFILE");
  ::unsetenv("JF_VULKAN_KERNELS");
  KvCache cache = tuned.make_cache(64, DType::F32), forced_cache = forced.make_cache(64, DType::F32);
  SequenceInput in, forced_in;
  in.set_causal(&cache, toks, SequenceInput::Logits::All);
  forced_in.set_causal(&forced_cache, toks, SequenceInput::Logits::All);
  const ForwardResult& prompt = tuned.forward(in);
  Logits rows;
  for (size_t r = 0; r < toks.size(); r++) rows.push_back(test::row_of(prompt, static_cast<int>(r)));
  const ForwardResult& want = forced.forward(forced_in);
  for (size_t r = 0; r < toks.size(); r++) expect_bits(rows[r], test::row_of(want, static_cast<int>(r)), "prompt row " + std::to_string(r));
  EXPECT_GT(tuned.rows_twins(), 0u);
  const std::string prompt_report = tuned.take_profile();
  EXPECT_NE(prompt_report.find(many.name()), std::string::npos) << prompt_report;
  EXPECT_EQ(prompt_report.find(step_member), std::string::npos) << prompt_report;
  const Logits steps = stepwise(tuned, toks);
  const std::string step_report = tuned.take_profile();
  EXPECT_NE(step_report.find(step_member), std::string::npos) << step_report;
  for (size_t r = 0; r < toks.size(); r++) expect_bits(steps[r], rows[r], "token " + std::to_string(r) + " alone");
  // by_rows naming a member that is not a qmm one: refused with the file named.
  { std::ofstream(path) << "{\"device\": \"x\", \"driver\": \"y\", \"matrices\": [{\"n\": 64, \"k\": 64, \"type\": \"q8_0\", "
                           "\"kernel\": \"qmm-o16-r16\", \"seconds\": [], \"by_rows\": [[4, \"split-wg64-o1-r8\"]]}]}"; }
  try {
    vulkan::KernelChoices::read(path, forced.device());
    ADD_FAILURE() << "by_rows with a split member was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("qmm"), std::string::npos) << e.what();
  }
}

TEST(VulkanForward, RunsTheQmmTwinChosenForEachRowCount) {
  JF_VULKAN_DEVICE(device);
  runs_the_twin_chosen_for_each_row_count(device, "tiny", DType::Q8_0, "qmm-o16-r16", "qmm-o64-r32");
  for (const DType type : {DType::Q4_K, DType::Q5_K, DType::Q3_K, DType::IQ4_XS})
    runs_the_twin_chosen_for_each_row_count(device, "tiny-256", type, "vec-wg64-o2-r4-qmm", "qmm-o16-r16");
}

// What an untimed matrix runs: a thread per output below the split's K, else the member the H200 measured
// fastest of the candidates on a hardware GPU, the older one on a software device (lavapipe).
TEST(KernelSweep, UntimedMatricesRunTheDefaultsForTheirKindOfDevice) {
  EXPECT_TRUE(vulkan::default_matmul_kernel(128, 256, false).serial);
  EXPECT_EQ(vulkan::default_matmul_kernel(4096, 256, false).name(), "split-wg64-o2-r4");
  EXPECT_EQ(vulkan::default_matmul_kernel(4096, 2048, true).name(), "split-wg64-o4-r8");
  EXPECT_TRUE(vulkan::default_matmul_kernel(1024, 2048, true).serial);
}

// The sweep's objective: the least time at one row; members within 3% of it told apart by their time at more
// rows (a prompt's 512 counted an eighth; an untimed row count ignored). The choices merge into those cached
// for other shapes.
TEST(KernelSweep, ChoosesByDecodeTimeThenRowsCost) {
  const std::vector<int> rows = {1, 4, 512};
  const auto member = [](const char* name, std::vector<double> s) { return vulkan::MemberTimes{vulkan::parse_matmul_kernel(name), std::move(s), "", ""}; };
  std::vector<vulkan::MemberTimes> m = {member("split-wg64-o4-r8", {100, 400, 1600}), member("split-wg128-o2-r8", {102, 200, 800}),
                                        member("serial", {110, 100, 100})};
  EXPECT_EQ(vulkan::choose_member(m, rows), 1u);  // within 3% of the fastest at one row, and cheaper rows
  m[1].seconds[0] = 104;                          // no longer within 3%: the fastest at one row
  EXPECT_EQ(vulkan::choose_member(m, rows), 0u);
  m[1].seconds = {101, 300, NAN};  // 512 rows not timed for it: 300 against 400 + 1600 / 8
  EXPECT_EQ(vulkan::choose_member(m, rows), 1u);
  vulkan::SweepResult r;
  r.rows = rows;
  r.shapes.push_back({{64, 256, DType::Q4_K}, m, 1, SIZE_MAX, {}});
  vulkan::KernelChoices c;
  c.by_shape[{32, 512, DType::Q8_0}] = {vulkan::parse_matmul_kernel("serial"), {{1, 1e-6}}, {}};
  vulkan::record_choices(r, c);
  ASSERT_EQ(c.by_shape.size(), 2u);
  const auto& chosen = c.by_shape.at({64, 256, DType::Q4_K});
  EXPECT_EQ(chosen.kernel.name(), "split-wg128-o2-r8");
  EXPECT_EQ(chosen.seconds.size(), 2u);  // (the untimed 512 left out)
  EXPECT_TRUE(chosen.by_rows.empty());
}

// The qmm members give each other's bits, so they compete as one: the fastest of them at one row against the
// others, and, where that wins, the fastest of them at each row count runs it (recorded as by_rows). Where a
// member outside them is faster at one row, they are not chosen.
TEST(KernelSweep, QmmMembersCompeteAsOneWithTheFastestAtEachRowCount) {
  const std::vector<int> rows = {1, 4, 64};
  const auto member = [](const char* name, std::vector<double> s) { return vulkan::MemberTimes{vulkan::parse_matmul_kernel(name), std::move(s), "", ""}; };
  std::vector<vulkan::MemberTimes> m = {member("vec-wg64-o2-r4", {100, 300, 4000}), member("qmm-o16-r16", {101, 150, 900}),
                                        member("qmm-o64-r64", {130, 140, 200})};
  const auto twins = vulkan::choose_qmm_by_rows(m, rows);
  ASSERT_EQ(twins.size(), 3u);
  EXPECT_EQ(twins[0], (std::pair<int, size_t>{1, 1}));
  EXPECT_EQ(twins[1], (std::pair<int, size_t>{4, 2}));
  EXPECT_EQ(twins[2], (std::pair<int, size_t>{64, 2}));
  vulkan::SweepResult r;
  r.rows = rows;
  r.shapes.push_back({{64, 256, DType::Q8_0}, m, 1, SIZE_MAX, twins});
  vulkan::KernelChoices c;
  vulkan::record_choices(r, c);
  const auto& chosen = c.by_shape.at({64, 256, DType::Q8_0});
  EXPECT_EQ(chosen.kernel.name(), "qmm-o16-r16");
  ASSERT_EQ(chosen.by_rows.size(), 3u);
  EXPECT_EQ(chosen.member_for(1).name(), "qmm-o16-r16");
  EXPECT_EQ(chosen.member_for(2).name(), "qmm-o64-r64");
  EXPECT_EQ(chosen.member_for(512).name(), "qmm-o64-r64");
  EXPECT_EQ(chosen.seconds, (std::vector<std::pair<int, double>>{{1, 101}, {4, 140}, {64, 200}}));
  EXPECT_NE(vulkan::sweep_table(r).find("by rows (the same bits): M<=1 qmm-o16-r16, M<=4 qmm-o64-r64, beyond qmm-o64-r64"), std::string::npos)
      << vulkan::sweep_table(r);
  m[2].seconds = {130, 160, 1000};  // one qmm member the fastest at every row count: still kept as the twins
  ASSERT_EQ(vulkan::choose_qmm_by_rows(m, rows).size(), 3u);
  EXPECT_EQ(vulkan::choose_qmm_by_rows(m, rows)[2], (std::pair<int, size_t>{64, 1}));
  m[1].seconds[0] = 110;  // no qmm member within 3% of the fastest at one row: not chosen
  EXPECT_TRUE(vulkan::choose_qmm_by_rows(m, rows).empty());
  r.shapes[0] = {{64, 256, DType::Q8_0}, m, 0, SIZE_MAX, {}};  // (the table says what the twins would have cost)
  const std::string table = vulkan::sweep_table(r);
  EXPECT_NE(table.find("  qmm twins (not chosen) qmm-o16-r16"), std::string::npos) << table;
  EXPECT_NE(table.find("one row: +10.0% against the chosen"), std::string::npos) << table;
  // A vec -qmm member gives the qmm members' bits too: the fastest at one row, it serves as their one-row twin
  // (a plain -dot member, as fast, does not).
  m.push_back(member("vec-wg64-o2-r4-dot", {95, 300, 4000}));
  EXPECT_TRUE(vulkan::choose_qmm_by_rows(m, rows).empty());
  m.push_back(member("vec-wg64-o2-r4-qmm", {95, 320, 4100}));
  const auto with_vec = vulkan::choose_qmm_by_rows(m, rows);
  ASSERT_EQ(with_vec.size(), 3u);
  EXPECT_EQ(with_vec[0], (std::pair<int, size_t>{1, 4}));
  EXPECT_EQ(with_vec[2], (std::pair<int, size_t>{64, 1}));
}

}  // namespace
}  // namespace jf
