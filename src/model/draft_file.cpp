#include "model/draft_file.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "formats/gguf.h"

namespace jf {

namespace {

constexpr const char* kType = "jf-draft";

// The base's shape keys: what a draft layer's tensors are shaped by, checked one by one for a clear message.
struct ShapeKey {
  const char* key;
  const char* what;
  int (*get)(const ModelConfig&);
};
const ShapeKey kShape[] = {
    {"jf.draft.base.dim", "embedding width", [](const ModelConfig& c) { return c.dim; }},
    {"jf.draft.base.vocab_size", "vocabulary size", [](const ModelConfig& c) { return c.vocab_size; }},
    {"jf.draft.base.n_layers", "layers", [](const ModelConfig& c) { return c.n_layers; }},
    {"jf.draft.base.n_heads", "query heads", [](const ModelConfig& c) { return c.n_heads; }},
    {"jf.draft.base.n_kv_heads", "key/value heads", [](const ModelConfig& c) { return c.n_kv_heads; }},
    {"jf.draft.base.head_dim", "head size", [](const ModelConfig& c) { return c.head_dim; }},
    {"jf.draft.base.ffn_dim", "feed-forward width", [](const ModelConfig& c) { return c.ffn_dim; }},
};

uint64_t fnv1a(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace

bool is_draft_tensor(const std::string& name) { return name.rfind("draft_", 0) == 0; }

std::string base_fingerprint(const TensorSet& tensors) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& [name, t] : tensors.tensors) {  // a std::map: sorted by name
    if (is_draft_tensor(name)) continue;
    h = fnv1a(h, name.data(), name.size());
    const uint32_t type = static_cast<uint32_t>(t.type);
    h = fnv1a(h, &type, sizeof type);
    for (int64_t d : t.dims) h = fnv1a(h, &d, sizeof d);
    const size_t bytes = t.nbytes(), piece = std::min<size_t>(64, bytes);
    for (int i = 0; i < 16 && piece > 0; i++) {
      const size_t at = (bytes - piece) * static_cast<size_t>(i) / 15;
      h = fnv1a(h, static_cast<const uint8_t*>(t.data) + at, piece);
    }
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

void write_draft_file(const std::string& path, const ModelConfig& c, const TensorSet& tensors, const std::string& fingerprint) {
  if (!c.draft_head || !tensors.find("draft_output.weight")) throw Error("cannot write a draft file: the model has no draft head");
  GgufWriter w;
  w.meta().set("general.architecture", GgufValue::of_string(kType));
  w.meta().set("general.type", GgufValue::of_string(kType));
  w.meta().set("jf.draft.base.architecture", GgufValue::of_string(arch_name(c.arch)));
  for (const ShapeKey& k : kShape) w.meta().set(k.key, GgufValue::of_u32(static_cast<uint32_t>(k.get(c))));
  w.meta().set("jf.draft.base.fingerprint", GgufValue::of_string(fingerprint));
  if (c.draft_chain > 0) w.meta().set("jf.draft_chain", GgufValue::of_u32(static_cast<uint32_t>(c.draft_chain)));
  for (const auto& [name, t] : tensors.tensors)
    if (is_draft_tensor(name)) w.add_tensor(name, t.type, t.dims, t.data);
  w.write(path);
}

void attach_draft_file(Model& model, const std::string& path) {
  std::shared_ptr<const GgufFile> file = GgufFile::open(path);
  const GgufMetadata& meta = file->meta();
  auto fail = [&](const std::string& why) { throw Error(path + ": " + why); };
  if (!is_draft_gguf(meta))
    fail("not a jf draft file (general.type is not jf-draft; a model file is given with -m, a draft file with --draft)");
  const ModelConfig& c = model.config();
  if (c.draft_head) fail("the model already has draft tensors (a combined file); give it without --draft");
  const std::string arch = meta.get_string("jf.draft.base.architecture", "");
  if (arch != arch_name(c.arch)) fail("a draft file for a " + arch + " model, and this model is " + arch_name(c.arch));
  for (const ShapeKey& k : kShape) {
    const int64_t want = meta.get_int(k.key, -1);
    if (want != k.get(c))
      fail(std::string("a draft file for another model: its base has ") + k.what + " " + std::to_string(want) + ", this model " +
           std::to_string(k.get(c)));
  }
  const std::string want = meta.get_string("jf.draft.base.fingerprint", ""), have = base_fingerprint(model.tensors());
  if (want != have)
    fail("a draft file for another model: its base's tensors have fingerprint " + want + ", this model's " + have +
         " (another model, fine-tune or quantization of it; train a draft file for this one)");
  TensorSet draft;
  for (const GgufTensor& t : file->tensors()) {
    if (!is_draft_tensor(t.name)) fail("tensor '" + t.name + "' is not a draft tensor");
    draft.tensors[t.name] = TensorRef{t.type, t.dims, t.data};
  }
  try {
    model.attach_draft(std::move(draft), static_cast<int>(meta.get_int("jf.draft_chain", 0)), file);
  } catch (const Error& e) {
    fail(e.what());
  }
  model.set_draft_source(path);
}

std::string draft_file_beside(const std::string& model_path) {
  const std::string suffix = ".gguf";
  if (model_path.size() <= suffix.size() || model_path.compare(model_path.size() - suffix.size(), suffix.size(), suffix) != 0) return "";
  if (model_path.size() > 11 && model_path.compare(model_path.size() - 11, 11, ".draft.gguf") == 0) return "";
  return model_path.substr(0, model_path.size() - suffix.size()) + ".draft.gguf";
}

bool is_draft_gguf(const GgufMetadata& meta) { return meta.get_string("general.type", "") == kType; }

bool is_draft_file(const std::string& path) { return is_draft_gguf(GgufFile::open(path)->meta()); }

}  // namespace jf
