#include "cli/options.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "base/mapped_file.h"
#include "chat/conversation.h"
#include "device/device.h"
#include "grammar/json_schema.h"
#include "model/draft_file.h"
#include "kernels/parallel.h"
#include "tokenizer/chat.h"

namespace jf::cli {

void add_model_options(CLI::App* app, ModelOptions& o) {
  app->add_option("-m,--model", o.path,
                  "Model: GGUF file, llama2.c .bin checkpoint, or Hugging Face directory (default: the default model, "
                  "models/" + std::string(kDefaultModel) + " beside the jf executable's build directory)");
  // Filled here rather than as the option's default so that --help shows no machine-specific path.
  app->parse_complete_callback([&o] {
    if (o.path.empty()) o.path = default_model_path();
  });
  app->add_option("--tokenizer", o.tokenizer, "Tokenizer for llama2.c checkpoints (default: tokenizer.bin beside it)");
  app->add_option("-t,--threads", o.threads, "Threads for the forward pass (default: all cores)")
      ->check(CLI::Range(0, 1024));
  app->add_option("-c,--ctx", o.context, "Context size in tokens (default: the model's, at most 4096)")
      ->check(CLI::Range(0, 1 << 24));
  app->add_flag("--no-panels", o.no_panels,
                "Do not repack weights into the faster panel layout at load (starts faster, generates slower; "
                "Q8_0 weights then multiply fp32 activations instead of int8 ones, so results differ slightly)");
  app->add_option("--kv-type", o.kv_type,
                  "KV cache type: f32 (exact), f16 (half the memory and the attention reads of long contexts; "
                  "results differ slightly from f32) or auto (f32 on the CPU, f16 on a GPU) (default auto)")
      ->check(CLI::IsMember({"f32", "f16", "auto"}));
  app->add_option("--draft", o.draft,
                  "Draft file for the model (its draft head, layer and chain, from jf train -o NAME.draft.gguf) "
                  "(default: MODEL.draft.gguf beside a MODEL.gguf, when there is one)");
  app->add_flag("--no-draft", o.no_draft, "Run without a draft file, even one found beside the model");
  app->add_option("--device", o.device,
                  "Device that runs the model: cpu, vulkan (the first Vulkan device), vulkan:N (see jf devices), or auto "
                  "(the first GPU, else the CPU) (default cpu)");
}

std::unique_ptr<ForwardPass> open_forward(const ModelOptions& o, Model& m) {
  std::string note;
  std::unique_ptr<ForwardPass> fwd = make_forward_pass(m, o.device, &note);
  if (!note.empty()) std::fprintf(stderr, "jf: %s\n", note.c_str());
  return fwd;
}

DType kv_type(const ModelOptions& o, const ForwardPass& fwd) {
  if (o.kv_type == "auto") return fwd.preferred_kv_type();
  return o.kv_type == "f16" ? DType::F16 : DType::F32;
}

void add_prompt_options(CLI::App* app, PromptOptions& o) {
  auto* p = app->add_option("-p,--prompt", o.prompt, "Prompt text (default: empty, generation starts from BOS)");
  app->add_option("-f,--file", o.file, "Read the prompt from a file")->excludes(p);
  app->add_flag("--chat", o.chat, "Wrap the prompt as a user message in the model's chat template");
  app->add_option("--chat-format", o.chat_format, "Chat format instead of the model's: " + chat_format_names());
  app->add_option("--system", o.system, "System message for --chat");
  app->add_option("--messages", o.messages,
                  "--chat: the earlier turns of a conversation from a JSON file (what jf chat's /save writes, or a "
                  "list of {role, content}); -p is the next user message");
  app->add_flag("--no-thinking", o.no_thinking,
                "--chat with a template that has an enable_thinking switch (Qwen3): answer without a reasoning "
                "block (the reply opens with an empty <think></think>)");
  app->add_flag("--parse-special", o.parse_special,
                "Read special-token text in the prompt (e.g. <|im_start|>) as those tokens, as llama-cli does "
                "(default: spelled out as text; --chat prompts always use the template's tokens)");
}

CLI::Option* add_sampling_options(CLI::App* app, SamplingParams& s, const std::string& seed_help) {
  auto dflt = [](double v) {
    std::ostringstream o;
    o << v;
    return " (default " + o.str() + ")";
  };
  app->add_option("--temp", s.temperature, "Sampling temperature; 0 = greedy" + dflt(s.temperature));
  app->add_option("--top-k", s.top_k, "Keep only the k most likely tokens; 0 = off" + dflt(s.top_k));
  app->add_option("--top-p", s.top_p, "Nucleus sampling mass; 1 = off" + dflt(s.top_p));
  app->add_option("--min-p", s.min_p, "Drop tokens below min-p x the top probability; 0 = off" + dflt(s.min_p));
  return app->add_option("--seed", s.seed,
                         seed_help.empty() ? "Random seed for sampling" + dflt(static_cast<double>(s.seed)) : seed_help);
}

void add_generation_options(CLI::App* app, GenerationConfig& g) {
  app->add_option("-n,--n-predict", g.max_new_tokens, "Maximum number of tokens to generate (default 256)")
      ->check(CLI::Range(0, 1 << 24));
  app->add_flag("--ignore-eos", g.ignore_eos, "Keep generating after the end-of-generation token");
}

void expand_decoder_spec(DecoderOptions& d) {
  if (d.name.find(':') != std::string::npos) d = parse_decoder_spec(d.name, d);
}

void add_decoder_options(CLI::App* app, DecoderOptions& d, bool with_name) {
  if (with_name)
    app->add_option("--decoder", d.name, "Decoding strategy: ar, jacobi, lookahead, pld, multiblock, sjd, fastcot (APPROXIMATE: not ar's output), or auto (generate: the jf tune result cached for this model and machine, else a rule from the measured cost curve); or a spec as jf bench prints it, e.g. jacobi:tree=16:draft-policy=fixed (its keys over the flags) (default ar)");
  app->add_option("--block", d.block, "jacobi/multiblock/sjd: block size n, tokens per forward at most (default 4)");
  app->add_option("--window-mode", d.running_window, "jacobi: block (draft shrinks) or running (draft refilled)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, bool>{{"block", false}, {"running", true}}));
  app->add_option("--draft-init", d.init, "Initial guesses: context, random or repeat (default context)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, DraftInit>{
          {"context", DraftInit::Context}, {"random", DraftInit::Random}, {"repeat", DraftInit::Repeat}}));
  app->add_option("--W", d.window, "lookahead: window width W (default 1)");
  app->add_option("--N", d.ngram, "lookahead: n-gram size N >= 2 (default 3)");
  app->add_option("--G", d.guesses, "lookahead: candidates verified per step and kept per key (default 1)");
  app->add_flag_callback("--no-pool-from-prompt", [&d] { d.pool_from_prompt = false; },
                         "lookahead: do not seed the n-gram pool from the text");
  app->add_option("--draft-max", d.draft_max, "pld: longest proposal, 0 = none (plain AR, for comparisons) (default 8)");
  app->add_option("--ngram-max", d.ngram_max, "pld: longest suffix looked up (default 4)");
  app->add_option_function<std::string>(
         "--draft-policy", [&d](const std::string& v) { d.draft_adaptive = v == "adaptive"; },
         "adaptive (every decoder sends only the rows that pay: drafts cut, windows, blocks and candidates dropped, "
         "from its acceptance so far and the measured cost of a row) or fixed (what the parameters say) (default adaptive)")
      ->check(CLI::IsMember({"adaptive", "fixed"}));
  app->add_option("--ngram-memory", d.ngram_memory,
                  "pld: tokens of earlier generations in this process (jf bench's earlier prompts) to draft from, "
                  "0 = only the current text (default 65536)");
  app->add_option("--ngram-corpus", d.ngram_corpus,
                  "pld: also draft from this text file (tokenized with the model's tokenizer), e.g. reference "
                  "documents or code the output is likely to quote");
  app->add_flag_callback("--no-draft-head", [&d] { d.draft_head = false; },
                "jacobi/multiblock: draft from the model's output head even when it has a draft head (the output is "
                "the same either way: drafts are always verified with the output head)");
  app->add_option("--draft-chain", d.draft_chain,
                  "jacobi/multiblock: with a draft layer, how many drafts after its first come from the layer run "
                  "again on its own output (-1: as far as the model was trained, jf.draft_chain; 0: none) (default -1)")
      ->check(CLI::Range(-1, 64));
  app->add_option("--tree", d.tree_nodes,
                  "jacobi: with a draft layer, send a tree of its guesses of up to N rows a forward instead of a chain "
                  "(its second and third guesses where it is unsure; priced by what rows cost unless "
                  "--draft-policy fixed); also samples (--temp > 0) with ar's tokens for the seed; a model without a draft "
                  "layer decodes as without it (default 0: a chain)")
      ->check(CLI::Range(0, 1024));
  app->add_option("--tree-depth", d.tree_depth, "jacobi --tree: deepest level of the tree (default 8)")->check(CLI::Range(1, 64));
  app->add_option("--tree-width", d.tree_width, "jacobi --tree: guesses per expanded node (default 4)")->check(CLI::Range(1, 64));
  app->add_option("--tree-beam", d.tree_beam, "jacobi --tree: nodes expanded per level (default 4)")->check(CLI::Range(1, 64));
  app->add_option("--K", d.max_blocks, "multiblock: blocks in flight (default 2)");
  app->add_option("--r", d.spawn_ratio,
                  "multiblock: spawn a block when the newest has min(ceil(r*n), n-1) accepted (default 0.85)");
  app->add_option("--spawn-init", d.spawn_copy,
                  "multiblock: a spawned block starts as a copy of the real-active draft tail (copy) or as the "
                  "prediction after the newest block plus guesses (predict) (default copy)")
      ->transform(CLI::CheckedTransformer(std::map<std::string, bool>{{"copy", true}, {"predict", false}}));
  app->add_flag("--pac-continue", d.pac_continue,
                "sjd: SJD-PAC adaptive continuation: after a rejection, later draft tokens are still verified and "
                "kept as the next draft (commits stay verified as in sjd; its effect on the output distribution is "
                "measured in docs/BENCHMARKS.md)");
  app->add_option_function<std::string>(
         "--pac-tree", [&d](const std::string& v) {
           try {
             parse_pac_tree(v.empty() ? "3,4" : v, &d.pac_tree_depth, &d.pac_tree_width);
           } catch (const Error& e) {
             throw CLI::ValidationError("--pac-tree", e.what());
           }
         },
         "sjd: SJD-PAC proactive drafting: after a rejection, draft a tree of K first tokens (without replacement) "
         "each D deep, verified by recursive rejection sampling (lossless) (D,K; default 3,4 when given bare)")
      ->expected(0, 1);
  app->add_option("--pac-guess", d.pac_repeat_guess,
                  "sjd, with --pac-tree: after a rejection, first try its replacement token repeated (1), or repeated as "
                  "a run of N tokens with a sampled candidate beside each (N >= 2; for images, the draft's length) "
                  "(lossless; default 0 = off)")
      ->check(CLI::Range(0, 64));
  app->add_option("--fastcot-iters", d.fastcot_iterations,
                  "fastcot (APPROXIMATE): Jacobi forwards of rationale before the answer trigger (default 32)");
  app->add_option("--answer-trigger", d.answer_trigger,
                  "fastcot: text appended after the approximate rationale to ask for the answer (default ' So the answer is')");
  app->add_option("--pool", d.pool, "multiblock: rejection-recycling pool size, 0 = off (default 4)");
}

std::string default_model_path() { return bundled_model_path(kDefaultModel); }

std::string bundled_model_path(const std::string& file) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  // build/bin/jf in a checkout; bin/jf with share/jf/models in an installation.
  for (const char* rel : {"../../models/", "../share/jf/models/", "../models/"}) {
    const std::filesystem::path p = exe.parent_path() / rel / file;
    if (std::filesystem::exists(p, ec)) return std::filesystem::weakly_canonical(p, ec).string();
  }
  return {};
}

namespace {

// --draft FILE, else MODEL.draft.gguf beside the model when it exists (said on stderr), unless --no-draft.
void attach_draft(const ModelOptions& o, Model& m) {
  if (o.no_draft) {
    if (!o.draft.empty()) throw Error("--draft and --no-draft contradict each other");
    return;
  }
  if (!o.draft.empty()) return attach_draft_file(m, o.draft);
  const std::string beside = draft_file_beside(o.path);
  if (beside.empty() || m.config().draft_head || !std::filesystem::is_regular_file(beside)) return;
  attach_draft_file(m, beside);
  std::fprintf(stderr, "jf: draft file %s (found beside the model; --no-draft runs without it)\n", beside.c_str());
}

}  // namespace

LoadedModel open_model(const ModelOptions& o) {
  if (o.path.empty())
    throw Error(std::string("no model given: pass -m MODEL (the default model, models/") + kDefaultModel +
                ", was not found beside the jf executable)");
  set_num_threads(o.threads);
  LoadOptions lo;
  lo.tokenizer_path = o.tokenizer;
  LoadedModel lm = load_model(o.path, lo);
  for (const std::string& note : lm.notes) std::fprintf(stderr, "jf: %s\n", note.c_str());
  attach_draft(o, *lm.model);
  lm.model->set_panels(!o.no_panels);
  return lm;
}

int context_size(const ModelOptions& o, const Model& m) {
  if (o.context > 0) return o.context;
  return std::min(m.config().context_length, 4096);
}

std::vector<int32_t> prompt_tokens(const PromptOptions& o, const Tokenizer& tok, std::string* prompt_text) {
  std::string text = o.file.empty() ? o.prompt : read_text_file(o.file);
  *prompt_text = text;
  if (!o.chat && !o.messages.empty()) throw Error("--messages needs --chat");
  if (!o.chat) {
    std::vector<int32_t> ids = tok.encode(text, /*add_special=*/true, o.parse_special);
    if (ids.empty() && tok.bos() >= 0) ids.push_back(tok.bos());  // empty prompt: start from BOS
    if (ids.empty()) throw Error("the prompt is empty and the vocabulary has no BOS token to start from");
    return ids;
  }
  ChatFormat fmt = detect_chat_format(tok);
  if (!o.chat_format.empty() && !chat_format_from_name(o.chat_format, &fmt))
    throw Error("unknown chat format '" + o.chat_format + "' (known: " + chat_format_names() + ")");
  if (fmt == ChatFormat::None)
    throw Error("the model has no chat template; pass --chat-format (" + chat_format_names() + ") or drop --chat");
  std::vector<ChatMessage> msgs;
  std::string system = o.system;
  if (!o.messages.empty()) {
    chat::ConversationFile earlier = chat::read_conversation(o.messages);
    if (system.empty()) system = earlier.system;
    msgs = std::move(earlier.messages);
  }
  if (!system.empty()) msgs.insert(msgs.begin(), {"system", system});
  msgs.push_back({"user", text});
  ChatOptions chat;
  chat.enable_thinking = !o.no_thinking;
  *prompt_text = render_chat(fmt, msgs, /*add_generation_prompt=*/true, tok, chat);
  return tok.encode(*prompt_text, /*add_special=*/false, /*parse_special=*/true);
}

std::vector<int32_t> read_ngram_corpus(const std::string& path, const Tokenizer& tok) {
  constexpr size_t kMaxCorpusTokens = size_t(1) << 22;  // its index takes up to ~50 bytes per token
  std::string text;
  try {
    text = read_text_file(path);
  } catch (const Error& e) {
    throw Error(std::string("--ngram-corpus: ") + e.what());
  }
  // Encoded in pieces of about 64 KB cut after a newline: encoding a whole file at once held ~50 bytes of
  // working memory per byte of text. Only a piece's first token can differ from a whole-file encoding, which
  // costs a draft at most, never an output token.
  std::vector<int32_t> tokens;
  for (std::string_view piece : text_pieces(text, size_t(64) << 10)) {
    const std::vector<int32_t> ids = tok.encode(piece, false, false);
    tokens.insert(tokens.end(), ids.begin(), ids.end());
    if (tokens.size() > kMaxCorpusTokens)
      throw Error("--ngram-corpus " + path + ": more than the " + std::to_string(kMaxCorpusTokens) +
                  " tokens supported");
  }
  return tokens;
}

void add_rule_options(CLI::App* app, RuleOptions& r) {
  app->add_option("--grammar", r.grammar_file, "Constrain the output to this GBNF grammar file (llama.cpp's notation; root rule 'root')");
  app->add_option("--json-schema", r.json_schema, "Constrain the output to JSON valid under this JSON Schema (a file, or the schema itself)");
  app->add_flag("--json-object", r.json_object, "Constrain the output to a JSON object");
  app->add_flag("--json-compact", r.json_compact, "With --json-schema or --json-object: JSON without whitespace (all but the values forced, sent as drafts)");
  app->add_flag("--no-jump-forward", r.no_jump_forward, "Do not send the text a grammar forces as drafts (same output, more forwards)");
  app->add_option("--repeat-penalty", r.repeat_penalty, "Divide the logits of the last --repeat-last-n tokens by this (1 = off)");
  app->add_option("--repeat-last-n", r.repeat_last_n, "Tokens the repeat penalty looks back over, prompt included (default 64)");
  app->add_option("--presence-penalty", r.presence_penalty, "Subtract this from the logit of every token generated so far (-2..2)");
  app->add_option("--frequency-penalty", r.frequency_penalty, "Subtract this per time a token was generated (-2..2)");
  app->add_option("--logit-bias", r.logit_bias, "TOKEN=BIAS: add BIAS (-100..100; -100 bans) to a token id's logit; repeatable");
}

namespace {
std::string read_text_file(const std::string& path, const std::string& flag) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(flag + ": cannot read '" + path + "'");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}
}  // namespace

void compile_rules(const RuleOptions& r, const Tokenizer& tok, LogitRulesSpec& spec) {
  if (!r.grammar_file.empty() + !r.json_schema.empty() + r.json_object > 1)
    throw Error("give one of --grammar, --json-schema and --json-object");
  std::string gbnf;
  if (!r.grammar_file.empty()) gbnf = read_text_file(r.grammar_file, "--grammar");
  const JsonWhitespace ws = r.json_compact ? JsonWhitespace::Compact : JsonWhitespace::Flexible;
  if (r.json_compact && !r.json_object && r.json_schema.empty()) throw Error("--json-compact goes with --json-schema or --json-object");
  if (r.json_object) gbnf = json_any_gbnf(ws);
  if (!r.json_schema.empty()) {
    const std::string text = r.json_schema[0] == '{' ? r.json_schema : read_text_file(r.json_schema, "--json-schema");
    nlohmann::ordered_json schema;
    try {
      schema = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw Error("--json-schema: not JSON: " + std::string(e.what()));
    }
    gbnf = json_schema_to_gbnf(schema, ws);
  }
  if (!gbnf.empty()) spec.grammar = compile_grammar(gbnf, tok);
  spec.jump_forward = !r.no_jump_forward;
  spec.repeat_penalty = r.repeat_penalty, spec.repeat_last_n = r.repeat_last_n;
  spec.presence_penalty = r.presence_penalty, spec.frequency_penalty = r.frequency_penalty;
  for (const std::string& b : r.logit_bias) {
    const size_t eq = b.find('=');
    try {
      size_t used = 0;
      const int id = std::stoi(b.substr(0, eq), &used);
      if (eq == std::string::npos || used != eq) throw std::invalid_argument("");
      spec.bias[id] = std::stof(b.substr(eq + 1));
    } catch (const std::logic_error&) {
      throw Error("--logit-bias: expected TOKEN=BIAS, got '" + b + "'");
    }
  }
  spec.validate(tok.n_vocab());
}

std::vector<std::string> split_documents(const std::vector<std::string>& files, const std::string& sep) {
  std::vector<std::string> docs;
  for (const std::string& f : files) {
    for (size_t s = 0; s < f.size();) {
      size_t e = f.find(sep, s);
      if (e == std::string::npos) e = f.size();
      if (e > s) docs.push_back(f.substr(s, e - s));
      s = e + sep.size();
    }
  }
  return docs;
}

std::string unescape_separator(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == 'n' || s[i + 1] == 't' || s[i + 1] == '\\')) {
      out += s[i + 1] == 'n' ? '\n' : s[i + 1] == 't' ? '\t' : '\\';
      i++;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> items;
  for (size_t s = 0, e; s <= list.size(); s = e + 1) {
    e = list.find(',', s);
    if (e == std::string::npos) e = list.size();
    if (e > s) items.push_back(list.substr(s, e - s));
  }
  return items;
}

void check_output_path(const std::string& path, const std::string& flag) {
  if (path.empty()) return;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty() && !std::filesystem::is_directory(dir))
    throw Error(flag + " " + path + ": directory " + dir.string() + " does not exist");
}

}  // namespace jf::cli
