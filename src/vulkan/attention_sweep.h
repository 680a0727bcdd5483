// `jf tune --kernels`, attention's part: the whole-row kernel and the chunked one (chunks of 64, 256 and 1024
// visible slots: shaders/attention_split.comp) timed on the device in a decode step's forward at a long
// context (one row, and 16: a draft's rows), and one chosen by the least time at one row (within 3%, the least
// at 16 rows). Every choice is batch-invariant, so it changes speed, never a decoder's tokens.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace jf::vulkan {

class VulkanForward;

struct AttentionTimes {
  uint32_t chunk = 0;           // 0: the whole-row kernel
  double one_row = 0, rows = 0;  // a forward's device seconds at 1 and 16 rows
};

struct AttentionSweep {
  int context = 0;  // visible slots the forward's rows saw
  std::vector<AttentionTimes> options;
  size_t chosen = 0;
};

// The forward's attention choices, timed at `context` tokens in the cache (less where the model's context is
// shorter). Leaves the forward's choice as it was. Throws jf::Error without device timestamps.
AttentionSweep sweep_attention(VulkanForward& fwd, int context, int reps);
size_t choose_attention(const std::vector<AttentionTimes>& options);
std::string attention_table(const AttentionSweep& s);
std::string attention_name(uint32_t chunk);  // "whole", "split-256"
// What an untuned device runs: chunks of 64 slots on a hardware GPU (the H200's choice on every model it timed:
// 4x the whole-row kernel at 2,000 slots), whole rows (0) on a software one.
inline uint32_t default_attention_chunk(bool software) { return software ? 0 : 64; }
// The inverse (JF_VULKAN_ATTENTION's values); jf::Error for anything else.
uint32_t parse_attention_name(const std::string& s);

}  // namespace jf::vulkan
