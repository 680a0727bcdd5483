// jf's cache directory: $XDG_CACHE_HOME/jf, else ~/.cache/jf, else /tmp/jf-cache. Tune results, the GPU's
// chosen kernels and jf chat's history live there.
#pragma once
#include <cstdlib>
#include <string>

namespace jf {

inline std::string cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/jf";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/jf";
  return "/tmp/jf-cache";
}

}  // namespace jf
