// `jf collect` (Jacobi trajectories of a model over a prompt set) and `jf pack` (noise-conditioned training
// sequences from trajectories).
#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/prompts.h"
#include "train/packing.h"
#include "train/quality.h"

namespace jf::cli {

namespace {

struct CollectArgs {
  ModelOptions model;
  PromptOptions prompt;
  std::string prompts_file, format = "auto", out, shard = "0/1";
  int limit = 0;
  CollectOptions opt;
};

void parse_shard(const std::string& s, CollectOptions& o) {
  int i = -1, n = -1;
  char extra;
  if (std::sscanf(s.c_str(), "%d/%d%c", &i, &n, &extra) != 2 || n < 1 || i < 0 || i >= n)
    throw Error("--shard must be i/N with 0 <= i < N, got '" + s + "'");
  o.shard = i, o.shards = n;
}

int run_collect(CollectArgs& a) {
  parse_shard(a.shard, a.opt);
  if (a.opt.block < 2 || a.opt.block > 1024) throw Error("--block must be between 2 and 1024, got " + std::to_string(a.opt.block));
  std::vector<std::string> texts = load_prompts(a.prompts_file, a.format);
  if (a.limit > 0 && static_cast<int>(texts.size()) > a.limit) texts.resize(a.limit);
  LoadedModel lm = open_model(a.model);
  if (!lm.tokenizer) throw Error(a.model.path + ": the model has no tokenizer");
  a.opt.eos_ids = lm.tokenizer->eog_ids();
  std::vector<std::vector<int32_t>> prompts;
  for (const std::string& t : texts) {
    PromptOptions po = a.prompt;
    po.prompt = t;
    std::string rendered;
    prompts.push_back(prompt_tokens(po, *lm.tokenizer, &rendered));
  }
  a.opt.context_size = context_size(a.model, *lm.model);
  std::unique_ptr<ForwardPass> forward = open_forward(a.model, *lm.model);
  ForwardPass& fwd = *forward;
  a.opt.kv_type = kv_type(a.model, fwd);
  Progress progress(0, "collect");
  int64_t total = 0;
  CollectSummary s = collect_trajectories(fwd, prompts, a.opt, a.out, [&](int64_t done, int64_t all) {
    if (total == 0) progress = Progress(static_cast<int>(all), "collect"), total = all;
    progress.update(static_cast<int>(done), "prompt " + std::to_string(done));
  });
  progress.finish();
  std::fprintf(stderr, "jf collect: %lld prompts collected, %lld already done, %lld blocks, %.2f iterations per block (n=%d) -> %s\n",
               static_cast<long long>(s.prompts), static_cast<long long>(s.skipped), static_cast<long long>(s.blocks),
               s.mean_iterations_per_block(), a.opt.block, a.out.c_str());
  return 0;
}

struct PackArgs {
  std::vector<std::string> inputs;
  std::string out, schedule = "linear", mask = "nc";
  // Drop responses whose repeated-4-gram share is above this: a looping response teaches that looping pays
  // (a whole-loop response is ~0.5 and more; 256 tokens of real code ~0.1-0.2).
  double max_repeat4 = 0.3;
  PackOptions opt;
};

int run_pack(PackArgs& a) {
  if (!noise_schedule_from_name(a.schedule, &a.opt.schedule))
    throw Error("--schedule must be linear, random or reverse, got '" + a.schedule + "'");
  if (!mask_kind_from_name(a.mask, &a.opt.mask))
    throw Error("--mask must be nc, nc-ic or clean-context, got '" + a.mask + "'");
  if (a.opt.window < 1) throw Error("--window must be >= 1");
  std::string text;
  if (!(a.max_repeat4 >= 0 && a.max_repeat4 <= 1)) throw Error("--max-repeat4 must be in [0, 1]");
  int64_t records = 0, sequences = 0, blocks = 0, tokens = 0, eos_blocks = 0, dropped = 0;
  double noise = 0;
  uint64_t rng_state = a.opt.seed;
  for (const std::string& in : a.inputs) {
    for (const TrajectoryRecord& r : read_trajectories(in)) {
      records++;
      int64_t repeated = 0, grams = 0;
      count_repeated_4grams(r.tokens, &repeated, &grams);
      if (grams > 0 && double(repeated) / grams > a.max_repeat4) {  // a degenerate, looping response
        dropped++;
        continue;
      }
      for (const PackedSequence& p : pack_record(r, a.opt, &rng_state)) {
        text += p.to_json() + "\n";
        sequences++;
        blocks += p.blocks();
        tokens += static_cast<int64_t>(p.tokens.size());
        eos_blocks += p.eos >= 0;
        for (int fm : p.first_mismatch) noise += double(p.n - fm) / p.n;
      }
    }
  }
  if (records > 0 && dropped == records)
    throw Error("all " + std::to_string(records) + " responses repeat more 4-grams than --max-repeat4 " +
                std::to_string(a.max_repeat4) + " allows (looping outputs); raise it to keep them");
  write_file_atomic(a.out, text.data(), text.size());
  std::fprintf(stderr, "jf pack: %lld records (%lld dropped as repetitive) -> %lld sequences, %lld block pairs (%lld ending in EOS), %lld tokens, mean noise %.3f (%s, %s) -> %s\n",
               static_cast<long long>(records), static_cast<long long>(dropped), static_cast<long long>(sequences),
               static_cast<long long>(blocks), static_cast<long long>(eos_blocks), static_cast<long long>(tokens), blocks ? noise / blocks : 0.0, a.schedule.c_str(), a.mask.c_str(), a.out.c_str());
  return 0;
}

}  // namespace

Command add_collect_command(CLI::App& app) {
  auto a = std::make_shared<CollectArgs>();
  CLI::App* cmd = app.add_subcommand("collect", "Record Jacobi trajectories of a model over a prompt set (resumable)");
  add_model_options(cmd, a->model);
  cmd->add_option("--prompts", a->prompts_file, "Prompt file (JSONL with 'prompt', or a dataset file)")->required();
  cmd->add_option("--format", a->format, "Prompt file format: auto, jsonl, humaneval, mbpp, gsm8k, text");
  cmd->add_option("--limit", a->limit, "Use only the first N prompts")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--chat", a->prompt.chat, "Wrap each prompt in the model's chat template");
  cmd->add_option("--block", a->opt.block, "Jacobi block size n (default 16)");
  cmd->add_option("-n,--n-predict", a->opt.max_new_tokens, "Tokens to generate per prompt (default 256)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--shard", a->shard, "Process only prompts with index % N == i (i/N, default 0/1)");
  cmd->add_option("--seed", a->opt.seed, "Seed of the initial draft guesses (default 1234)");
  a->opt.parallel = 8;
  cmd->add_option("--parallel", a->opt.parallel,
                  "Prompts decoded together, one forward for all of them (default 8; the file is the same for any value)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("-o,--output", a->out, "Trajectory file (JSONL; appended to, finished prompts are skipped)")->required();
  return [a] { return run_collect(*a); };
}

Command add_pack_command(CLI::App& app) {
  auto a = std::make_shared<PackArgs>();
  CLI::App* cmd = app.add_subcommand("pack", "Pack trajectories into noise-conditioned training sequences");
  cmd->add_option("--traj", a->inputs, "Trajectory file(s) from jf collect")
      ->required()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--schedule", a->schedule, "Noise schedule: linear, random, reverse (default linear)");
  cmd->add_option("--window", a->opt.window, "Schedule window w: targets linspace(0, 1, w) (default 16)");
  cmd->add_flag("!--fixed-window", a->opt.fit_window,
                "Use w as given; by default w = min(w, blocks of the response) so each response spans noise 0 .. 1");
  cmd->add_option("--mask", a->mask, "Attention mask: nc (default), nc-ic (noisy within a window, clean across) or clean-context");
  cmd->add_option("--max-repeat4", a->max_repeat4,
                  "Drop responses whose share of repeated 4-grams is above this, 1 = keep all (default 0.3: "
                  "looping responses go)");
  cmd->add_option("--context-noise-cap", a->opt.context_noise_cap,
                  "nc / nc-ic masks: an earlier noisy block noisier than this is seen clean by later noisy blocks, "
                  "in [0, 1] (default 1: no cap)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--max-len", a->opt.max_len, "Maximum packed sequence length (default 1024)")->check(CLI::Range(4, 1 << 20));
  cmd->add_option("--seed", a->opt.seed, "Seed for the random schedule (default 1)");
  cmd->add_option("-o,--output", a->out, "Packed sequences (JSONL, written atomically)")->required();
  return [a] { return run_pack(*a); };
}

}  // namespace jf::cli
