// libFuzzer target: any byte string given to the GGUF parser (and, when it parses, to the model binder and
// the tokenizer loader) must produce a model or a jf::Error — never a crash, hang or out-of-bounds read.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/error.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::shared_ptr<const jf::GgufFile> f;
  try {
    f = jf::GgufFile::parse(data, size, "fuzz.gguf");
  } catch (const jf::Error&) {
    return 0;
  }
  try {
    auto m = jf::model_from_gguf(f);
  } catch (const jf::Error&) {
  }
  try {
    if (f->meta().has("tokenizer.ggml.tokens")) {
      auto t = jf::Tokenizer::from_gguf(f->meta());
      (void)t->encode("Hello world, <s> 123 \xe2\x96\x81 \xf0\x9f\x98\x80", true, true);
    }
  } catch (const jf::Error&) {
  }
  return 0;
}
