#include "model/loader.h"

#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "base/mapped_file.h"
#include "formats/gguf.h"
#include "model/hf.h"

namespace jf {

namespace fs = std::filesystem;

namespace {

bool has_gguf_magic(const std::string& path) {
  MappedFile f(path);
  return f.size() >= 4 && std::memcmp(f.data(), "GGUF", 4) == 0;
}

// llama2.c keeps the tokenizer beside the checkpoint: tokenizer.bin, or a single tok*.bin.
std::string find_llama2c_tokenizer(const std::string& model_path) {
  fs::path dir = fs::path(model_path).parent_path();
  if (dir.empty()) dir = ".";
  if (fs::exists(dir / "tokenizer.bin")) return (dir / "tokenizer.bin").string();
  std::string found;
  int count = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.path() != fs::path(model_path) && name.rfind("tok", 0) == 0 && e.path().extension() == ".bin") {
      found = e.path().string();
      count++;
    }
  }
  if (count == 1) return found;
  throw Error(model_path + ": llama2.c checkpoint needs its tokenizer; pass --tokenizer PATH/tokenizer.bin");
}

// A GGUF file's tokenizer (null when it has none), optionally padded to `n_vocab` rows; errors name the path.
std::unique_ptr<Tokenizer> gguf_tokenizer(const std::string& path, const GgufFile& f, int32_t n_vocab) {
  if (!f.meta().has("tokenizer.ggml.tokens")) return nullptr;
  try {
    std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(f.meta());
    return n_vocab > 0 ? Tokenizer::padded(std::move(tok), n_vocab) : std::move(tok);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace

LoadedModel load_model(const std::string& path, const LoadOptions& opts) {
  if (!file_exists(path)) throw Error("model '" + path + "' not found");
  LoadedModel out;
  if (is_directory(path) || fs::path(path).extension() == ".safetensors") {
    return load_hf_model(is_directory(path) ? path : fs::path(path).parent_path().string());
  }
  if (has_gguf_magic(path)) {
    std::shared_ptr<const GgufFile> f(GgufFile::open(path));
    out.model = model_from_gguf(f);
    out.tokenizer = gguf_tokenizer(path, *f, out.model->config().vocab_size);
    return out;
  }
  out.model = model_from_llama2c(path);
  const std::string tok = opts.tokenizer_path.empty() ? find_llama2c_tokenizer(path) : opts.tokenizer_path;
  out.tokenizer = Tokenizer::from_llama2c(tok, out.model->config().vocab_size);
  try {
    out.tokenizer = Tokenizer::padded(std::move(out.tokenizer), out.model->config().vocab_size);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return out;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path, const LoadOptions& opts) {
  if (!file_exists(path)) throw Error("model '" + path + "' not found");
  if (is_directory(path) || !has_gguf_magic(path)) {
    LoadedModel lm = load_model(path, opts);
    if (!lm.tokenizer) throw Error(path + ": the model has no tokenizer");
    return std::move(lm.tokenizer);
  }
  std::unique_ptr<const GgufFile> f(GgufFile::open(path));
  const GgufTensor* embedding = f->find_tensor("token_embd.weight");  // absent from vocabulary-only files
  const int32_t rows = embedding && embedding->dims.size() == 2 ? static_cast<int32_t>(embedding->dims[1]) : 0;
  std::unique_ptr<Tokenizer> tok = gguf_tokenizer(path, *f, rows);
  if (!tok) throw Error(path + ": the file has no tokenizer");
  return tok;
}

}  // namespace jf
