// Command-line options, each declared once (flag, default, help) and shared by the subcommands that
// need them. Values are validated by the library types they fill (SamplingParams::validate, ...).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "decode/decoder.h"
#include "decode/options.h"
#include "model/loader.h"
#include "sample/sampler.h"

namespace jf::cli {

struct ModelOptions {
  std::string path;
  std::string tokenizer;
  int threads = 0;  // 0: all hardware threads
  int context = 0;  // 0: the model's trained context (capped, see context_size())
  bool no_panels = false;  // keep only the file's row-major weights (see Model::set_panels)
  std::string kv_type = "auto";  // KV cache element type: f32 (exact), f16 (see KvCache), auto (the device's)
  std::string device = "cpu";   // cpu, vulkan, vulkan:N or auto (device/device.h)
  std::string draft;            // a draft file (model/draft_file.h); "" = MODEL.draft.gguf when it exists
  bool no_draft = false;        // run without a draft file, even one beside the model
};

struct PromptOptions {
  std::string prompt;
  std::string file;
  bool chat = false;
  std::string chat_format;  // "" = from the model
  std::string system;
  std::string messages;  // --chat: earlier turns from a JSON file (jf chat's /save); the prompt is the next message
  bool parse_special = false;  // special-token text in a plain prompt becomes those tokens (as llama-cli)
  bool no_thinking = false;    // --chat with a Qwen3-style template: enable_thinking = false
};

void add_model_options(CLI::App* app, ModelOptions& o);
void add_prompt_options(CLI::App* app, PromptOptions& o);
// --temp, --top-k, --top-p, --min-p and --seed on `s`, whose values when called are the command's defaults
// (shown in the help). `seed_help` replaces the seed's description. Returns the --seed option, so that a
// command can tell whether a seed was given.
CLI::Option* add_sampling_options(CLI::App* app, SamplingParams& s, const std::string& seed_help = "");
void add_generation_options(CLI::App* app, GenerationConfig& g);
// Structured output and the other logit rules (decode/logit_rules.h), as given on the command line; compiled
// against the model's tokenizer once it is loaded.
struct RuleOptions {
  std::string grammar_file;  // GBNF
  std::string json_schema;   // a file, or the schema itself when it starts with '{'
  bool json_object = false;  // any JSON object
  bool json_compact = false; // JSON without whitespace
  bool no_jump_forward = false;
  float repeat_penalty = 1.0f, presence_penalty = 0.0f, frequency_penalty = 0.0f;
  int repeat_last_n = 64;
  std::vector<std::string> logit_bias;  // "TOKEN=BIAS"
};
void add_rule_options(CLI::App* app, RuleOptions& r);
// Fills `spec` (the grammar compiled against `tok`); throws jf::Error for an unreadable file, a bad grammar,
// schema or bias, or more than one of --grammar, --json-schema and --json-object.
void compile_rules(const RuleOptions& r, const Tokenizer& tok, LogitRulesSpec& spec);
// --decoder and every strategy's parameters. `with_name`: also declare --decoder (bench declares --decoders).
void add_decoder_options(CLI::App* app, DecoderOptions& d, bool with_name = true);
// --decoder given as a spec (name:key=value:..., as jf bench and jf tune print them): its keys over the flags'.
void expand_decoder_spec(DecoderOptions& d);
// The tokens of an --ngram-corpus file; throws jf::Error if unreadable or too large.
std::vector<int32_t> read_ngram_corpus(const std::string& path, const Tokenizer& tok);

// Backslash-n, backslash-t and a doubled backslash as the characters: a separator given on the command line
// (jf train --doc-sep, jf perplexity --doc-sep, jf sample --separator).
std::string unescape_separator(const std::string& s);
// Texts -> documents cut at every occurrence of `sep` (empty pieces dropped).
std::vector<std::string> split_documents(const std::vector<std::string>& files, const std::string& sep);
// "a,b,,c" -> {"a", "b", "c"}: a comma-separated list of decoder specs or names.
std::vector<std::string> split_list(const std::string& list);
// Throws jf::Error when `path` (given with `flag`) cannot be written because its directory does not exist:
// checked before a long run, not after it. An empty path is no output and passes.
void check_output_path(const std::string& path, const std::string& flag);
// The model used when -m is not given: the fine-tuned default code model of this checkout.
inline constexpr const char* kDefaultModel = "pycode-ar-q8_0.gguf";  // its draft file is found beside it
// Its path found relative to the running executable, or "" when it is not there.
std::string default_model_path();
// A file of the checkout's models/ (or an installation's share/jf/models/), found the same way; "" if absent.
std::string bundled_model_path(const std::string& file);
// Loads the model and applies the thread count; errors name the path (or that none was given).
LoadedModel open_model(const ModelOptions& o);
// The forward pass on --device (a note goes to stderr when --device auto falls back to the CPU).
std::unique_ptr<ForwardPass> open_forward(const ModelOptions& o, Model& m);
// KV capacity to allocate: --ctx, else the model's context capped at 4096 (memory grows with it).
int context_size(const ModelOptions& o, const Model& m);
// The KV cache element type of --kv-type.
// --kv-type for a forward pass: f32, f16, or auto (the pass's preferred_kv_type).
DType kv_type(const ModelOptions& o, const ForwardPass& fwd);
// Prompt text -> token ids (raw text gets BOS per the vocabulary; --chat renders the chat template).
std::vector<int32_t> prompt_tokens(const PromptOptions& o, const Tokenizer& tok, std::string* prompt_text);

}  // namespace jf::cli
