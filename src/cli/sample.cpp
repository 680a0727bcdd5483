// `jf sample`: a corpus of a model's own samples, for holding a Jacobi Forcing fine-tune to its base
// (`jf train --corpus DIR --doc-sep SEP --teacher BASE`): the base's distribution on text it actually
// writes, rather than on a few kilobytes of real text. One process, one model load, seeded per sample.
#include <cstdio>
#include <map>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/prompts.h"
#include "decode/generation_batch.h"
#include "tokenizer/tokenizer.h"

namespace jf::cli {

namespace {

struct SampleArgs {
  ModelOptions model;
  GenerationConfig gen;
  std::string prompts_file, format = "auto", separator = "\\n\\n\\n", out;
  int count = 100;
  int parallel = 16;
};

int run_sample(SampleArgs& a) {
  a.gen.sampling.validate();
  if (a.count < 1) throw Error("--count must be >= 1");
  check_output_path(a.out, "-o");
  std::vector<std::string> prompts{""};  // from BOS
  if (!a.prompts_file.empty()) prompts = load_prompts(a.prompts_file, a.format);
  LoadedModel lm = open_model(a.model);
  if (!lm.tokenizer) throw Error(a.model.path + ": the model has no tokenizer; sample needs one");
  const Tokenizer& tok = *lm.tokenizer;
  a.gen.eos_ids = tok.eog_ids();
  const std::string sep = unescape_separator(a.separator);
  const uint64_t seed = a.gen.sampling.seed;
  std::vector<std::string> samples(static_cast<size_t>(a.count));
  int64_t tokens = 0;
  int done = 0;
  Progress progress(a.count, "sample");
  ArDecoder ar;  // stateless: one for every generation
  struct Prompt {
    std::vector<int32_t> tokens;
    std::string text;
  };
  std::map<int, Prompt> in_flight;  // the prompts of the samples being generated
  auto start = [&](int i, Session& session) {
    PromptOptions po;
    po.prompt = prompts[static_cast<size_t>(i) % prompts.size()];
    Prompt& p = in_flight[i];
    p.tokens = prompt_tokens(po, tok, &p.text);
    GenerationConfig gen = a.gen;  // the generation keeps its own copy
    gen.sampling.seed = seed + static_cast<uint64_t>(i);  // sample i is reproducible alone
    return std::make_unique<Generation>(ar, session, p.tokens, gen);
  };
  auto finish = [&](int i, GenerationResult&& r) {
    const Prompt p = std::move(in_flight[i]);
    in_flight.erase(i);
    StreamingDecoder text(tok, p.tokens);
    std::string continuation;
    for (int32_t t : r.tokens) continuation += text.push(t);
    continuation += text.finish();
    // Byte-level tokens can end inside a character or be a NUL byte, which would make the corpus readers skip
    // the whole file as invalid or binary: both are written as U+FFFD.
    std::string sample = valid_utf8(p.text + continuation);
    for (size_t at = sample.find('\0'); at != std::string::npos; at = sample.find('\0', at))
      sample.replace(at, 1, "\xEF\xBF\xBD");
    samples[i] = std::move(sample);
    tokens += static_cast<int64_t>(r.tokens.size());
    progress.update(++done, std::to_string(tokens) + " tokens");
  };
  std::unique_ptr<ForwardPass> forward = open_forward(a.model, *lm.model);
  ForwardPass& fwd = *forward;
  run_generation_batch(fwd, a.count, a.parallel, context_size(a.model, *lm.model), kv_type(a.model, fwd), start, finish);
  std::string corpus;
  for (int i = 0; i < a.count; i++) corpus += (i ? sep : "") + samples[i];
  progress.finish();
  corpus += "\n";
  write_file_atomic(a.out, corpus.data(), corpus.size());
  std::fprintf(stderr, "jf sample: %d samples, %lld generated tokens, %zu bytes -> %s (documents separated by '%s')\n",
               a.count, static_cast<long long>(tokens), corpus.size(), a.out.c_str(), a.separator.c_str());
  return 0;
}

}  // namespace

Command add_sample_command(CLI::App& app) {
  auto a = std::make_shared<SampleArgs>();
  a->gen.sampling.temperature = 1.0f;
  CLI::App* cmd = app.add_subcommand(
      "sample", "Write a corpus of a model's own samples (the KL text of a Jacobi Forcing fine-tune)");
  add_model_options(cmd, a->model);
  cmd->add_option("--prompts", a->prompts_file, "Openings to continue, used in turn (default: every sample from BOS)");
  cmd->add_option("--format", a->format, "Prompt file format: auto, jsonl, humaneval, mbpp, gsm8k, text");
  cmd->add_option("--count", a->count, "Number of samples (default 100)")->check(CLI::Range(1, 1 << 26));
  cmd->add_option("--parallel", a->parallel,
                  "Samples generated together, one forward for all of them (default 16; the corpus is the same "
                  "for any value)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("-n,--n-predict", a->gen.max_new_tokens, "Most tokens per sample; EOS ends one earlier (default 256)")
      ->check(CLI::Range(1, 1 << 20));
  add_sampling_options(cmd, a->gen.sampling, "Seed of sample 0; sample i uses seed + i (default 42)");
  cmd->add_option("--separator", a->separator,
                  "Text between samples, with \\n escapes: give the same to jf train --doc-sep (default \\n\\n\\n)");
  cmd->add_option("-o,--output", a->out, "Corpus file (written atomically)")->required();
  return [a] { return run_sample(*a); };
}

}  // namespace jf::cli
