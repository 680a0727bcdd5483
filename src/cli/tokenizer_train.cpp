// `jf tokenizer-train`: learn a byte-level BPE vocabulary from source files and write it as a vocabulary-only GGUF.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/timer.h"
#include "cli/commands.h"
#include "formats/gguf.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/tokenizer.h"

namespace jf::cli {

namespace {

struct TrainArgs {
  std::vector<std::string> corpus;
  std::string ext = ".py";
  size_t max_bytes = 0;
  int32_t vocab = 4096;
  std::string pre = "llama-bpe";
  int64_t min_frequency = 2;
  std::string out;
};

void print_progress(const BpeTrainProgress& p) {
  using Stage = BpeTrainProgress::Stage;
  if (p.stage == Stage::Count) {
    if (p.done == p.total) std::fprintf(stderr, "jf: split %zu documents (%.1f MB) in %.1f s\n", p.done, p.bytes / 1e6, p.seconds);
    return;
  }
  if (p.stage == Stage::Merge && p.done % 512 != 0) return;
  std::fprintf(stderr, "jf: %zu merges (%zu distinct words), last pair count %lld, %.3f tokens/byte, %.1f s\n", p.done,
               p.words, static_cast<long long>(p.last_count), p.bytes ? static_cast<double>(p.tokens) / p.bytes : 0.0,
               p.seconds);
}

// Tokens per byte of the corpus as the trained tokenizer encodes it (what a model trained on it will see).
double tokens_per_byte(const Tokenizer& tok, const std::vector<std::string>& docs) {
  uint64_t tokens = 0, bytes = 0;
  for (const auto& d : docs) {
    tokens += tok.encode(d, false, false).size();
    bytes += d.size();
  }
  return bytes ? static_cast<double>(tokens) / static_cast<double>(bytes) : 0.0;
}

int run_tokenizer_train(const TrainArgs& a) {
  BpeTrainOptions o;
  o.vocab_size = a.vocab;
  o.pre = a.pre;
  o.min_frequency = a.min_frequency;
  o.progress = print_progress;
  validate_bpe_train_options(o);  // before the corpus is read

  CorpusStats st;
  std::vector<std::string> docs = read_corpus(a.corpus, a.ext, a.max_bytes, &st);
  std::fprintf(stderr, "jf: read %zu files (%.1f MB); skipped %zu binary, %zu invalid UTF-8, %zu unreadable, %zu over budget\n",
               st.files, st.bytes / 1e6, st.skipped_binary, st.skipped_invalid_utf8, st.skipped_unreadable,
               st.skipped_budget);
  if (docs.empty()) throw Error("no '" + a.ext + "' files found under the corpus paths");

  const double t0 = now_seconds();
  Tokenizer tok(train_bpe(o, docs));
  const double secs = now_seconds() - t0;

  GgufWriter w;
  w.meta().set("general.architecture", GgufValue::of_string("llama"));
  w.meta().set("general.name", GgufValue::of_string("jf byte-level BPE (" + a.pre + ")"));
  tok.to_gguf(w.meta());
  w.write(a.out);
  std::fprintf(stderr, "jf: wrote %s: %d tokens, %zu merges, trained in %.1f s; the corpus encodes to %.3f tokens/byte\n",
               a.out.c_str(), tok.n_vocab(), tok.spec().merges.size(), secs, tokens_per_byte(tok, docs));
  if (tok.n_vocab() < a.vocab)
    std::fprintf(stderr, "jf: note: fewer tokens than --vocab %d: no pair left with count >= %lld\n", a.vocab,
                 static_cast<long long>(a.min_frequency));
  return 0;
}

}  // namespace

Command add_tokenizer_train_command(CLI::App& app) {
  auto a = std::make_shared<TrainArgs>();
  CLI::App* cmd = app.add_subcommand("tokenizer-train", "Train a byte-level BPE vocabulary on source files; write it as GGUF");
  cmd->add_option("--corpus", a->corpus, "Directory (walked in sorted order) or file to train on; repeatable")
      ->required()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--ext", a->ext, "File name extension to read under directories (default .py; \"\" for all)");
  cmd->add_option("--max-bytes", a->max_bytes, "Stop adding files at this many bytes (default 0: no limit)");
  cmd->add_option("--vocab", a->vocab, "Vocabulary size, byte and special tokens included (default 4096)")
      ->check(CLI::Range(259, 1 << 20));
  cmd->add_option("--pre", a->pre, "Pre-tokenizer: llama-bpe (default), gpt-2, qwen2, ...");
  cmd->add_option("--min-frequency", a->min_frequency, "Stop when no pair occurs this often (default 2)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-o,--output", a->out, "Output GGUF file (vocabulary only, no tensors)")->required();
  return [a] { return run_tokenizer_train(*a); };
}

}  // namespace jf::cli
