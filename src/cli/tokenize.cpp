// `jf tokenize`: the token ids (and pieces) a model's tokenizer gives a text, as generation would encode a
// prompt. A GGUF file's tokenizer is read without its weights, so vocabulary-only files work too.
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/options.h"

namespace jf::cli {

namespace {

struct TokenizeArgs {
  std::string model;
  std::string tokenizer;
  std::string prompt;
  std::string file;
  bool ids = false;
  bool jsonl = false;
  bool parse_special = false;
  bool no_bos = false;
};

void print_ids(const std::vector<int32_t>& ids) { std::printf("%s\n", nlohmann::json(ids).dump().c_str()); }

// One line per token: the id and its bytes as a JSON string (spaces, newlines and bytes of split characters
// visible).
void print_pieces(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  for (int32_t id : ids) {
    const std::string piece = nlohmann::json(tok.token_bytes(id, /*render_special=*/true))
                                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::printf("%7d  %s\n", id, piece.c_str());
  }
}

// Each line of `path` is a JSON string; each output line the JSON array of its ids. The whole file is read
// first, so that a bad line fails before anything is printed.
void tokenize_jsonl(const Tokenizer& tok, const std::string& path, bool add_special, bool parse_special) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read '" + path + "'");
  std::vector<std::string> texts;
  std::string line;
  for (int n = 1; std::getline(in, line); n++) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_string()) throw Error(path + ":" + std::to_string(n) + ": not a JSON string");
    texts.push_back(j.get<std::string>());
  }
  for (const std::string& text : texts) print_ids(tok.encode(text, add_special, parse_special));
}

int run_tokenize(const TokenizeArgs& a) {
  if (a.jsonl && a.file.empty()) throw Error("--jsonl reads the texts from -f FILE, one JSON string per line");
  LoadOptions opts;
  opts.tokenizer_path = a.tokenizer;
  const std::unique_ptr<Tokenizer> tok = load_tokenizer(a.model, opts);
  const bool add_special = !a.no_bos;
  if (a.jsonl) {
    tokenize_jsonl(*tok, a.file, add_special, a.parse_special);
    return 0;
  }
  const std::string text = a.file.empty() ? a.prompt : read_text_file(a.file);
  const std::vector<int32_t> ids = tok->encode(text, add_special, a.parse_special);
  if (a.ids) {
    print_ids(ids);
  } else {
    print_pieces(*tok, ids);
  }
  return 0;
}

}  // namespace

Command add_tokenize_command(CLI::App& app) {
  auto a = std::make_shared<TokenizeArgs>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Show the tokens a model's tokenizer gives a text (GGUF: no weights read)");
  cmd->add_option("-m,--model", a->model,
                  "Model or vocabulary: GGUF file, llama2.c .bin checkpoint, or Hugging Face directory (default: the "
                  "default model)");
  cmd->parse_complete_callback([a] {
    if (a->model.empty()) a->model = default_model_path();
  });
  cmd->add_option("--tokenizer", a->tokenizer, "Tokenizer for llama2.c checkpoints (default: tokenizer.bin beside it)");
  auto* p = cmd->add_option("-p,--prompt", a->prompt, "Text to tokenize");
  cmd->add_option("-f,--file", a->file, "Read the text from a file")->excludes(p);
  cmd->add_flag("--ids", a->ids, "Print only the ids, as one JSON array");
  cmd->add_flag("--jsonl", a->jsonl, "-f holds one JSON string per line: print one JSON array of ids per line");
  cmd->add_flag("--parse-special", a->parse_special,
                "Read special-token text (e.g. <|im_start|>) as those tokens, as generate --parse-special");
  cmd->add_flag("--no-bos", a->no_bos, "Do not add the BOS (or EOS) tokens the tokenizer adds to a prompt");
  return [a] { return run_tokenize(*a); };
}

}  // namespace jf::cli
