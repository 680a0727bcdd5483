// `jf chat`: a conversation in the terminal (or, from a pipe, one turn per line), streamed as it is decoded,
// on a kept KV cache (src/chat), with a lossless sampling decoder and slash commands.
#include <unistd.h>

#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "base/error.h"
#include "chat/conversation.h"
#include "cli/commands.h"
#include "cli/line_reader.h"
#include "cli/options.h"
#include "tokenizer/tokenizer.h"
#include "tune/tuner.h"

namespace jf::cli {

namespace {

struct ChatArgs {
  ModelOptions model;
  PromptOptions prompt;  // --chat-format, --system, --no-thinking
  GenerationConfig gen;
  RuleOptions rules;  // every answer under the grammar, biases and penalties
  DecoderOptions decoder;
  CLI::Option* seed_flag = nullptr;
  CLI::Option* model_flag = nullptr;
  std::string history;
  bool no_history = false;
};

constexpr const char* kHelp =
    "Commands:\n"
    "  /help            this list\n"
    "  /reset           forget the conversation (the system text stays)\n"
    "  /system TEXT     set the system text (empty: none); applies from the next answer\n"
    "  /decoder SPEC    decode with SPEC, e.g. pld, lookahead:W=4:N=3:G=4, sjd:block=4, ar, auto\n"
    "  /stats           tokens, tokens/forward, tokens/s and cache reuse of the last answer\n"
    "  /save FILE       write the conversation as JSON\n"
    "  /load FILE       read a conversation written by /save (or a JSON list of {role, content})\n"
    "  /exit            leave (or Ctrl-D)\n"
    "Input: end a line with \\ to continue on the next one, or wrap several lines in \"\"\" ... \"\"\".\n"
    "Ctrl-C stops an answer; at the prompt it exits.\n";

// Decoders whose sampled tokens are exactly ar's with the same seed: they sample each position first and
// keep a draft only where it matches (docs/ARCHITECTURE.md); sjd is lossless in distribution, on request.
bool samples(const DecoderOptions& d) {
  return d.name == "ar" || d.name == "pld" || d.name == "lookahead" || (d.name == "jacobi" && d.tree_nodes > 0);
}

// `auto`: the tuned or rule-chosen decoder for this model and machine; for sampling, one that samples.
DecoderOptions resolve_decoder(const DecoderOptions& d, const ModelOptions& m, ForwardPass& fwd, bool greedy,
                               std::string* why) {
  if (d.name != "auto") return d;
  DecoderOptions r = parse_decoder_spec(tune::auto_decoder(m.path, fwd, why), d);
  if (!greedy && !samples(r)) {
    *why += "; '" + r.name + "' is greedy only, so pld for sampling";
    r = parse_decoder_spec("pld", d);
  }
  return r;
}

// The model's template, --chat-format, or none (completion mode): for `--chat-format none`, and for the
// default model, a code model whose vocabulary reserves ChatML's markers but which never saw a conversation.
ChatFormat chat_format(const PromptOptions& p, const Tokenizer& tok, bool default_model) {
  if (p.chat_format == "none" || (p.chat_format.empty() && default_model)) return ChatFormat::None;
  ChatFormat fmt = detect_chat_format(tok);
  if (!p.chat_format.empty() && !chat_format_from_name(p.chat_format, &fmt))
    throw Error("unknown chat format '" + p.chat_format + "' (known: " + chat_format_names() + ", none)");
  return fmt;
}

std::string history_path(const ChatArgs& a) {
  if (a.no_history) return "";
  if (!a.history.empty()) return a.history;
  return tune::cache_dir() + "/chat-history";
}

void print_stats(const chat::TurnStats& t, bool any) {
  if (!any) {
    std::printf("no answer yet\n");
    return;
  }
  const GenerationStats& s = t.result.stats;
  std::printf("last answer: %d tokens in %lld forwards (%.2f tokens/forward), %.1f tokens/s, decoder %s, seed %llu, "
              "stop: %s\n",
              s.n_tokens, static_cast<long long>(s.n_forwards), s.tpf(), s.tps(), t.decoder.c_str(),
              static_cast<unsigned long long>(t.seed), t.interrupted ? "interrupted" : stop_reason_name(t.result.stop).c_str());
  std::printf("prompt: %d tokens, %d reused from the cache, %d prefilled in %.3f s\n", t.prompt_tokens,
              t.reused_tokens, t.prefilled_tokens, s.prefill_seconds);
}

class ChatLoop {
 public:
  ChatLoop(ChatArgs& a, chat::Conversation& conv, LineReader& in, bool terminal)
      : a_(a), conv_(conv), in_(in), terminal_(terminal) {}

  void run() {
    std::string text;
    while (read_message(&text)) {
      if (text.empty()) continue;
      if (text[0] == '/' && text.rfind("//", 0) != 0) {
        if (!command(text)) return;
        continue;
      }
      ask(text[0] == '/' ? text.substr(1) : text);  // "//x" sends "/x"
    }
    if (terminal_) std::printf("\n");
  }

 private:
  // One message: a line, lines joined by a trailing backslash, or a """ block. False at the end of input.
  bool read_message(std::string* out) {
    out->clear();
    std::string line;
    if (!in_.read("> ", &line)) return false;
    if (line == "\"\"\"") {
      std::string block;
      while (in_.read("... ", &line) && line != "\"\"\"") block += (block.empty() ? "" : "\n") + line;
      if (interrupt_requested().load()) return false;
      *out = block;
    } else {
      while (!line.empty() && line.back() == '\\') {
        line.pop_back();
        *out += line + "\n";
        if (!in_.read("... ", &line)) return false;
      }
      *out += line;
    }
    in_.remember(*out);
    return true;
  }

  void ask(const std::string& message) {
    chat::TurnStats t;
    try {
      t = conv_.answer(message, [](const std::string& piece) {
        std::fputs(piece.c_str(), stdout);
        std::fflush(stdout);
      }, &interrupt_requested());
    } catch (const Error& e) {
      std::fprintf(stderr, "jf: %s\n", e.what());
      return;
    }
    std::printf("\n");
    std::fflush(stdout);
    if (t.dropped_messages > 0)
      std::fprintf(stderr, "[context full: the %d oldest messages were dropped; the system text is kept]\n",
                   t.dropped_messages);
    if (t.interrupted) std::fprintf(stderr, "[interrupted]\n");
    else if (t.result.stop == StopReason::ContextFull) std::fprintf(stderr, "[context full: the answer was cut]\n");
    else if (t.result.stop == StopReason::Length) std::fprintf(stderr, "[stopped at -n %d tokens]\n", a_.gen.max_new_tokens);
    interrupt_requested().store(false);
    last_ = std::move(t);
    answered_ = true;
  }

  // False when the command ends the conversation.
  bool command(const std::string& line) {
    const size_t space = line.find(' ');
    const std::string name = line.substr(0, space);
    std::string arg = space == std::string::npos ? "" : line.substr(space + 1);
    arg.erase(0, arg.find_first_not_of(' '));
    if (name == "/exit" || name == "/quit" || name == "/bye") return false;
    try {
      run_command(name, arg);
    } catch (const Error& e) {
      std::printf("error: %s\n", e.what());
    }
    std::fflush(stdout);
    return true;
  }

  void run_command(const std::string& name, const std::string& arg) {
    if (name == "/help") {
      std::fputs(kHelp, stdout);
    } else if (name == "/reset") {
      conv_.reset();
      std::printf("conversation cleared\n");
    } else if (name == "/system") {
      conv_.set_system(arg);
      std::printf(arg.empty() ? "system text removed\n" : "system text set\n");
    } else if (name == "/stats") {
      print_stats(last_, answered_);
    } else if (name == "/save") {
      need_arg(name, arg);
      conv_.save(arg);
      std::printf("saved %zu messages to %s\n", conv_.messages().size(), arg.c_str());
    } else if (name == "/load") {
      need_arg(name, arg);
      conv_.load(arg);
      std::printf("loaded %zu messages from %s\n", conv_.messages().size(), arg.c_str());
    } else if (name == "/decoder") {
      set_decoder(arg);
    } else {
      std::printf("unknown command %s (/help lists them; start a message with // to send a leading /)\n", name.c_str());
    }
  }

  static void need_arg(const std::string& name, const std::string& arg) {
    if (arg.empty()) throw Error(name + " needs a file name");
  }

  void set_decoder(const std::string& spec) {
    if (spec.empty()) throw Error("/decoder needs a spec, e.g. pld or lookahead:W=4:N=3:G=4 (now: " + conv_.decoder_name() + ")");
    std::string why;
    const DecoderOptions d = resolve_decoder(parse_decoder_spec(spec, a_.decoder), a_.model,
                                             conv_.session().forward_pass(), a_.gen.sampling.greedy(), &why);
    conv_.set_decoder(d);
    std::printf("decoder %s%s\n", conv_.decoder_name().c_str(), why.empty() ? "" : (" (" + why + ")").c_str());
  }

  ChatArgs& a_;
  chat::Conversation& conv_;
  LineReader& in_;
  bool terminal_;
  chat::TurnStats last_;
  bool answered_ = false;
};

int run_chat(ChatArgs& a) {
  a.gen.sampling.validate();
  expand_decoder_spec(a.decoder);
  if (a.decoder.name != "auto") a.decoder.validate(a.gen.sampling.greedy());
  LoadedModel lm = open_model(a.model);
  if (!lm.tokenizer) throw Error(a.model.path + ": the model has no tokenizer; chat needs one");
  const Tokenizer& tok = *lm.tokenizer;
  compile_rules(a.rules, tok, a.gen.rules);
  chat::ConversationOptions opts;
  opts.format = chat_format(a.prompt, tok, a.model_flag->count() == 0);
  opts.chat.enable_thinking = !a.prompt.no_thinking;
  opts.gen = a.gen;
  opts.fixed_seed = a.seed_flag->count() > 0;
  DecoderOptions first = a.decoder;
  first.name = "ar";  // replaced below once the session exists (auto measures its forward)
  std::unique_ptr<ForwardPass> fwd = open_forward(a.model, *lm.model);
  chat::Conversation conv(*fwd, tok, context_size(a.model, *lm.model), kv_type(a.model, *fwd), opts, first);
  conv.set_system(a.prompt.system);
  std::string why;
  conv.set_decoder(resolve_decoder(a.decoder, a.model, conv.session().forward_pass(), a.gen.sampling.greedy(), &why));

  const bool terminal = isatty(STDIN_FILENO);
  const SamplingParams& s = a.gen.sampling;
  std::fprintf(stderr, "jf chat: %s, %s, context %d tokens\n", a.model.path.c_str(),
               opts.format == ChatFormat::None
                   ? "completion mode (each message is appended to one text that the model continues; --chat-format "
                     "picks a chat template)"
                   : ("chat format " + chat_format_name(opts.format)).c_str(),
               conv.session().context_size());
  std::fprintf(stderr, "decoder %s%s; temp %.2f, top-k %d, top-p %.2f, min-p %.2f, %s\n", conv.decoder_name().c_str(),
               why.empty() ? "" : (" (" + why + ")").c_str(), s.temperature, s.top_k, s.top_p, s.min_p,
               opts.fixed_seed ? ("seed " + std::to_string(s.seed)).c_str() : "a fresh seed per answer (/stats shows it)");
  if (terminal) std::fprintf(stderr, "/help for commands, Ctrl-C stops an answer, Ctrl-D exits\n");

  install_interrupt_handler();
  std::unique_ptr<LineReader> reader = open_line_reader(terminal, terminal ? history_path(a) : "");
  ChatLoop(a, conv, *reader, terminal).run();
  return 0;
}

}  // namespace

Command add_chat_command(CLI::App& app) {
  auto args = std::make_shared<ChatArgs>();
  // The sampling defaults of the ecosystem's chat tools; every flag overrides them.
  args->gen.sampling.temperature = 0.8f;
  args->gen.sampling.top_k = 40;
  args->gen.sampling.top_p = 0.95f;
  args->gen.sampling.min_p = 0.05f;
  args->gen.max_new_tokens = 512;
  args->decoder.name = "auto";
  CLI::App* cmd = app.add_subcommand("chat", "Talk with a model in the terminal (or send it lines through a pipe)");
  cmd->footer(std::string("\n") + kHelp);
  add_model_options(cmd, args->model);
  args->model_flag = cmd->get_option("-m");
  cmd->add_option("--chat-format", args->prompt.chat_format,
                  "Chat format instead of the model's: " + chat_format_names() +
                      ", or none (completion mode: the messages are one text the model continues; the default for "
                      "the default model, a code-completion model)");
  cmd->add_option("--system", args->prompt.system, "System text at the start of the conversation");
  cmd->add_flag("--no-thinking", args->prompt.no_thinking,
                "With a template that has an enable_thinking switch (Qwen3): answer without a reasoning block");
  cmd->add_option("-n,--n-predict", args->gen.max_new_tokens, "Most tokens per answer (default 512)")
      ->check(CLI::Range(1, 1 << 24));
  args->seed_flag = add_sampling_options(cmd, args->gen.sampling,
                                         "Sample every answer with this seed (default: a fresh one per answer, shown by /stats)");
  add_rule_options(cmd, args->rules);
  add_decoder_options(cmd, args->decoder);
  cmd->get_option("--decoder")
      ->description("Decoding strategy, lossless: auto (default: the jf tune result for this model and machine, else a "
                    "rule from the measured cost of a row; for sampling one of ar, pld, lookahead, which return ar's "
                    "tokens for the same seed), ar, pld, lookahead, sjd (sampling), jacobi / multiblock (greedy only)");
  cmd->add_option("--history", args->history, "Line history file (default ~/.cache/jf/chat-history)");
  cmd->add_flag("--no-history", args->no_history, "Keep no line history on disk");
  return [args] {
    // The line editor reads UTF-8 input as characters; a bare C locale would split them into bytes.
    const char* locale = std::setlocale(LC_CTYPE, "");
    if (!locale || std::string(locale) == "C" || std::string(locale) == "POSIX") std::setlocale(LC_CTYPE, "C.UTF-8");
    return run_chat(*args);
  };
}

}  // namespace jf::cli
