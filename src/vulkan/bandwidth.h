// The device's measured read bandwidth: the physical limit a memory-bound forward is compared against.
#pragma once
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

}  // namespace jf::vulkan
