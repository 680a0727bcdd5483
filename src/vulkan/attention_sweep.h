// `jf tune --kernels`, attention's part: the whole-row kernel and the chunked one (chunks of 64, 256 and 1024
// visible slots: shaders/attention_split.comp; and 2 or 4 rows a workgroup, sharing their key and value
// reads, where the model's query group allows) timed on the device in a decode step's forward at a long
// context (one row, and 16: a draft's rows), and one chosen by the least time at one row (within 3%, the least
// at 16 rows). Every choice is batch-invariant, so it changes speed, never a decoder's tokens.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace jf::vulkan {

class VulkanForward;

// An attention kernel: a workgroup per row and query head over all its slots (chunk 0), or chunks of `chunk`
// visible slots with `rows` rows of a sequence a workgroup (1, 2 or 4).
struct AttentionChoice {
  uint32_t chunk = 0, rows = 1;
  bool operator==(const AttentionChoice&) const = default;
};

struct AttentionTimes {
  AttentionChoice kernel;
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
std::string attention_name(AttentionChoice a);  // "whole", "split-256", "split-64-r4"
// What an untuned device runs: chunks of 64 slots on a hardware GPU (the H200's choice on every model it timed:
// 4x the whole-row kernel at 2,000 slots), whole rows on a software one.
inline AttentionChoice default_attention(bool software) { return software ? AttentionChoice{} : AttentionChoice{64, 1}; }
// The inverse (JF_VULKAN_ATTENTION's values); jf::Error for anything else.
AttentionChoice parse_attention_name(const std::string& s);

}  // namespace jf::vulkan
