// Helpers of the Vulkan tests: which device they run on, and a skip (failure under CI=true) without one.
#pragma once
#include <cstdlib>
#include <string>
#include <vector>

#include "base/error.h"
#include "test_support.h"
#include "vulkan/context.h"
#include "vulkan/matmul_family.h"
#include "vulkan/matmul_grid.h"

namespace jf::test {

// JF_TEST_VULKAN_DEVICE, else the first usable hardware GPU, else the first usable device (lavapipe); -1 when
// there is none, with the reason in *why.
inline int test_vulkan_device(std::string* why) {
  if (const char* e = std::getenv("JF_TEST_VULKAN_DEVICE")) return std::atoi(e);
  try {
    int software = -1;
    for (const vulkan::DeviceInfo& d : vulkan::list_devices()) {
      if (!d.missing.empty()) continue;
      if (!d.software) return d.index;
      if (software < 0) software = d.index;
    }
    if (software < 0) *why = "no usable Vulkan device";
    return software;
  } catch (const Error& e) {
    *why = e.what();
    return -1;
  }
}

// The ways of computing matrix products `device` runs (matmul_grid.h): FMAs, the fp16 tiles with FMAs, and
// the tiles on its matrix units where it has them (a GPU's device check tests those).
inline std::vector<vulkan::MatrixMath> matrix_maths(int device) {
  std::vector<vulkan::MatrixMath> m{vulkan::MatrixMath::Fma, vulkan::MatrixMath::Tiles};
  for (const vulkan::DeviceInfo& d : vulkan::list_devices())
    if (d.index == device && d.matrix_units) m.push_back(vulkan::MatrixMath::MatrixUnits);
  return m;
}

// Members of the split family a whole forward is tested with (the kernel tests run every member): the
// untuned default, and one with every option on (pairs, folded, subgroup sums where the device has them) in
// another shape.
inline std::vector<vulkan::MatmulKernel> some_split_kernels(int device) {
  std::vector<vulkan::MatmulKernel> k{vulkan::parse_matmul_kernel("split-wg64-o4-r8")};
  for (const vulkan::DeviceInfo& d : vulkan::list_devices())
    if (d.index == device) k.push_back(vulkan::parse_matmul_kernel(std::string("split-wg128-o2-r4-pair-fold") + (d.subgroup_shuffle ? "-sg" : "")));
  return k;
}

}  // namespace jf::test

// Binds `var` to the Vulkan device index the tests use; skips the test (fails it under CI=true) without one.
#define JF_VULKAN_DEVICE(var)                                                                              \
  int var = -1;                                                                                            \
  do {                                                                                                     \
    std::string why__;                                                                                     \
    var = ::jf::test::test_vulkan_device(&why__);                                                          \
    if (var < 0) {                                                                                         \
      if (::jf::test::in_ci()) FAIL() << "CI=true but no Vulkan device (install mesa-vulkan-drivers): " << why__; \
      GTEST_SKIP() << "SKIPPED: no Vulkan device: " << why__;                                              \
    }                                                                                                      \
  } while (0)
