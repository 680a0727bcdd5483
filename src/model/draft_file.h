// A draft file: jf's draft tensors (the draft head, the draft layer, the chain depth) in a GGUF of their own,
// bound to the model they were trained on, so that the model's file stays a plain model every GGUF tool
// loads (docs/TRAINING.md "A draft file"). `MODEL.draft.gguf` beside `MODEL.gguf` is found by itself.
#pragma once
#include <memory>
#include <string>

#include "model/model.h"

namespace jf {

class GgufMetadata;

// jf's draft tensors are named "draft_*" (draft_output.weight, draft_blk.*, draft_token_scale.weight, ...).
bool is_draft_tensor(const std::string& name);

// A fingerprint of a model's own tensors (every tensor but the draft ones): names, types, shapes and 16
// evenly spaced 64-byte samples of each tensor's bytes, hashed (FNV-1a, 64 bits) into 16 hex digits. Another
// model, another fine-tune or another quantization of the same model gives another fingerprint.
std::string base_fingerprint(const TensorSet& tensors);

// Writes the draft tensors ("draft_*") of `tensors` to `path`, for a base of config `cfg` (architecture, shapes,
// vocabulary size, and cfg.draft_chain for the chain depth) whose own tensors have `fingerprint`
// (base_fingerprint of the base as its file holds it). Atomic (temp file + rename).
void write_draft_file(const std::string& path, const ModelConfig& cfg, const TensorSet& tensors, const std::string& fingerprint);

// Reads the draft file at `path`, checks that it was made for `model` (throws jf::Error "PATH: ...", naming
// the check that failed) and adds its tensors to the model (Model::attach_draft). `model` must have none.
void attach_draft_file(Model& model, const std::string& path);

// The draft file named after a model file (DIR/NAME.gguf -> DIR/NAME.draft.gguf), or "" for a path that
// does not end in .gguf or is itself a draft file.
std::string draft_file_beside(const std::string& model_path);

// Whether a GGUF file's metadata, or the file at `path`, is a draft file's (general.type = jf-draft).
bool is_draft_gguf(const GgufMetadata& meta);
bool is_draft_file(const std::string& path);

}  // namespace jf
