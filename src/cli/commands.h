// The `jf` subcommands. Each registers its options on the app and returns the function that runs it.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace jf::cli {

using Command = std::function<int()>;

Command add_generate_command(CLI::App& app);
Command add_chat_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_convert_command(CLI::App& app);
Command add_random_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_tokenizer_train_command(CLI::App& app);
Command add_collect_command(CLI::App& app);
Command add_pack_command(CLI::App& app);
Command add_train_command(CLI::App& app);
Command add_perplexity_command(CLI::App& app);
Command add_serve_command(CLI::App& app);
Command add_viz_command(CLI::App& app);
Command add_tune_command(CLI::App& app);
Command add_merge_command(CLI::App& app);
Command add_eval_command(CLI::App& app);
Command add_frontier_command(CLI::App& app);
Command add_sample_command(CLI::App& app);
Command add_tokenize_command(CLI::App& app);
Command add_devices_command(CLI::App& app);
Command add_image_data_command(CLI::App& app);
Command add_imagine_command(CLI::App& app);
Command add_image_bench_command(CLI::App& app);

}  // namespace jf::cli
