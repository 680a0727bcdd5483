#include "device/device.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "kernels/cpu.h"
#include "kernels/parallel.h"
#ifdef JF_WITH_VULKAN
#include "vulkan/attention_sweep.h"
#include "vulkan/bandwidth.h"
#include "vulkan/context.h"
#include "vulkan/kernel_sweep.h"
#include "vulkan/tile_probe.h"
#include "vulkan/vulkan_forward.h"
#endif

namespace jf {

bool vulkan_built() {
#ifdef JF_WITH_VULKAN
  return true;
#else
  return false;
#endif
}

namespace {

// "vulkan" -> 0, "vulkan:N" -> N; -1 for anything else.
int vulkan_index(const std::string& device) {
  if (device == "vulkan") return 0;
  if (device.rfind("vulkan:", 0) != 0) return -1;
  const std::string n = device.substr(7);
  if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(n);
}

std::unique_ptr<ForwardPass> cpu_forward(Model& model) {
  return std::make_unique<Transformer>(model.config(), model.weights());
}

#ifdef JF_WITH_VULKAN
std::unique_ptr<ForwardPass> vulkan_forward(Model& model, int index) {
  model.set_panels(false);  // the device reads the file's weights; no CPU panel copies
  return std::make_unique<vulkan::VulkanForward>(index, model.config(), model.weights());
}

// The first usable hardware GPU, or -1 (and why in *why).
int first_gpu(std::string* why) {
  try {
    for (const vulkan::DeviceInfo& d : vulkan::list_devices())
      if (!d.software && d.missing.empty()) return d.index;
    *why = "no Vulkan GPU found";
  } catch (const Error& e) {
    *why = e.what();
  }
  return -1;
}

// What `jf devices` says an untuned device's attention is.
std::string untuned_attention(bool software) {
  const vulkan::AttentionChoice a = vulkan::default_attention(software);
  return (a.chunk ? vulkan::attention_name(a) : std::string("whole rows")) + " (untuned)";
}

// Whether jf uses a device's matrix units: they must give a row the same bits at every tile position.
std::string matrix_units_verdict(int index) {
  try {
    vulkan::Context ctx(index);
    vulkan::Kernels kernels(ctx);
    const vulkan::TileProbe p = vulkan::probe_tile_positions(ctx, kernels, vulkan::MatrixMath::MatrixUnits);
    return p.ok() ? "used with JF_VULKAN_MATMUL=matrix-units (a row's bits pass the tile-position probe)"
                  : "NOT used: they fail the tile-position probe (" + p.detail + ")";
  } catch (const Error& e) {
    return std::string("NOT used: the tile-position probe could not run (") + e.what() + ")";
  }
}
#endif

}  // namespace

std::unique_ptr<ForwardPass> make_forward_pass(Model& model, const std::string& device, std::string* note) {
  if (device.empty() || device == "cpu") return cpu_forward(model);
  const int index = vulkan_index(device);
  if (device != "auto" && index < 0) throw Error("unknown device '" + device + "' (use cpu, vulkan, vulkan:N or auto; see jf devices)");
#ifdef JF_WITH_VULKAN
  if (index >= 0) return vulkan_forward(model, index);
  std::string why;
  const int gpu = first_gpu(&why);
  if (gpu >= 0) return vulkan_forward(model, gpu);
  if (note) *note = "--device auto: " + why + "; running on the CPU";
  return cpu_forward(model);
#else
  if (index >= 0)
    throw Error("this jf was built without the Vulkan backend (install libvulkan-dev and glslc, then rebuild), so --device " +
                device + " cannot run; use --device cpu");
  if (note) *note = "--device auto: this jf was built without the Vulkan backend; running on the CPU";
  return cpu_forward(model);
#endif
}

std::string describe_devices() {
  std::ostringstream o;
  o << "cpu        " << isa_name(active_isa()) << ", " << num_threads() << " threads\n";
#ifdef JF_WITH_VULKAN
  try {
    const auto devices = vulkan::list_devices();
    if (devices.empty()) o << "vulkan     no devices (is a Vulkan driver installed?)\n";
    std::string why;
    const int gpu = first_gpu(&why);
    for (const vulkan::DeviceInfo& d : devices) {
      char mem[32];
      std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(d.memory_bytes) / (1 << 30));
      o << "vulkan:" << d.index << (d.index < 10 ? "   " : "  ") << d.name << "\n";
      o << "           " << d.type << ", " << mem << ", Vulkan " << d.api_version << ", driver " << d.driver << "\n";
      o << "           subgroup " << d.subgroup_size << ", shared memory " << d.shared_memory / 1024 << " KiB, largest binding "
        << d.max_binding_bytes / (1 << 20) << " MiB\n";
      std::string features;
      for (const std::string& f : d.features) features += (features.empty() ? "" : ", ") + f;
      o << "           uses: " << features << "\n";
      if (!d.missing.empty()) o << "           cannot run jf: lacks " << d.missing << "\n";
      if (d.matrix_units) o << "           fp16 matrix units: " << matrix_units_verdict(d.index) << "\n";
      if (d.int8_matrix_units) o << "           int8 matrix units: Q8_0's qmm-...-mu kernels (exact integer sums: no probe needed)\n";
      try {
        const vulkan::KernelChoices c = vulkan::KernelChoices::load(d);
        if (d.missing.empty())
          o << "           matrix kernels: " << (c.by_shape.empty() ? std::string("untuned (jf tune --kernels times them)")
                                                                      : "tuned for " + std::to_string(c.by_shape.size()) +
                                                                            " matrix shapes (" + vulkan::KernelChoices::cache_path(d) + ")")
            << "\n";
        if (d.missing.empty())
          o << "           attention: " << (c.attention ? vulkan::attention_name(*c.attention) + " (chosen by jf tune --kernels)"
                                                              : untuned_attention(d.software))
            << "\n";
      } catch (const Error& e) {
        o << "           matrix kernels: " << e.what() << "\n";
      }
      if (d.software) o << "           a software device: chosen only by --device vulkan:" << d.index << ", never by auto\n";
    }
    o << "auto       " << (gpu >= 0 ? "vulkan:" + std::to_string(gpu) : "cpu (" + why + ")") << "\n";
  } catch (const Error& e) {
    o << "vulkan     unavailable: " << e.what() << "\nauto       cpu\n";
  }
#else
  o << "vulkan     not built (install libvulkan-dev and glslc, then rebuild)\nauto       cpu\n";
#endif
  return o.str();
}

namespace {

// The Vulkan device a measuring flag names (vulkan, vulkan:N or auto), or a one-line error.
int measured_device(const std::string& device, const std::string& flag) {
  const int index = device == "auto" ? -2 : vulkan_index(device);
  if (index == -1) throw Error(flag + " measures a Vulkan device (vulkan, vulkan:N or auto), not '" + device + "'");
#ifdef JF_WITH_VULKAN
  std::string why;
  const int chosen = index >= 0 ? index : first_gpu(&why);
  if (chosen < 0) throw Error(flag + " auto: " + why);
  return chosen;
#else
  throw Error("this jf was built without the Vulkan backend, so it has no device to measure");
#endif
}

}  // namespace

std::string measure_read_bandwidth(const std::string& device) {
  const int chosen = measured_device(device, "--bandwidth");
#ifdef JF_WITH_VULKAN
  vulkan::Context ctx(chosen);
  // 1 GiB, or what the device can bind and hold: long enough that launch and clock ramp do not count.
  const size_t bytes = std::min<uint64_t>({uint64_t{1} << 30, ctx.info().max_binding_bytes, ctx.free_device_memory() / 4});
  const vulkan::ReadBandwidth r = vulkan::measure_read_bandwidth(ctx, bytes);
  char line[256];
  std::snprintf(line, sizeof line, "vulkan:%d read bandwidth %.1f GB/s (%.0f MiB read, best of %d timed reads)\n", chosen,
                r.bytes_per_second / 1e9, static_cast<double>(r.bytes) / (1 << 20), r.reads);
  return line;
#else
  (void)chosen;
  return "";
#endif
}

std::string probe_one_shot_reads(const std::string& device) {
  const int chosen = measured_device(device, "--read-probe");
#ifdef JF_WITH_VULKAN
  vulkan::Context ctx(chosen);
  // The sizes of products' weights: a small model's smallest, llama-1b's q/k/v and gate/up, llama-8b's gate/up.
  const std::vector<size_t> sizes = {500'000, 2'950'000, 12'980'000, 66'060'000};
  const std::vector<int> loads = {1, 2, 4, 8};
  const std::vector<vulkan::OneShotRead> r = vulkan::probe_one_shot_reads(ctx, sizes, loads);
  std::string o = "vulkan:" + std::to_string(chosen) +
                  " one-shot reads: a dispatch reads a buffer once, each thread's 16-byte loads issued before any is "
                  "used (us a read, GB/s; the floor of a product reading that many bytes)\n| MB |";
  char cell[64];
  for (int l : loads) {
    std::snprintf(cell, sizeof cell, " %d %s |", l, l == 1 ? "load a thread" : "loads");
    o += cell;
  }
  o += "\n|---|";
  for (size_t i = 0; i < loads.size(); i++) o += "---|";
  o += "\n";
  for (size_t i = 0; i < r.size(); i++) {
    if (i % loads.size() == 0) {
      std::snprintf(cell, sizeof cell, "| %.1f |", static_cast<double>(r[i].bytes) / 1e6);
      o += cell;
    }
    std::snprintf(cell, sizeof cell, " %.1f us, %.0f GB/s |", r[i].seconds * 1e6, static_cast<double>(r[i].bytes) / r[i].seconds / 1e9);
    o += cell;
    if (i % loads.size() == loads.size() - 1) o += "\n";
  }
  return o;
#else
  (void)chosen;
  return "";
#endif
}

std::string tune_gpu_kernels(Model& model, const std::string& device, const KernelTuneOptions& o) {
  const int index = device == "auto" ? -2 : vulkan_index(device);
  if (index == -1) throw Error("--kernels tunes a Vulkan device's kernels (--device vulkan, vulkan:N or auto), not '" + device + "'");
#ifdef JF_WITH_VULKAN
  std::string why;
  const int chosen = index >= 0 ? index : first_gpu(&why);
  if (chosen < 0 && !o.software_too) return "";  // (auto on a machine without a GPU: nothing to tune)
  if (chosen < 0) throw Error("--kernels with --device auto: " + why);
  if (!o.software_too)
    for (const vulkan::DeviceInfo& d : vulkan::list_devices())
      if (d.index == chosen && d.software) return "";
  model.set_panels(false);
  // Every member is timed on its own, whatever is cached: the forward only lends its weights and device.
  vulkan::VulkanForward fwd(chosen, model.config(), model.weights(), vulkan::default_matmul_kernel(0, 0));
  vulkan::SweepOptions so;
  if (!o.rows.empty()) so.rows = o.rows;
  so.reps = o.reps, so.budget_seconds = o.budget_seconds;
  for (const std::string& name : o.members) so.only.push_back(vulkan::parse_matmul_kernel(name));
  const vulkan::SweepResult r = vulkan::sweep_matmul_family(fwd, so);
  std::string out = "vulkan:" + std::to_string(chosen) + " " + fwd.device().name + ", driver " + fwd.device().driver + "\n" +
                    vulkan::sweep_table(r);
  std::optional<vulkan::AttentionSweep> attention;
  if (o.attention_context > 0) {
    attention = vulkan::sweep_attention(fwd, o.attention_context, o.reps);
    out += '\n';
    out += vulkan::attention_table(*attention);
  }
  if (o.cache) {
    const std::string path = vulkan::KernelChoices::cache_path(fwd.device());
    vulkan::KernelChoices c = vulkan::KernelChoices::load(fwd.device());
    vulkan::record_choices(r, c);
    if (attention) c.attention = attention->options[attention->chosen].kernel;
    c.write(path);
    out += "kept for every forward on this device and driver: " + path + "\n";
  }
  return out;
#else
  (void)model, (void)o;
  throw Error("this jf was built without the Vulkan backend, so it has no kernels to tune");
#endif
}

}  // namespace jf
