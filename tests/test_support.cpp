#include <fstream>
#include <sstream>
#include "test_support.h"

#include <sys/stat.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "base/error.h"

namespace jf::test {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool path_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

std::string shared_dir() {
  const char* env = std::getenv("JF_SHARED");
  std::string d = env && *env ? env : "../shared";
  return path_exists(d + "/models") ? d : std::string();
}

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("jf_test_" + std::to_string(::getpid()) + "_" + name)).string();
}

TempDir::TempDir(const std::string& name) : path(temp_path(name)) {
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
}

TempDir::~TempDir() { std::filesystem::remove_all(path); }

std::string TempDir::operator/(const std::string& file) const { return (std::filesystem::path(path) / file).string(); }

void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "message is not one line: " << e.what();
  }
}

}  // namespace jf::test
