// Quantizes a GGUF model with llama.cpp's own quantizer (llama_model_quantize from a libllama shared
// library loaded at run time), so that tests can compare jf's quantizer and loader with the reference's.
// Usage: quantize_with_llamacpp LIBLLAMA_SO INPUT.gguf OUTPUT.gguf FTYPE
//
// FTYPE is llama.cpp's llama_ftype number (15 = Q4_K_M, ...). llama.cpp's header is not available here, so
// the parameters are the library's own defaults with only `ftype` changed: in every release since the
// struct was introduced it is the second 32-bit field, after `nthread`; both defaults are checked first.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// Larger than llama_model_quantize_params in any release: the library fills its prefix.
struct ParamsBlob {
  unsigned char bytes[512];
};
using DefaultParamsFn = ParamsBlob (*)();
using QuantizeFn = uint32_t (*)(const char*, const char*, const ParamsBlob*);

constexpr size_t kFtypeOffset = 4;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: quantize_with_llamacpp LIBLLAMA_SO INPUT.gguf OUTPUT.gguf FTYPE\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) {
    std::fprintf(stderr, "quantize_with_llamacpp: %s\n", dlerror());
    return 1;
  }
  auto defaults = reinterpret_cast<DefaultParamsFn>(dlsym(lib, "llama_model_quantize_default_params"));
  auto quantize = reinterpret_cast<QuantizeFn>(dlsym(lib, "llama_model_quantize"));
  if (!defaults || !quantize) {
    std::fprintf(stderr, "quantize_with_llamacpp: %s lacks llama_model_quantize\n", argv[1]);
    return 1;
  }
  ParamsBlob params = defaults();
  int32_t nthread = -1;
  int32_t default_ftype = -1;
  std::memcpy(&nthread, params.bytes, sizeof nthread);
  std::memcpy(&default_ftype, params.bytes + kFtypeOffset, sizeof default_ftype);
  if (nthread != 0 || (default_ftype != 7 && default_ftype != 9)) {  // 0 threads = all; Q8_0 now, Q5_1 before
    std::fprintf(stderr, "quantize_with_llamacpp: unexpected parameter layout (nthread %d, ftype %d)\n", nthread,
                 default_ftype);
    return 1;
  }
  const int32_t ftype = std::atoi(argv[4]);
  std::memcpy(params.bytes + kFtypeOffset, &ftype, sizeof ftype);
  const uint32_t rc = quantize(argv[2], argv[3], &params);
  if (rc != 0) std::fprintf(stderr, "quantize_with_llamacpp: llama_model_quantize failed (%u)\n", rc);
  return rc == 0 ? 0 : 1;
}
