// The decode kernels keep their register arrays in registers, on any GPU: once their fixed-count loops are
// unrolled (as a GPU's compiler unrolls [[unroll]] loops; here spirv-opt, with each family member's
// specialization constants), no array of a thread's own (accumulators, loaded weights, a batch of keys) is
// indexed by a value known only at run time. A GPU keeps such an array in memory (NVIDIA's local memory: a load
// and a store for every accumulator update), a slowdown lavapipe never shows, its SIMD lanes indexing
// registers; a loop with an early exit (break, continue) or a run-time bound around an array, or a table read
// at a computed index, is what puts one there. No Vulkan device is needed: the shaders are the embedded SPIR-V.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "test_support.h"
#include "vulkan/matmul_family.h"
#include "vulkan/matmul_grid.h"
#include "vulkan/shader_blobs.h"

using namespace jf;
using namespace jf::vulkan;

namespace {

// Accesses to function-local arrays (Function storage class) with an index that is not a constant, in a
// SPIR-V module: the arrays a GPU would keep in memory.
int dynamic_local_array_accesses(const std::vector<uint32_t>& w) {
  enum : uint32_t { TypeArray = 28, TypePointer = 32, Constant = 43, ConstantNull = 46, Variable = 59, AccessChain = 65,
                    InBoundsAccessChain = 66, FunctionStorage = 7 };
  std::set<uint32_t> constants, arrays, array_pointers, into_arrays;  // into_arrays: pointers into a local array
  int dynamic = 0;
  for (size_t i = 5; i < w.size();) {
    const uint32_t n = w[i] >> 16, op = w[i] & 0xffff;
    if (n == 0 || i + n > w.size()) throw std::runtime_error("malformed SPIR-V");
    const uint32_t* a = &w[i + 1];
    if (op == TypeArray) arrays.insert(a[0]);
    if (op == TypePointer && a[1] == FunctionStorage && arrays.count(a[2])) array_pointers.insert(a[0]);
    if (op == Constant || op == ConstantNull) constants.insert(a[1]);
    if (op == Variable && array_pointers.count(a[0])) into_arrays.insert(a[1]);
    if ((op == AccessChain || op == InBoundsAccessChain) && into_arrays.count(a[2])) {
      into_arrays.insert(a[1]);
      for (uint32_t k = 3; k + 1 < n; k++) dynamic += constants.count(a[k]) ? 0 : 1;
    }
    i += n;
  }
  return dynamic;
}

std::vector<uint32_t> read_words(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<uint32_t> w(bytes.size() / 4);
  std::memcpy(w.data(), bytes.data(), w.size() * 4);
  return w;
}

const ShaderBlob& blob(const std::string& name) {
  for (size_t i = 0; i < kShaderCount; i++)
    if (name == kShaders[i].name) return kShaders[i];
  throw std::runtime_error("no embedded shader " + name);
}

// Int-to-float conversions in a SPIR-V module, each vector's components counted (a GPU converts each).
int int_to_float_conversions(const std::vector<uint32_t>& w) {
  enum : uint32_t { TypeVector = 23, ConvertSToF = 111, ConvertUToF = 112 };
  std::map<uint32_t, int> components;  // vector type -> its component count
  int found = 0;
  for (size_t i = 5; i < w.size();) {
    const uint32_t n = w[i] >> 16, op = w[i] & 0xffff;
    if (n == 0 || i + n > w.size()) throw std::runtime_error("malformed SPIR-V");
    if (op == TypeVector) components[w[i + 1]] = static_cast<int>(w[i + 3]);
    if (op == ConvertSToF || op == ConvertUToF) found += components.count(w[i + 1]) ? components[w[i + 1]] : 1;
    i += n;
  }
  return found;
}

// The module with `constants` as its specialization constants, frozen, and its loops unrolled (empty when
// spirv-opt fails).
std::vector<uint32_t> unrolled(const std::string& shader, const std::vector<uint32_t>& constants, int job) {
  const std::string in = testing::TempDir() + "jf_regs_" + std::to_string(getpid()) + "_" + std::to_string(job) + ".spv", out = in + ".opt";
  const ShaderBlob& b = blob(shader);
  std::ofstream(in, std::ios::binary).write(reinterpret_cast<const char*>(b.words), static_cast<std::streamsize>(b.count * 4));
  std::string spec;
  for (size_t i = 0; i < constants.size(); i++) {
    if (i) spec += ' ';
    spec += std::to_string(i) + ":" + std::to_string(constants[i]);
  }
  const std::string unroll = "--ccp --loop-unroll --ccp --simplify-instructions --eliminate-dead-branches --merge-blocks "
                             "--eliminate-dead-code-aggressive --loop-unroll --ccp --eliminate-dead-code-aggressive";
  const std::string cmd = "spirv-opt " + (spec.empty() ? "" : "'--set-spec-const-default-value=" + spec + "' ") +
                          "--freeze-spec-const --fold-spec-const-op-composite " + unroll + " '" + in + "' -o '" + out + "' 2>/dev/null";
  const int rc = std::system(cmd.c_str());
  std::vector<uint32_t> words = rc == 0 ? read_words(out) : std::vector<uint32_t>{};
  std::remove(in.c_str()), std::remove(out.c_str());
  return words;
}

bool have_spirv_opt() { return std::system("command -v spirv-opt >/dev/null 2>&1") == 0; }

#define REQUIRE_SPIRV_OPT()                                                                           \
  do {                                                                                                \
    if (!have_spirv_opt()) {                                                                          \
      if (::jf::test::in_ci()) FAIL() << "CI=true but spirv-opt is missing (Debian: spirv-tools)";    \
      GTEST_SKIP() << "spirv-opt missing (Debian: spirv-tools)";                                      \
    }                                                                                                 \
  } while (0)

struct Case {
  std::string shader, label;
  std::vector<uint32_t> constants;
};

// A GPU of the H200's kind: subgroups of 32 with shuffles, int8 dot products, fp16 and int8 matrix units,
// 48 KiB of shared memory.
DeviceInfo gpu() {
  DeviceInfo d;
  d.name = "a GPU", d.subgroup_size = 32, d.subgroup_shuffle = true, d.int_dot = true, d.matrix_units = true, d.int8_matrix_units = true;
  d.shared_memory = 48 * 1024;
  return d;
}

// Every FMA member (and its one-row twin) on Q4_K; on every other type, the members of 64 threads and 8 rows
// (and their twins), which cover each variant of the shader's code (outputs 1 / 4, fours / pairs / folded,
// shared-memory and subgroup sums, fp32 and int8 vec); the matrix units' tiles members on every type; every
// qmm and vec -qmm member on each of its types.
// (matmul_serial runs only rows shorter than a GPU's split, 256; the FMA tiles stand in for matrix units in tests.)
std::vector<Case> matmul_cases() {
  const DType types[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                         DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS};
  std::vector<Case> cases;
  for (const MatmulKernel& k : matmul_family(gpu())) {
    if (k.serial) continue;
    for (DType t : types) {
      const bool covering = k.tile_rows || k.qmm || k.qmm_order || (k.wg == 64 && k.rows == 8 && (k.outputs == 1 || k.outputs == 4));
      if (!member_runs_type(k, t) || (t != DType::Q4_K && !covering)) continue;
      const MatmulKernel twin = dispatched_member(k, MatrixMath::Fma, 1);
      for (const MatmulKernel& m : twin == k ? std::vector<MatmulKernel>{k} : std::vector<MatmulKernel>{k, twin})
        cases.push_back({matmul_shader(m, MatrixMath::Fma, t), m.name() + " " + dtype_name(t), matmul_constants(m, MatrixMath::Fma)});
    }
  }
  return cases;
}

// count(module) of each case's unrolled module (-1 where spirv-opt fails), run on two threads.
std::vector<int> count_unrolled(const std::vector<Case>& cases, int (*count)(const std::vector<uint32_t>&)) {
  std::vector<int> found(cases.size(), 0);
  std::atomic<size_t> next{0};
  auto work = [&](int job) {
    for (size_t i; (i = next++) < cases.size();) {
      const std::vector<uint32_t> w = unrolled(cases[i].shader, cases[i].constants, job);
      found[i] = w.empty() ? -1 : count(w);
    }
  };
  std::thread other(work, 1);
  work(0);
  other.join();
  return found;
}

// The cases' dynamic accesses; failures named.
std::vector<std::string> offenders(const std::vector<Case>& cases) {
  const std::vector<int> found = count_unrolled(cases, dynamic_local_array_accesses);
  std::vector<std::string> bad;
  for (size_t i = 0; i < cases.size(); i++)
    if (found[i] != 0)
      bad.push_back(cases[i].label + " (" + cases[i].shader + "): " +
                    (found[i] < 0 ? "spirv-opt failed" : std::to_string(found[i]) + " run-time indices into local arrays"));
  return bad;
}

}  // namespace

TEST(DynamicLocalArrays, FoundInAModuleThatIndexesAnArrayAtRunTime) {
  REQUIRE_SPIRV_OPT();
  // The check itself: matmul_serial's fixed-count loops are not marked [[unroll]], so its unit of 32 weights is
  // an array indexed by the loop's counter, which spirv-opt leaves rolled. (If this fails, the check finds nothing.)
  EXPECT_GT(dynamic_local_array_accesses(unrolled("matmul_serial_q4_k", {}, 0)), 0);
}

TEST(DynamicLocalArrays, NoneInAnyMatrixMembersKernel) {
  REQUIRE_SPIRV_OPT();
  const std::vector<Case> cases = matmul_cases();
  ASSERT_GT(cases.size(), 300u);
  const std::vector<std::string> bad = offenders(cases);
  std::string list;
  for (const std::string& b : bad) list += "\n  " + b;
  EXPECT_TRUE(bad.empty()) << bad.size() << " of " << cases.size() << " kernels keep a local array in memory:" << list;
}

// The FMA members' weights become floats without a conversion instruction (common.glsl's small_float: the
// same values), which NVIDIA issues at an eighth of its FMA rate: a conversion a weight (a vec member's again
// for each row) capped Q4_K at ~2 TB/s of an H200's 4.4 before any load. Their unrolled modules keep at most
// the folded norm's float(K), whatever the member's outputs and rows. The check itself finds a module that
// converts its weights: get_rows (dequant.glsl's units, float() casts: an embedding row a token, not a product).
TEST(IntToFloatConversions, NoneAWeightInTheFmaMembers) {
  REQUIRE_SPIRV_OPT();
  EXPECT_GE(int_to_float_conversions(unrolled("get_rows_q4_k", {}, 0)), 32);
  std::vector<Case> cases;
  for (const MatmulKernel& k : matmul_family(gpu())) {
    if (k.serial || k.tile_rows || k.qmm || k.dot || k.depth != 1) continue;  // (-dot: integer sums, converted a run)
    for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q2_K, DType::Q3_K, DType::Q4_K,
                    DType::Q5_K, DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS})
      if (member_runs_type(k, t) && k.rows == 4 && k.wg == 64)  // (every outputs count and variant)
        cases.push_back({matmul_shader(k, MatrixMath::Fma, t), k.name() + " " + dtype_name(t), matmul_constants(k, MatrixMath::Fma)});
  }
  ASSERT_GT(cases.size(), 50u);
  const std::vector<int> found = count_unrolled(cases, int_to_float_conversions);
  std::string bad;
  for (size_t i = 0; i < cases.size(); i++)
    if (found[i] < 0 || found[i] > 2) bad += "\n  " + cases[i].label + ": " + (found[i] < 0 ? "spirv-opt failed" : std::to_string(found[i]) + " conversions");
  EXPECT_TRUE(bad.empty()) << bad;
}

// Every other kernel a GPU runs (attention, drafting's top-k and plans, embeddings, norms, ...), with its
// default constants, and attention also as models specialize it (a thread's dimensions, the query group).
// (A software device's `_rolled` twins are left rolled on purpose.)
TEST(DynamicLocalArrays, NoneInAnyOtherKernel) {
  REQUIRE_SPIRV_OPT();
  std::vector<Case> cases;
  for (size_t i = 0; i < kShaderCount; i++) {
    const std::string name = kShaders[i].name;
    if (name.rfind("matmul_", 0) == 0 || (name.size() > 7 && name.substr(name.size() - 7) == "_rolled")) continue;
    cases.push_back({name, name, {}});
    // (the whole-row kernel takes a thread's dimensions; chunks also the query group)
    const bool split = name.rfind("attention_split_", 0) == 0, whole = name.rfind("attention_f", 0) == 0;
    const std::vector<std::vector<uint32_t>> specialized = split ? std::vector<std::vector<uint32_t>>{{1, 1}, {1, 4}, {2, 1}, {2, 4}, {3, 1}, {3, 4}}
                                                           : whole ? std::vector<std::vector<uint32_t>>{{1}, {2}, {3}}
                                                                   : std::vector<std::vector<uint32_t>>{};
    for (const std::vector<uint32_t>& c : specialized) {
      std::string label = name;
      for (uint32_t v : c) label.append(" ").append(std::to_string(v));
      cases.push_back({name, label, c});
    }
  }
  ASSERT_GT(cases.size(), 20u);
  const std::vector<std::string> bad = offenders(cases);
  std::string list;
  for (const std::string& b : bad) list += "\n  " + b;
  EXPECT_TRUE(bad.empty()) << list;
}
