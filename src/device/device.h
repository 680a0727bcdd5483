// Which device runs a model's forward pass: the one place that knows the backends. Commands, decoders and
// the server see only a ForwardPass and the KV caches it makes.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/transformer.h"

namespace jf {

// Whether this build has the Vulkan backend (JF_VULKAN, on when the Vulkan headers and glslc were found).
bool vulkan_built();

// A forward pass for `device`: "cpu"; "vulkan" (device 0) or "vulkan:N"; "auto", the first hardware GPU,
// never a software Vulkan device, else the CPU (then *note says why). Throws jf::Error with one line for an
// unknown device, a build without Vulkan, no loader or device, or a model the device cannot hold.
// On a GPU the model's CPU panel copies are never built.
std::unique_ptr<ForwardPass> make_forward_pass(Model& model, const std::string& device, std::string* note = nullptr);

// What `jf devices` prints: the CPU, then every Vulkan device with its type, memory, subgroup size and the
// features jf uses (or what it lacks), and which one --device auto picks.
std::string describe_devices();
// `jf devices --bandwidth DEVICE`: the Vulkan device's read bandwidth, timed on the device (one line).
// Throws jf::Error for the CPU, a build without Vulkan, or a device that cannot be opened or timed.
std::string measure_read_bandwidth(const std::string& device);
// `jf devices --read-probe DEVICE`: the time of one dispatch reading a product's bytes once (0.5-66 MB) with 1-8
// 16-byte loads a thread issued before use, as a table: the floor a matrix kernel can reach on the device.
std::string probe_one_shot_reads(const std::string& device);

// `jf tune --kernels`: times the GPU's matrix-kernel family on the model's own matrix shapes
// (vulkan/kernel_sweep.h), keeps each shape's choice in jf's cache for the device and driver (read by every
// later forward on it), and returns the table. Throws jf::Error for the CPU, a build without Vulkan, a
// member name the device cannot run, or a device without timestamps.
struct KernelTuneOptions {
  std::vector<std::string> members;  // the family members to time (names); empty: all the device runs
  std::vector<int> rows;             // row counts to time (first 1); empty: 1, 4, 16, 64, 512
  int reps = 5;
  double budget_seconds = 120;
  bool cache = true;  // false: time and print, keep nothing
  bool software_too = true;  // false: a software device (lavapipe) is not timed ("" returned)
  int attention_context = 4096;  // attention's kernels timed at this many tokens of context (0: not timed)
};
std::string tune_gpu_kernels(Model& model, const std::string& device, const KernelTuneOptions& o);

}  // namespace jf
