// The device's measured read bandwidth: the physical limit a memory-bound forward is compared against.
#pragma once
#include <vector>

#include "vulkan/context.h"

namespace jf::vulkan {

struct ReadBandwidth {
  double bytes_per_second = 0;  // best of the timed reads
  size_t bytes = 0;             // the buffer read each time
  int reads = 0;
};

// Times reads of one device buffer of `bytes` (at most the device's largest binding) with GPU timestamps,
// after one untimed read; throws jf::Error where the device has no timestamps.
ReadBandwidth measure_read_bandwidth(Context& ctx, size_t bytes, int reads = 5);

// A device kept busy reading before kernels are timed: a GPU idle while the host compiled pipelines runs at
// low clocks, and what is timed then looks slower than it is (the H200's first sweep timed its first two
// matrices ~2.5x slower than the same shapes later). Reads a buffer back to back, 8 reads a submission, for at
// least `seconds` and until two submissions in a row read within 2% of each other (at most 4 x `seconds`; one
// submission where `seconds` is 0). Throws jf::Error where the device has no timestamps.
struct WarmUp {
  double seconds = 0;  // spent
  int reads = 0;
  double first_bytes_per_second = 0, last_bytes_per_second = 0;  // the first submission's reads, the last's
};
WarmUp warm_up(Context& ctx, double seconds);

// One-shot reads of a buffer the size of a matrix product's weights (shaders/read_probe.comp): each thread
// loads `loads` 16-byte words before using any, one dispatch reads the buffer once. The least of `reps`
// back-to-back dispatches' times, each as a forward's product would see it (launch and ramp included).
struct OneShotRead {
  size_t bytes = 0;
  int loads = 0;       // 16-byte words a thread
  double seconds = 0;  // one dispatch
};
// Every (size, loads) pair; checks that each dispatch's reads happened (a marker word found by the thread
// that should read it) and throws jf::Error if not, or where the device has no timestamps.
std::vector<OneShotRead> probe_one_shot_reads(Context& ctx, const std::vector<size_t>& sizes, const std::vector<int>& loads,
                                              int reps = 5);

}  // namespace jf::vulkan
