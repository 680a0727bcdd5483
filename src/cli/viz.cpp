// `jf viz`: the trajectory page of a trace written by `jf generate --trace`.
#include <cstdio>

#include "cli/commands.h"
#include "cli/options.h"
#include "viz/trace_doc.h"
#include "viz/trajectory_page.h"

namespace jf::cli {

Command add_viz_command(CLI::App& app) {
  auto trace = std::make_shared<std::string>(), out = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("viz", "Draw a trace from jf generate --trace as a self-contained HTML page");
  cmd->add_option("--trace", *trace, "Trace file written by jf generate --trace")->required();
  cmd->add_option("-o,--output", *out, "HTML page to write")->required();
  return [trace, out] {
    check_output_path(*out, "-o");
    const viz::TraceDoc d = viz::read_trace(*trace);
    viz::write_trajectory_html(*out, d);
    std::fprintf(stderr, "jf: %s: %zu forwards of %s -> %s\n", trace->c_str(), d.trace.forwards.size(), d.decoder.c_str(),
                 out->c_str());
    return 0;
  };
}

}  // namespace jf::cli
