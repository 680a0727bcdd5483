#include "test_support.h"

#include <sys/stat.h>

#include <cstdlib>

namespace jf::test {

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

}  // namespace jf::test
