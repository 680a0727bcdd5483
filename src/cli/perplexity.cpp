// `jf perplexity`: mean next-token negative log-likelihood of a text under a model, in windows of the
// context size (each window starts fresh with BOS).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "decode/decoder.h"
#include "model/transformer.h"

namespace jf::cli {

namespace {

struct PplArgs {
  ModelOptions model;
  std::string file;
  int window = 256;
  bool json = false;
};

int run_perplexity(PplArgs& a) {
  if (a.window < 2) throw Error("--window must be >= 2");
  LoadedModel lm = open_model(a.model);
  if (!lm.tokenizer) throw Error(a.model.path + ": the model has no tokenizer");
  const std::vector<int32_t> ids = lm.tokenizer->encode(read_text_file(a.file), false, false);
  const int V = lm.model->config().vocab_size, W = a.window - 1;  // each window: BOS + W text tokens
  Transformer tf(lm.model->config(), lm.model->weights());
  KvCache cache(lm.model->config(), a.window, kv_type(a.model));
  SequenceInput in;
  std::vector<int32_t> win;
  double nll = 0;
  int64_t counted = 0;
  for (size_t start = 0; start < ids.size(); start += W) {
    const size_t end = std::min(ids.size(), start + W);
    win.assign(1, lm.tokenizer->bos() >= 0 ? lm.tokenizer->bos() : ids[start]);
    win.insert(win.end(), ids.begin() + start, ids.begin() + end);
    cache.truncate(0);
    // In pieces of kPrefillChunk tokens: the logits of a whole window (window x vocab floats) can be
    // gigabytes for a large vocabulary; batch invariance makes the pieces give the same bits.
    for (size_t c0 = 0; c0 + 1 < win.size(); c0 += kPrefillChunk) {
      const size_t len = std::min<size_t>(kPrefillChunk, win.size() - 1 - c0);
      in.set_causal(&cache, std::span<const int32_t>(win).subspan(c0, len), SequenceInput::Logits::All);
      const float* logits = tf.forward(in);
      for (size_t i = 0; i < len; i++) {
        const float* row = logits + i * V;
        float mx = row[0];
        for (int v = 1; v < V; v++) mx = std::max(mx, row[v]);
        double sum = 0;
        for (int v = 0; v < V; v++) sum += std::exp(static_cast<double>(row[v] - mx));
        nll += (std::log(sum) + mx) - row[win[c0 + i + 1]];
        counted++;
      }
    }
  }
  if (counted == 0) throw Error(a.file + ": no tokens to score");
  const double mean = nll / static_cast<double>(counted);
  if (a.json)
    std::printf("%s\n", nlohmann::json({{"tokens", counted}, {"mean_nll", mean}, {"perplexity", std::exp(mean)}}).dump().c_str());
  else
    std::printf("%lld tokens, mean NLL %.4f, perplexity %.3f\n", static_cast<long long>(counted), mean, std::exp(mean));
  return 0;
}

}  // namespace

Command add_perplexity_command(CLI::App& app) {
  auto a = std::make_shared<PplArgs>();
  CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity of a text file under a model");
  add_model_options(cmd, a->model);
  cmd->add_option("-f,--file", a->file, "Text file")->required();
  cmd->add_option("--window", a->window, "Tokens per window, BOS included (default 256)");
  cmd->add_flag("--json", a->json, "Print a JSON object");
  return [a] { return run_perplexity(*a); };
}

}  // namespace jf::cli
