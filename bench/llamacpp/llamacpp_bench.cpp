// llama.cpp's speed on a GGUF file through its C API, with no bindings in between: the baseline jf's GPU
// numbers are measured beside (scripts/gpu_check.sh). Built by scripts/gpu_bundle.sh against node-llama-cpp's
// prebuilt libraries and the llama.h of the llama.cpp release they were built from.
//   llamacpp_bench MODEL GPU_LAYERS THREADS TOKENS MS REPS PREFILL
// GPU_LAYERS 0 runs on the CPU alone (the same libraries: llama.cpp's CPU backend); MS e.g. 1,4,16,64. Prints one JSON line:
//   decode_tps  greedy decoding (one token a forward, its logits read and argmaxed on the host), after the first
//   forward_ms  median time of one forward of M tokens after a 64-token context, logits for every row (what a
//               parallel decoder's verification needs)
//   prefill_ms  median time of one forward of PREFILL tokens from an empty context, logits for the last row
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "llama.h"

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Bench {
  llama_context* ctx;
  llama_batch batch;
  int vocab;

  // One forward of `tokens` at positions from `pos`; every row's logits when `all`, else the last row's.
  void forward(const std::vector<llama_token>& tokens, int pos, bool all) {
    batch.n_tokens = static_cast<int32_t>(tokens.size());
    for (size_t i = 0; i < tokens.size(); i++) {
      batch.token[i] = tokens[i];
      batch.pos[i] = pos + static_cast<int>(i);
      batch.n_seq_id[i] = 1;
      batch.seq_id[i][0] = 0;
      batch.logits[i] = all || i + 1 == tokens.size();
    }
    if (llama_decode(ctx, batch) != 0) {
      std::fprintf(stderr, "llamacpp_bench: llama_decode failed\n");
      std::exit(1);
    }
    llama_synchronize(ctx);
  }
  llama_token argmax_last() {
    const float* l = llama_get_logits_ith(ctx, -1);
    return static_cast<llama_token>(std::max_element(l, l + vocab) - l);
  }
  void clear_from(int pos) { llama_memory_seq_rm(llama_get_memory(ctx), 0, pos, -1); }
};

std::vector<llama_token> filler(int n, int vocab) {
  std::vector<llama_token> t(n);
  for (int i = 0; i < n; i++) t[i] = 100 + (i * 7919) % (vocab - 200);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: llamacpp_bench MODEL GPU_LAYERS THREADS TOKENS MS REPS PREFILL\n");
    return 2;
  }
  const char* path = argv[1];
  const int gpu_layers = std::atoi(argv[2]), threads = std::atoi(argv[3]), n_tokens = std::atoi(argv[4]);
  std::vector<int> ms;
  for (std::string s = argv[5]; !s.empty();) {
    const size_t c = s.find(',');
    ms.push_back(std::atoi(s.substr(0, c).c_str()));
    s = c == std::string::npos ? "" : s.substr(c + 1);
  }
  const int reps = std::atoi(argv[6]), prefill = std::atoi(argv[7]);
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  ggml_backend_load_all_from_path(std::getenv("JF_LLAMACPP_LIBS") ? std::getenv("JF_LLAMACPP_LIBS") : ".");
  llama_backend_init();
  bool gpu = false;
  for (size_t i = 0; i < ggml_backend_dev_count(); i++)
    gpu = gpu || ggml_backend_dev_type(ggml_backend_dev_get(i)) == GGML_BACKEND_DEVICE_TYPE_GPU;
  if (gpu_layers > 0 && !gpu) {
    std::fprintf(stderr, "llamacpp_bench: llama.cpp found no GPU (are its Vulkan library and a driver there?)\n");
    return 1;
  }
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = gpu_layers;
  // GPU_LAYERS 0: the CPU alone, no GPU device even for the large products of a batch (op offload).
  ggml_backend_dev_t cpu_only[2] = {ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU), nullptr};
  if (gpu_layers == 0) mp.devices = cpu_only;
  llama_model* model = llama_model_load_from_file(path, mp);
  if (!model) {
    std::fprintf(stderr, "llamacpp_bench: cannot load %s\n", path);
    return 1;
  }
  const int max_m = std::max(prefill, *std::max_element(ms.begin(), ms.end()));
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<uint32_t>(std::max(1024, 64 + max_m + n_tokens + 16));
  cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(std::max(512, max_m));
  cp.n_threads = cp.n_threads_batch = threads;
  cp.op_offload = gpu_layers > 0;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    std::fprintf(stderr, "llamacpp_bench: cannot make a context\n");
    return 1;
  }
  Bench b{ctx, llama_batch_init(static_cast<int32_t>(cp.n_batch), 0, 1), llama_vocab_n_tokens(llama_model_get_vocab(model))};

  // Decoding: a 16-token prompt, then one token a forward.
  b.clear_from(0);
  std::vector<llama_token> prompt = filler(16, b.vocab);
  b.forward(prompt, 0, false);
  llama_token next = b.argmax_last();
  b.forward({next}, 16, true);  // the first decode step (warm-up) is not timed
  next = b.argmax_last();
  const double t0 = now_ms();
  for (int i = 0; i < n_tokens; i++) {
    b.forward({next}, 17 + i, true);
    next = b.argmax_last();
  }
  const double decode_tps = n_tokens / ((now_ms() - t0) / 1000);

  // Forwards of M rows after a 64-token context.
  b.clear_from(0);
  const std::vector<llama_token> context = filler(64, b.vocab);
  b.forward(context, 0, false);
  std::string forward_json;
  for (int m : ms) {
    const std::vector<llama_token> rows = filler(m, b.vocab);
    std::vector<double> times;
    for (int r = 0; r <= reps; r++) {
      const double s = now_ms();
      b.forward(rows, 64, true);
      if (r > 0) times.push_back(now_ms() - s);  // the first is a warm-up
      b.clear_from(64);
    }
    forward_json += (forward_json.empty() ? "" : ",") + ("\"" + std::to_string(m) + "\":" + std::to_string(median(times)));
  }
  std::vector<double> prefill_times;
  if (prefill > 0) {
    const std::vector<llama_token> rows = filler(prefill, b.vocab);
    for (int r = 0; r <= reps; r++) {
      b.clear_from(0);
      const double s = now_ms();
      b.forward(rows, 0, false);
      if (r > 0) prefill_times.push_back(now_ms() - s);
    }
  }
  std::string devices;
  for (size_t i = 0; i < ggml_backend_dev_count(); i++)
    devices += std::string(devices.empty() ? "" : "; ") + ggml_backend_dev_description(ggml_backend_dev_get(i));
  std::printf("{\"decode_tps\":%.2f,\"forward_ms\":{%s},\"prefill\":%d,\"prefill_ms\":%.3f,\"devices\":\"%s\"}\n",
              decode_tps, forward_json.c_str(), prefill, prefill > 0 ? median(prefill_times) : 0.0, devices.c_str());
  llama_batch_free(b.batch);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
