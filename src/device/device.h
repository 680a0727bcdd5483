// Which device runs a model's forward pass: the one place that knows the backends. Commands, decoders and
// the server see only a ForwardPass and the KV caches it makes.
#pragma once
#include <memory>
#include <string>

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

}  // namespace jf
