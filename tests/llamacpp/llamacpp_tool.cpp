// llama.cpp's own quantizer and chat templates, from a libllama shared library loaded at run time (its
// header is not available here), so that tests can compare jf's with the reference's.
//   llamacpp_tool LIBLLAMA_SO quantize INPUT.gguf OUTPUT.gguf FTYPE
//     llama_model_quantize with FTYPE (llama_ftype: 15 = Q4_K_M, ...). The parameters are the library's
//     defaults with only `ftype` changed: in every release it is the second 32-bit field, after `nthread`;
//     both defaults are checked first.
//   llamacpp_tool LIBLLAMA_SO chat TEMPLATE_NAME ROLE CONTENT [ROLE CONTENT ...]
//     llama_chat_apply_template with a built-in template: prints the text, the assistant's opening appended.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

// Larger than llama_model_quantize_params in any release: the library fills its prefix.
struct ParamsBlob {
  unsigned char bytes[512];
};
using DefaultParamsFn = ParamsBlob (*)();
using QuantizeFn = uint32_t (*)(const char*, const char*, const ParamsBlob*);
struct ChatMessage {  // llama_chat_message
  const char* role;
  const char* content;
};
using ApplyTemplateFn = int32_t (*)(const char*, const ChatMessage*, size_t, bool, char*, int32_t);

constexpr size_t kFtypeOffset = 4;

int fail(const std::string& why) {
  std::fprintf(stderr, "llamacpp_tool: %s\n", why.c_str());
  return 1;
}

template <typename Fn>
Fn symbol(void* lib, const char* name) {
  return reinterpret_cast<Fn>(dlsym(lib, name));
}

int quantize(void* lib, const char* input, const char* output, const char* ftype_arg) {
  auto defaults = symbol<DefaultParamsFn>(lib, "llama_model_quantize_default_params");
  auto run = symbol<QuantizeFn>(lib, "llama_model_quantize");
  if (!defaults || !run) return fail("the library lacks llama_model_quantize");
  ParamsBlob params = defaults();
  int32_t nthread = -1;
  int32_t default_ftype = -1;
  std::memcpy(&nthread, params.bytes, sizeof nthread);
  std::memcpy(&default_ftype, params.bytes + kFtypeOffset, sizeof default_ftype);
  if (nthread != 0 || (default_ftype != 7 && default_ftype != 9))  // 0 threads = all; Q8_0 now, Q5_1 before
    return fail("unexpected parameter layout (nthread " + std::to_string(nthread) + ", ftype " +
                std::to_string(default_ftype) + ")");
  const int32_t ftype = std::atoi(ftype_arg);
  std::memcpy(params.bytes + kFtypeOffset, &ftype, sizeof ftype);
  const uint32_t rc = run(input, output, &params);
  return rc == 0 ? 0 : fail("llama_model_quantize failed (" + std::to_string(rc) + ")");
}

int chat(void* lib, const char* name, int n_args, char** args) {
  auto apply = symbol<ApplyTemplateFn>(lib, "llama_chat_apply_template");
  if (!apply) return fail("the library lacks llama_chat_apply_template");
  std::vector<ChatMessage> messages;
  for (int i = 0; i + 1 < n_args; i += 2) messages.push_back({args[i], args[i + 1]});
  std::vector<char> buf(1 << 16);
  const int32_t n = apply(name, messages.data(), messages.size(), true, buf.data(), static_cast<int32_t>(buf.size()));
  if (n < 0 || n > static_cast<int32_t>(buf.size())) return fail(std::string("template '") + name + "' not supported");
  std::fwrite(buf.data(), 1, static_cast<size_t>(n), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool is_quantize = argc == 6 && std::strcmp(argv[2], "quantize") == 0;
  const bool is_chat = argc >= 6 && argc % 2 == 0 && std::strcmp(argv[2], "chat") == 0;
  if (!is_quantize && !is_chat) {
    std::fprintf(stderr, "usage: llamacpp_tool LIBLLAMA_SO quantize INPUT.gguf OUTPUT.gguf FTYPE\n"
                         "       llamacpp_tool LIBLLAMA_SO chat TEMPLATE_NAME ROLE CONTENT [ROLE CONTENT ...]\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) return fail(dlerror());
  return is_quantize ? quantize(lib, argv[3], argv[4], argv[5]) : chat(lib, argv[3], argc - 4, argv + 4);
}
