// `jf devices`: the devices jf can run a model on (--device), with what each offers.
#include <cstdio>

#include "cli/commands.h"
#include "device/device.h"

namespace jf::cli {

Command add_devices_command(CLI::App& app) {
  app.add_subcommand("devices",
                     "List the devices --device can name: the CPU and every Vulkan device (type, memory, subgroup "
                     "size, the features jf uses), and which one --device auto picks");
  return [] {
    std::fputs(describe_devices().c_str(), stdout);
    return 0;
  };
}

}  // namespace jf::cli
