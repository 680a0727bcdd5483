// config.json of a Hugging Face model directory, as the loader (model/hf.h) needs it: the model's config and
// which checkpoint class it came from (a multimodal one keeps its text model under prefixed tensor names).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "model/config.h"

namespace jf {

struct HfArch {
  Arch arch;
  const char* class_name;   // "architectures"[0]
  const char* model_type;
  bool multimodal = false;  // the text model's keys sit in text_config, its tensors under a prefix
};

struct HfConfig {
  ModelConfig cfg;
  const HfArch* arch;
};

// Throws jf::Error naming the file and the key.
HfConfig read_hf_config(const std::string& dir);

// A JSON object from a file; jf::Error naming the file when it is not one.
nlohmann::json parse_json_file(const std::string& path);

}  // namespace jf
