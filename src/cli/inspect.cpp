// `jf inspect`: what a model file contains — architecture, hyper-parameters, tensors, tokenizer.
#include <cstdio>
#include <map>

#include "cli/commands.h"
#include "cli/options.h"
#include "tokenizer/chat.h"

namespace jf::cli {

namespace {

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, u++;
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", b, units[u]);
  return buf;
}

int run_inspect(const ModelOptions& o, bool list_tensors) {
  LoadedModel lm = open_model(o);
  const Model& m = *lm.model;
  const ModelConfig& c = m.config();
  std::printf("file:          %s (%s)\n", o.path.c_str(), m.format().c_str());
  std::printf("architecture:  %s%s\n", arch_name(c.arch).c_str(), c.name.empty() ? "" : (" (" + c.name + ")").c_str());
  std::printf("layers:        %d\n", c.n_layers);
  std::printf("embedding:     %d\n", c.dim);
  std::printf("heads:         %d query, %d key/value, head size %d\n", c.n_heads, c.n_kv_heads, c.head_dim);
  std::printf("feed-forward:  %d\n", c.ffn_dim);
  std::printf("vocabulary:    %d\n", c.vocab_size);
  std::printf("context:       %d\n", c.context_length);
  std::printf("rope:          %s, theta %g, %d dims%s%s\n", c.rope_style == RopeStyle::Neox ? "neox" : "interleaved",
              c.rope_theta, c.rope_dim, c.rope_freq_scale != 1.0f ? ", linear scaling" : "",
              c.rope_freq_factors.empty() ? "" : ", per-frequency factors");
  std::printf("norm epsilon:  %g\n", c.norm_eps);
  std::printf("qkv bias:      %s\n", c.attn_bias ? "yes" : "no");
  std::printf("output head:   %s\n", c.tied_output ? "tied to the token embedding" : "separate");
  if (c.draft_head) {
    std::printf("draft head:    yes%s (jacobi and multiblock draft from it, verify with the output head)\n",
                c.draft_layer ? ", on a draft layer that drafts one token further" : "");
    std::printf("draft from:    %s\n", m.draft_source().empty() ? "the model file (a combined file: only jf loads it; jf convert "
                                                                    "--split-draft makes a model and a draft file)"
                                                                  : ("the draft file " + m.draft_source()).c_str());
  }
  if (c.draft_chain > 0)
    std::printf("draft chain:   %d (the layer runs again on its own output and draft for %d more draft%s)\n",
                c.draft_chain, c.draft_chain, c.draft_chain == 1 ? "" : "s");
  if (c.qk_norm()) std::printf("q/k norm:      RMSNorm per head before RoPE\n");
  if (!c.rope_factors_long.empty())
    std::printf("longrope:      short factors up to a %d-token context, long ones beyond; cos, sin x %g\n",
                c.rope_orig_context, c.rope_attn_factor);
  if (c.sliding_window > 0)
    std::printf("sliding window: %d positions on %d of every %d layers%s\n", c.sliding_window, c.sliding_period - 1,
                c.sliding_period, c.rope_theta_local > 0 ? (", their rope theta " + std::to_string(static_cast<int>(c.rope_theta_local))).c_str() : "");
  if (c.attn_softcap > 0 || c.final_softcap > 0)
    std::printf("soft-caps:     attention scores %g, logits %g\n", c.attn_softcap, c.final_softcap);
  std::map<std::string, std::pair<int, size_t>> by_type;
  int64_t params = 0;
  for (const auto& [name, t] : m.tensors().tensors) {
    by_type[dtype_name(t.type)].first++;
    by_type[dtype_name(t.type)].second += t.nbytes();
    params += t.n_elements();
  }
  std::printf("parameters:    %.2f M in %zu tensors, %s\n", params / 1e6, m.tensors().tensors.size(),
              human_bytes(static_cast<double>(m.weight_bytes())).c_str());
  for (const auto& [type, cnt] : by_type)
    std::printf("  %-6s %4d tensors, %s\n", type.c_str(), cnt.first, human_bytes(static_cast<double>(cnt.second)).c_str());
  if (lm.tokenizer) {
    const Tokenizer& t = *lm.tokenizer;
    std::printf("tokenizer:     %s, %d tokens, bos %d, eos %d, chat format %s\n",
                t.spec().kind == VocabKind::Spm ? "sentencepiece" : ("byte-level BPE (" + t.spec().pre + ")").c_str(),
                t.n_vocab(), t.bos(), t.eos(), chat_format_name(detect_chat_format(t)).c_str());
  } else {
    std::printf("tokenizer:     none\n");
  }
  if (list_tensors) {
    std::printf("tensors:\n");
    for (const auto& [name, t] : m.tensors().tensors) {
      std::string dims;
      for (size_t i = 0; i < t.dims.size(); i++) dims += (i ? " x " : "") + std::to_string(t.dims[i]);
      std::printf("  %-32s %-5s %-16s %s\n", name.c_str(), dtype_name(t.type).c_str(), dims.c_str(),
                  human_bytes(static_cast<double>(t.nbytes())).c_str());
    }
  }
  return 0;
}

}  // namespace

Command add_inspect_command(CLI::App& app) {
  auto opts = std::make_shared<ModelOptions>();
  auto list = std::make_shared<bool>(true);
  CLI::App* cmd = app.add_subcommand("inspect", "Show a model's architecture, hyper-parameters, tensors and tokenizer");
  add_model_options(cmd, *opts);
  cmd->add_flag("!--no-tensors", *list, "Do not list the tensors");
  return [opts, list] { return run_inspect(*opts, *list); };
}

}  // namespace jf::cli
