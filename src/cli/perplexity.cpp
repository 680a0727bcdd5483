// `jf perplexity`: mean next-token negative log-likelihood of a text under a model, in jf's windows (each
// starts fresh with BOS) or in llama-perplexity's chunks (`--llama-cpp`), whose numbers compare with that
// tool's; with --doc-sep, each document on its own (as jf train --doc-sep trains them). The cutting and the
// scoring are model/perplexity.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "decode/decoder.h"
#include "model/perplexity.h"

namespace jf::cli {

namespace {

struct PplArgs {
  ModelOptions model;
  std::string file, doc_sep;
  int window = 256;
  bool llama_cpp = false;
  bool json = false;
};

int run_perplexity(PplArgs& a) {
  LoadedModel lm = open_model(a.model);
  if (!lm.tokenizer) throw Error(a.model.path + ": the model has no tokenizer");
  const Tokenizer& tok = *lm.tokenizer;
  const std::string text = read_text_file(a.file);
  const int chunk = a.model.context > 0 ? a.model.context : 512;
  std::vector<ScoredContext> contexts;
  if (a.llama_cpp && !a.doc_sep.empty()) throw Error("--doc-sep scores documents apart; --llama-cpp scores one stream: give one");
  try {
    if (!a.doc_sep.empty()) {
      for (const std::string& doc : split_documents({text}, unescape_separator(a.doc_sep))) {
        std::vector<ScoredContext> w = jf_windows(tok.encode(doc, false, false), a.window, tok.bos());
        std::move(w.begin(), w.end(), std::back_inserter(contexts));
      }
    } else if (a.llama_cpp) {
      const int32_t bos = tok.spec().add_bos ? tok.bos() : -1;
      contexts = llama_cpp_chunks(tok.encode(text, true, false), chunk, bos);
    } else {
      contexts = jf_windows(tok.encode(text, false, false), a.window, tok.bos());
    }
  } catch (const Error& e) {
    throw Error(a.file + ": " + e.what());
  }
  const int capacity = a.llama_cpp ? chunk : a.window;
  std::unique_ptr<ForwardPass> forward = open_forward(a.model, *lm.model);
  ForwardPass& tf = *forward;
  KvCache cache = tf.make_cache(capacity, kv_type(a.model, tf));
  NllSum sum;
  Progress progress(static_cast<int>(contexts.size()), "perplexity");
  for (size_t i = 0; i < contexts.size(); i++) {
    score_context(tf, cache, contexts[i], sum, kPrefillChunk);
    char so_far[64];
    std::snprintf(so_far, sizeof so_far, "perplexity so far %.4f", std::exp(sum.nll / static_cast<double>(std::max<int64_t>(sum.count, 1))));
    progress.update(static_cast<int>(i + 1), so_far);
  }
  progress.finish();
  if (sum.count == 0) throw Error(a.file + ": no tokens to score");
  const double mean = sum.nll / static_cast<double>(sum.count);
  if (a.json)
    std::printf("%s\n", nlohmann::json({{"tokens", sum.count}, {"contexts", contexts.size()}, {"mean_nll", mean},
                                        {"perplexity", std::exp(mean)}})
                            .dump()
                            .c_str());
  else
    std::printf("%lld tokens in %zu contexts, mean NLL %.4f, perplexity %.4f\n", static_cast<long long>(sum.count),
                contexts.size(), mean, std::exp(mean));
  return 0;
}

}  // namespace

Command add_perplexity_command(CLI::App& app) {
  auto a = std::make_shared<PplArgs>();
  CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity of a text file under a model");
  add_model_options(cmd, a->model);
  cmd->add_option("-f,--file", a->file, "Text file")->required();
  cmd->add_option("--window", a->window, "Tokens per window, BOS included; every text token scored (default 256)")
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_flag("--llama-cpp", a->llama_cpp,
                "Score as llama-perplexity does, to compare with its numbers: chunks of -c tokens (as its -c; default "
                "512), each chunk's first token replaced by BOS, only the second half scored; needs 2 x -c tokens. "
                "llama.cpp keeps an f16 KV cache by default: add --kv-type f16 for its numbers");
  cmd->add_option("--doc-sep", a->doc_sep,
                  "Score each document on its own, from BOS: the text cut at this separator (backslash-n is a newline), "
                  "as jf train --doc-sep trains them; e.g. '\\n' for a document a line");
  cmd->add_flag("--json", a->json, "Print a JSON object");
  return [a] { return run_perplexity(*a); };
}

}  // namespace jf::cli
