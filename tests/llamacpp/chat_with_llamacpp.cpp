// Renders a conversation with llama.cpp's built-in chat templates (llama_chat_apply_template from a libllama
// shared library loaded at run time), so that tests can compare jf's chat formats with the reference's.
// Usage: chat_with_llamacpp LIBLLAMA_SO TEMPLATE_NAME ROLE CONTENT [ROLE CONTENT ...]
// Prints the rendered text with the assistant's opening appended.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

struct ChatMessage {  // llama_chat_message
  const char* role;
  const char* content;
};
using ApplyFn = int32_t (*)(const char*, const ChatMessage*, size_t, bool, char*, int32_t);

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || (argc - 3) % 2 != 0) {
    std::fprintf(stderr, "usage: chat_with_llamacpp LIBLLAMA_SO TEMPLATE_NAME ROLE CONTENT [ROLE CONTENT ...]\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) {
    std::fprintf(stderr, "chat_with_llamacpp: %s\n", dlerror());
    return 1;
  }
  auto apply = reinterpret_cast<ApplyFn>(dlsym(lib, "llama_chat_apply_template"));
  if (!apply) {
    std::fprintf(stderr, "chat_with_llamacpp: %s lacks llama_chat_apply_template\n", argv[1]);
    return 1;
  }
  std::vector<ChatMessage> chat;
  for (int i = 3; i + 1 < argc; i += 2) chat.push_back({argv[i], argv[i + 1]});
  std::vector<char> buf(1 << 16);
  const int32_t n = apply(argv[2], chat.data(), chat.size(), true, buf.data(), static_cast<int32_t>(buf.size()));
  if (n < 0 || n > static_cast<int32_t>(buf.size())) {
    std::fprintf(stderr, "chat_with_llamacpp: template '%s' not supported (%d)\n", argv[2], n);
    return 1;
  }
  std::fwrite(buf.data(), 1, static_cast<size_t>(n), stdout);
  return 0;
}
