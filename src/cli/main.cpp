// jf: causal parallel decoding engine — command-line entry point.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>

#include "base/error.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"jf — run causal language models, decoding several tokens per forward pass, losslessly", "jf"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "jf 0.1.0");
  // A flag given twice keeps its last value, so wrappers can set defaults that the user's flags override
  // (./run.sh passes -n 128; ./run.sh -n 50 means 50).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::map<CLI::App*, jf::cli::Command> commands;
  auto add = [&](jf::cli::Command c) { commands[app.get_subcommands({}).back()] = std::move(c); };
  add(jf::cli::add_generate_command(app));
  add(jf::cli::add_chat_command(app));
  add(jf::cli::add_serve_command(app));
  add(jf::cli::add_inspect_command(app));
  add(jf::cli::add_convert_command(app));
  add(jf::cli::add_bench_command(app));
  add(jf::cli::add_random_command(app));
  add(jf::cli::add_tokenizer_train_command(app));
  add(jf::cli::add_sample_command(app));
  add(jf::cli::add_collect_command(app));
  add(jf::cli::add_pack_command(app));
  add(jf::cli::add_train_command(app));
  add(jf::cli::add_perplexity_command(app));
  add(jf::cli::add_viz_command(app));
  add(jf::cli::add_tune_command(app));
  add(jf::cli::add_merge_command(app));
  add(jf::cli::add_eval_command(app));
  add(jf::cli::add_frontier_command(app));
  add(jf::cli::add_tokenize_command(app));
  add(jf::cli::add_devices_command(app));
  add(jf::cli::add_image_data_command(app));
  add(jf::cli::add_imagine_command(app));
  add(jf::cli::add_image_bench_command(app));
  if (argc == 1) {  // no arguments: what jf can do, not an error
    std::fputs(app.help().c_str(), stdout);
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "jf: error: %s (see jf --help)\n", e.what());
    return 2;
  }
  try {
    for (auto& [sub, run] : commands)
      if (sub->parsed()) return run();
    return 2;
  } catch (const jf::Error& e) {
    std::fprintf(stderr, "jf: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jf: internal error: %s\n", e.what());
    return 3;
  }
}
