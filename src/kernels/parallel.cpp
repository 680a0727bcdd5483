#include "kernels/parallel.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace jf {

namespace {

// One step of a wait loop: first a CPU pause (a job or its last chunk usually arrives within
// microseconds, and a system call would add about that much latency), later a yield to the OS so a
// waiting thread does not starve others on a busy machine.
inline void relax(int spin) {
  if (spin < 4096) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    std::this_thread::yield();
  }
}

// A job is announced by bumping `generation_`; chunk claims go through one atomic word holding
// (generation << 32 | next chunk), and the chunk count is published as (generation << 32 | count), so a
// worker that wakes late can never claim a chunk of a job that has already finished or been replaced.
class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 0; i + 1 < threads; i++) workers_.emplace_back([this] { worker_loop(); });
  }
  ~Pool() {
    stop_.store(true);
    generation_.fetch_add(1);
    generation_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs the job on the pool, or inline when the pool is already running one (a chunk that calls
  // parallel_chunks, or a second thread using the kernels at the same time).
  void run(int64_t n, const std::function<void(int64_t)>& fn) {
    if (busy_.exchange(true, std::memory_order_acquire)) {
      for (int64_t c = 0; c < n; c++) fn(c);
      return;
    }
    run_on_pool(n, fn);
    busy_.store(false, std::memory_order_release);
  }

 private:
  void run_on_pool(int64_t n, const std::function<void(int64_t)>& fn) {
    const uint64_t g = generation_.load(std::memory_order_relaxed) + 1;
    fn_.store(&fn, std::memory_order_relaxed);
    job_.store(g << 32 | static_cast<uint64_t>(n), std::memory_order_release);
    done_.store(0, std::memory_order_relaxed);
#ifdef JF_POOL_PUBLISH_GAP
    JF_POOL_PUBLISH_GAP;  // tests widen the window between publishing a job and opening its claims
#endif
    claim_.store(g << 32, std::memory_order_release);
    generation_.store(g, std::memory_order_release);
    if (sleepers_.load(std::memory_order_acquire) > 0) generation_.notify_all();
    work(g);
    for (int spin = 0; done_.load(std::memory_order_acquire) < n; spin++) relax(spin);
  }

  // Claims and runs chunks of job g until none are left.
  void work(uint64_t g) {
    for (;;) {
      const uint64_t c = claim_.load(std::memory_order_acquire);
      // The chunk count must be job g's own: a worker that read an exhausted claim of job g and then the
      // count of job g + 1 (published first) would otherwise claim a chunk that does not exist.
      const uint64_t job = job_.load(std::memory_order_acquire);
      const uint64_t tag = g & 0xffffffffu;  // the generation as the words hold it (it wraps after 2^32 jobs)
      if ((c >> 32) != tag || (job >> 32) != tag || (c & 0xffffffffu) >= (job & 0xffffffffu)) return;
      uint64_t expected = c;
      if (!claim_.compare_exchange_weak(expected, c + 1, std::memory_order_acq_rel)) continue;
      // The claim succeeded, so job g is still running and fn_ is its own.
      (*fn_.load(std::memory_order_relaxed))(static_cast<int64_t>(c & 0xffffffffu));
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
  }

  void worker_loop() {
    uint64_t seen = generation_.load();
    while (!stop_.load()) {
      uint64_t g = generation_.load(std::memory_order_acquire);
      // Spin a while (a forward pass issues jobs back to back, and a decoder may run several one-row
      // forwards without jobs in between: tens of milliseconds), then sleep until the next job. Waking a
      // sleeping thread costs more than a small model's whole forward.
      for (int spin = 0; g == seen && spin < 200000; spin++) {
        relax(spin);
        g = generation_.load(std::memory_order_acquire);
      }
      if (g == seen) {
        sleepers_.fetch_add(1);
        generation_.wait(seen);
        sleepers_.fetch_sub(1);
        continue;
      }
      seen = g;
      if (!stop_.load()) work(g);
    }
  }

  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> busy_{false};  // a job is running
  std::atomic<const std::function<void(int64_t)>*> fn_{nullptr};
  std::atomic<uint64_t> job_{0};  // generation << 32 | chunk count
};

int g_threads = 0;
std::unique_ptr<Pool> g_pool;

}  // namespace

void set_num_threads(int n) {
  if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
  if (n < 1) n = 1;
  if (n == g_threads && (n == 1 || g_pool)) return;
  g_pool.reset();
  g_threads = n;
  if (n > 1) g_pool = std::make_unique<Pool>(n);
}

int num_threads() {
  if (g_threads == 0) set_num_threads(0);
  return g_threads;
}

void parallel_chunks(int64_t n_chunks, bool parallel, const std::function<void(int64_t)>& fn) {
  if (!parallel || num_threads() <= 1 || n_chunks <= 1) {
    for (int64_t c = 0; c < n_chunks; c++) fn(c);
    return;
  }
  g_pool->run(n_chunks, fn);
}

}  // namespace jf
