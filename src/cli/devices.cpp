// `jf devices`: the devices jf can run a model on (--device), with what each offers.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "device/device.h"

namespace jf::cli {

Command add_devices_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices",
                     "List the devices --device can name: the CPU and every Vulkan device (type, memory, subgroup "
                     "size, the features jf uses), and which one --device auto picks");
  auto bandwidth = std::make_shared<std::string>();
  cmd->add_option("--bandwidth", *bandwidth,
                  "Also time how fast DEVICE (vulkan, vulkan:N or auto) reads its memory: the bound a memory-bound "
                  "forward is compared against");
  auto probe = std::make_shared<std::string>();
  cmd->add_option("--read-probe", *probe,
                  "Also time one-shot reads on DEVICE (vulkan, vulkan:N or auto): one dispatch reading 0.5-66 MB once, "
                  "1-8 16-byte loads a thread, the floor a matrix product of that size can reach");
  return [bandwidth, probe] {
    std::fputs(describe_devices().c_str(), stdout);
    if (!bandwidth->empty()) std::fputs(measure_read_bandwidth(*bandwidth).c_str(), stdout);
    if (!probe->empty()) std::fputs(probe_one_shot_reads(*probe).c_str(), stdout);
    return 0;
  };
}

}  // namespace jf::cli
