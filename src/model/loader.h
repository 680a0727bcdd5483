// Opens any supported model file or directory (GGUF, llama2.c checkpoint + tokenizer.bin, Hugging Face
// safetensors directory) and returns the model with its tokenizer.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace jf {

struct LoadOptions {
  std::string tokenizer_path;  // llama2.c: tokenizer.bin (default: found next to the checkpoint)
};

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;  // null when the file has no vocabulary (e.g. random models)
  std::vector<std::string> notes;        // what loading left out, a line each, for the user to see
};

// Throws jf::Error naming the path and the problem.
LoadedModel load_model(const std::string& path, const LoadOptions& opts = {});

// The tokenizer alone: a GGUF file's (vocabulary-only files included) without reading its weights, else the
// model's. Throws jf::Error when there is none.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path, const LoadOptions& opts = {});

}  // namespace jf
