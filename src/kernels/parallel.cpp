#include "kernels/parallel.h"

#include <thread>

namespace jf {

namespace {
int g_threads = 0;
}

void set_num_threads(int n) {
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  g_threads = n < 1 ? 1 : n;
}

int num_threads() {
  if (g_threads == 0) set_num_threads(0);
  return g_threads;
}

}  // namespace jf
