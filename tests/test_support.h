// Helpers shared by the tests: locating ../shared (skip visibly when absent, fail under CI=true).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace jf::test {

// Directory of the shared models/data, or "" when it is not present.
std::string shared_dir();
// True when running under CI (CI=true): tests that need ../shared must then run, not skip.
bool in_ci();

}  // namespace jf::test

// Binds `var` to <shared>/<rel>; skips the test (or fails it under CI=true) when missing.
#define JF_SHARED_PATH(var, rel)                                                                   \
  std::string var;                                                                                 \
  do {                                                                                             \
    std::string base__ = ::jf::test::shared_dir();                                                 \
    var = base__.empty() ? std::string() : base__ + "/" + (rel);                                   \
    if (base__.empty() || !::jf::test::path_exists(var)) {                                         \
      if (::jf::test::in_ci()) FAIL() << "CI=true but shared file is missing: " << (rel);         \
      GTEST_SKIP() << "SKIPPED: ../shared/" << (rel) << " not found (set JF_SHARED to its location)"; \
    }                                                                                              \
  } while (0)

namespace jf::test {
bool path_exists(const std::string& p);
// A whole file's bytes ("" when it cannot be read).
std::string read_file(const std::string& path);

// A path in the temp directory unique to this process (the file is not created).
std::string temp_path(const std::string& name);

// A fresh directory, removed with everything in it when the object goes out of scope.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& name);
  ~TempDir();
  std::string operator/(const std::string& file) const;
};

// Runs `fn`, expecting a one-line jf::Error whose message contains `needle`.
void expect_error(const std::function<void()>& fn, const std::string& needle);
}  // namespace jf::test
