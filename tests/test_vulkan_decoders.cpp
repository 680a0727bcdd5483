// Every greedy decoder returns `ar`'s tokens on the device (stories260K and the default code model, full
// blocks sent: no row pricing), a sampling decoder's tokens equal plain sampling's with the same seed, and
// the device's perplexity is within 0.1% of the CPU's.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/mapped_file.h"
#include "decode/decoder.h"
#include "decode/options.h"
#include "decode/session.h"
#include "model/convert.h"
#include "model/draft_file.h"
#include "model/guided_forward.h"
#include "model/hf.h"
#include "model/loader.h"
#include "model/quant_mix.h"
#include "model/perplexity.h"
#include "tokenizer/image_vocab.h"
#include "vulkan/vulkan_forward.h"
#include "vulkan_support.h"

namespace jf {
namespace {

// The default code model: in this checkout's models/, or JF_MODELS_DIR (the device check's bundle).
std::string code_model() {
  const char* dir = std::getenv("JF_MODELS_DIR");
  return std::string(dir ? dir : JF_SOURCE_DIR "/models") + "/pycode-ar-q8_0.gguf";
}

// A model loaded for the device (the CPU's panels off: the device reads the file's weights), with the draft
// file beside it where asked (as the CLI finds it).
LoadedModel load_for_device(const std::string& path, bool with_draft = false) {
  LoadedModel lm = load_model(path);
  if (with_draft) attach_draft_file(*lm.model, path.substr(0, path.size() - 5) + ".draft.gguf");
  lm.model->set_panels(false);
  return lm;
}

DecoderOptions dec(const std::string& spec) {
  DecoderOptions o = parse_decoder_spec(spec, DecoderOptions{});
  o.draft_adaptive = false;  // every row the decoder wants, so the device sees full blocks and trees
  return o;
}

// The decoders and shapes the device must reproduce `ar` under.
const char* kGreedySpecs[] = {"jacobi:block=4", "jacobi:block=16", "jacobi:block=16:window-mode=running", "lookahead",
                              "lookahead:W=8:N=5:G=8", "pld", "pld:draft-max=16", "multiblock:block=8", "multiblock:block=16:K=3"};

GenerationResult run(Session& s, const DecoderOptions& o, const std::vector<int32_t>& prompt, const GenerationConfig& cfg) {
  o.validate(cfg.sampling.greedy());
  return make_decoder(o)->generate(s, prompt, cfg);
}

void expect_decoders_equal_ar(const std::string& rel, const std::vector<std::string>& prompts, int n, vulkan::MatrixMath math) {
  JF_VULKAN_DEVICE(device);
  JF_SHARED_PATH(path, rel);
  LoadedModel lm = load_for_device(path);
  vulkan::VulkanForward fwd(device, lm.model->config(), lm.model->weights(), {}, math);
  Session s(fwd, 512);
  GenerationConfig cfg;
  cfg.max_new_tokens = n;
  cfg.eos_ids = lm.tokenizer->eog_ids();
  for (const std::string& p : prompts) {
    const std::vector<int32_t> prompt = lm.tokenizer->encode(p, true, false);
    const GenerationResult ar = run(s, dec("ar"), prompt, cfg);
    double rows = 0;
    for (const char* spec : kGreedySpecs) {
      const GenerationResult r = run(s, dec(spec), prompt, cfg);
      ASSERT_EQ(r.tokens, ar.tokens) << spec << " on '" << p << "'";
      ASSERT_EQ(r.stop, ar.stop) << spec;
      rows = std::max(rows, double(r.stats.n_forward_rows) / double(std::max<int64_t>(r.stats.n_forwards, 1)));
    }
    EXPECT_GT(rows, 8.0) << "no decoder sent many rows per forward: the batch path was not exercised";
  }
}

TEST(VulkanDecoders, Stories260KEveryGreedyDecoderEqualsAr) {
  expect_decoders_equal_ar("models/stories260K/stories260K.gguf",
                           {"Once upon a time", "Lily and Ben went to the park. They saw a big dog."}, 48, vulkan::MatrixMath::Fma);
}

// The same with every matrix product in fp16 tiles (with FMAs here; on matrix units where the device has them).
TEST(VulkanDecoders, Stories260KEveryGreedyDecoderEqualsArOnTiles) {
  JF_VULKAN_DEVICE(device);
  for (vulkan::MatrixMath math : test::matrix_maths(device))
    if (math != vulkan::MatrixMath::Fma) expect_decoders_equal_ar("models/stories260K/stories260K.gguf", {"Once upon a time"}, 48, math);
}

// Classifier-free guidance on the device (model/guided_forward.h): the twins' caches are device caches whose
// slot moves follow the sequence's; greedy decoders that roll back (lookahead's trees move slots) are guided ar.
TEST(VulkanDecoders, GuidedDecodersEqualGuidedAr) {
  JF_VULKAN_DEVICE(device);
  LoadedModel lm = load_for_device(JF_SOURCE_DIR "/models/emoji16-q8_0.gguf");
  const ImageVocab iv = *ImageVocab::find(*lm.tokenizer);
  vulkan::VulkanForward fwd(device, lm.model->config(), lm.model->weights());
  GuidedForward guided(fwd, iv.marker(), iv.unconditional_prefix(*lm.tokenizer), 3.0f);
  Session s(guided, 320), plain(fwd, 320);
  GenerationConfig cfg;
  cfg.max_new_tokens = 24;
  cfg.ignore_eos = true;
  for (int32_t t : iv.other_tokens(lm.model->config().vocab_size)) cfg.rules.bias[t] = -100.0f;
  const std::vector<int32_t> prompt = iv.prompt(*lm.tokenizer, "green heart");
  const GenerationResult ar = run(s, dec("ar"), prompt, cfg);
  for (const char* spec : {"lookahead", "jacobi:block=8"}) {
    const GenerationResult r = run(s, dec(spec), prompt, cfg);
    ASSERT_EQ(r.tokens, ar.tokens) << spec;
    EXPECT_LT(r.stats.n_forwards, cfg.max_new_tokens) << spec;
  }
  EXPECT_NE(run(plain, dec("ar"), prompt, cfg).tokens, ar.tokens);  // (guidance changed the pixels)
}

TEST(VulkanDecoders, CodeModelEveryGreedyDecoderEqualsAr) {
  const std::string path = code_model();
  if (!test::path_exists(path)) GTEST_FAIL() << path << " is missing";
  JF_VULKAN_DEVICE(device);
  LoadedModel lm = load_for_device(path);
  vulkan::VulkanForward fwd(device, lm.model->config(), lm.model->weights());
  Session s(fwd, 512);
  GenerationConfig cfg;
  cfg.max_new_tokens = 32;
  cfg.eos_ids = lm.tokenizer->eog_ids();
  const std::vector<int32_t> prompt = lm.tokenizer->encode("def parse_args(argv):\n    parser = argparse.ArgumentParser(", true, false);
  const GenerationResult ar = run(s, dec("ar"), prompt, cfg);
  for (const char* spec : {"jacobi:block=16", "lookahead", "pld", "multiblock:block=16:K=3"})  // 64 ms a forward on lavapipe
    ASSERT_EQ(run(s, dec(spec), prompt, cfg).tokens, ar.tokens) << spec;
  // Sampling: prompt lookup returns exactly plain sampling's tokens for a seed (as on the CPU).
  cfg.sampling.temperature = 0.8f, cfg.sampling.top_k = 40, cfg.sampling.seed = 7;
  EXPECT_EQ(run(s, dec("pld"), prompt, cfg).tokens, run(s, dec("ar"), prompt, cfg).tokens);
}

// Draft trees on the device, from the code model's draft file: grown by the device (greedy: inside each
// forward, SequenceInput::grow_tree; sampled: a level a pass, VulkanForward::row_tree; never the chain fallback
// of a backend without trees), `ar`'s tokens greedy and sampled.
TEST(VulkanDecoders, CodeModelsDraftTreesGiveArsTokens) {
  const std::string path = code_model();
  if (!test::path_exists(path)) GTEST_FAIL() << path << " is missing";
  JF_VULKAN_DEVICE(device);
  LoadedModel lm = load_for_device(path, true);
  vulkan::VulkanForward fwd(device, lm.model->config(), lm.model->weights());
  Session s(fwd, 512);
  GenerationConfig cfg;
  cfg.max_new_tokens = 20;  // (a tree's forward and its chains take ~0.5 s on lavapipe)
  cfg.eos_ids = lm.tokenizer->eog_ids();
  const std::vector<int32_t> prompt = lm.tokenizer->encode("def parse_args(argv):\n    parser = argparse.ArgumentParser(", true, false);
  const GenerationResult ar = run(s, dec("ar"), prompt, cfg);
  const GenerationResult tree = run(s, dec("jacobi:tree=16"), prompt, cfg);
  EXPECT_EQ(tree.tokens, ar.tokens);
  EXPECT_GT(tree.stats.counter("tree_nodes"), 8 * (tree.stats.n_forwards - 1)) << "the trees were not sent";
  EXPECT_EQ(tree.stats.counter("tree_chain_fallbacks"), 0) << "the device grew no tree";
  EXPECT_GT(tree.stats.counter("tree_forwards"), 8);
  EXPECT_EQ(tree.stats.counter("trees_grown_in_forward"), tree.stats.counter("tree_forwards")) << "greedy trees grow inside the forwards";
  cfg.sampling.temperature = 0.8f, cfg.sampling.top_k = 40, cfg.sampling.seed = 7;
  const GenerationResult sampled = run(s, dec("jacobi:tree=16"), prompt, cfg);
  EXPECT_EQ(sampled.tokens, run(s, dec("ar"), prompt, cfg).tokens);
  EXPECT_EQ(sampled.stats.counter("trees_grown_in_forward"), 0);
  EXPECT_GT(sampled.stats.counter("tree_nodes"), 8 * (sampled.stats.n_forwards - 1)) << "the sampled trees were not sent";
}

// The draft file's drafts are as good on the device as on the CPU: Jacobi with the draft layer's chains
// (grown inside each forward) accepts as many tokens a forward with the device's fp16 cache (what jf runs on a
// GPU) as the CPU does: drafts gone wrong on a device would still give `ar`'s output, only fewer tokens a
// forward (an H200 run gave 1.03 with priced rows, the policy or the drafts: this tells them apart).
TEST(VulkanDecoders, CodeModelsDraftsAcceptAsOnTheCpu) {
  const std::string path = code_model();
  if (!test::path_exists(path)) GTEST_FAIL() << path << " is missing";
  JF_VULKAN_DEVICE(device);
  LoadedModel lm = load_for_device(path, true);
  vulkan::VulkanForward fwd(device, lm.model->config(), lm.model->weights());
  GenerationConfig cfg;
  cfg.max_new_tokens = 24;
  cfg.eos_ids = lm.tokenizer->eog_ids();
  // (bench/prompts/code_demo.jsonl's first: 2 tokens a forward on the CPU)
  const std::vector<int32_t> prompt =
      lm.tokenizer->encode("def read_config(path):\n    \"\"\"Read a configuration file and return a dict.\"\"\"\n", true, false);
  for (const char* spec : {"jacobi:block=8", "jacobi:tree=16"}) {
    Session gpu(fwd, 512, DType::F16), cpu(*lm.model, 512);
    const GenerationResult on_gpu = run(gpu, dec(spec), prompt, cfg), on_cpu = run(cpu, dec(spec), prompt, cfg);
    ASSERT_EQ(on_gpu.tokens, on_cpu.tokens) << spec;
    EXPECT_LT(on_cpu.stats.n_forwards * 2, cfg.max_new_tokens * 3 / 2) << spec << ": the draft file accepts less than it should on the CPU";
    EXPECT_LE(on_gpu.stats.n_forwards, on_cpu.stats.n_forwards + 1) << spec << ": the device's drafts were accepted less often";
  }
}

// One decode step, one submission: every decoder's forward, its greedy tokens, the draft chain for its next
// drafts (asked for up front) and the KV moves of its last step's keep go to the device together, and a greedy
// step copies no logits back. On stories260K (no draft layer) and the default code model with its draft file
// (chains every step), fixed and priced; the chains ran inside the forwards, or the counts would prove nothing
// (the moves: VulkanForward.BatchInvariantForEveryWeightType's tree).
TEST(VulkanDecoders, EveryDecoderMakesOneSubmissionPerDecodeStep) {
  JF_VULKAN_DEVICE(device);
  JF_SHARED_PATH(stories, "models/stories260K/stories260K.gguf");
  const std::string code = code_model();
  if (!test::path_exists(code)) GTEST_FAIL() << code << " is missing";
  for (const std::string& path : {stories, code}) {
    LoadedModel lm = load_for_device(path, path == code);
    const bool drafting = lm.model->config().draft_layer;
    EXPECT_EQ(drafting, path == code);
    vulkan::VulkanForward fwd(device, lm.model->config(), lm.model->weights());
    Session s(fwd, 512);
    GenerationConfig cfg;
    cfg.max_new_tokens = 24;
    cfg.eos_ids = lm.tokenizer->eog_ids();
    const std::vector<int32_t> prompt = lm.tokenizer->encode(drafting ? "def parse_args(argv):\n    parser = argparse.ArgumentParser(" : "Once upon a time", true, false);
    const uint64_t chains0 = fwd.chains_in_forward(), trees0 = fwd.trees_in_forward();
    const int64_t V = lm.model->config().vocab_size;
    for (const DecoderOptions& o : {dec("ar"), dec("jacobi:block=8"), parse_decoder_spec("jacobi:block=8", {}), dec("multiblock:block=8:K=2"),
                                     dec("lookahead"), dec("pld"), dec("jacobi:tree=16"), parse_decoder_spec("jacobi:tree=16", {}),
                                     dec("multiblock:block=8:K=2:tree=16")}) {
      const GenerationResult r = run(s, o, prompt, cfg);
      const std::string what = path + ", " + o.name + (o.draft_adaptive ? " priced" : "");
      EXPECT_EQ(r.stats.syncs.submissions, static_cast<uint64_t>(r.stats.n_forwards)) << what;
      EXPECT_EQ(r.stats.syncs.waits, static_cast<uint64_t>(r.stats.n_forwards)) << what;
      EXPECT_EQ(r.stats.syncs.extra_fetches, 0u) << what;
      EXPECT_LT(r.stats.syncs.bytes_to_host, static_cast<uint64_t>(r.stats.n_forwards * V)) << what << ": logits came back";
    }
    if (drafting) {
      EXPECT_GT(fwd.chains_in_forward() - chains0, 20u) << "no chain ran inside a forward";
      EXPECT_GT(fwd.trees_in_forward() - trees0, 20u) << "no tree grew inside a forward";
    }
    GenerationConfig sampled = cfg;  // a sampling decoder reads its rows' logits: copied in the same submission
    sampled.sampling.temperature = 0.8f, sampled.sampling.seed = 5;
    const GenerationResult r = run(s, dec("sjd"), prompt, sampled);
    EXPECT_EQ(r.stats.syncs.submissions, static_cast<uint64_t>(r.stats.n_forwards)) << path << ", sjd";
    EXPECT_GE(r.stats.syncs.bytes_to_host, static_cast<uint64_t>(r.stats.n_forwards * V * 4)) << path << ", sjd";
  }
}

// The perplexity of `fwd` over the first `max_tokens` tokens of `text`, in windows of 256 scoring `scored` each.
double perplexity(ForwardPass& fwd, const Tokenizer& tok, const std::string& text, size_t max_tokens, int scored = 128) {
  std::vector<int32_t> ids = tok.encode(read_text_file(text), false, false);
  ids.resize(std::min(ids.size(), max_tokens));
  KvCache cache = fwd.make_cache(256);
  NllSum sum;
  for (const ScoredContext& w : jf_windows(ids, 256, tok.bos())) score_context(fwd, cache, w, sum, scored);
  return std::exp(sum.nll / double(sum.count));
}

// Perplexity on the device within 0.1% of the CPU's (same windows, same model).
TEST(VulkanDecoders, PerplexityWithinATenthOfAPercentOfTheCpu) {
  JF_VULKAN_DEVICE(device);
  JF_SHARED_PATH(text, "data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt");
  JF_SHARED_PATH(stories, "models/stories260K/stories260K.gguf");
  const std::string code = code_model();
  for (const std::string& path : {stories, code}) {
    LoadedModel lm = load_for_device(path);
    Transformer cpu(lm.model->config(), lm.model->weights());
    vulkan::VulkanForward gpu(device, lm.model->config(), lm.model->weights());
    const double want = perplexity(cpu, *lm.tokenizer, text, 600), got = perplexity(gpu, *lm.tokenizer, text, 600);
    EXPECT_NEAR(got / want, 1.0, 1e-3) << path << ": CPU " << want << ", device " << got;
  }
}

// The default code model written by jf's converter in other weight schemes, each into a temporary file.
struct CodeModelConversions {
  CodeModelConversions() : base(load_model(code_model())) {
    ts = to_gguf_layout(base.model->config(), base.model->tensors(), &cfg);
    base.tokenizer->to_gguf(meta);
  }
  // The file of `scheme` ("q4_k_m", "iq4_xs", ...), in gtest's temporary directory.
  std::string write(const std::string& scheme) const {
    const std::string path = ::testing::TempDir() + "jf_code_" + scheme + ".gguf";
    WeightScheme ws;
    if (!weight_scheme_from_name(scheme, &ws)) throw Error("no weight scheme " + scheme);
    write_model_gguf(path, cfg, convert_tensors(ts, ws, cfg), meta);
    return path;
  }
  LoadedModel base;
  ModelConfig cfg;
  TensorSet ts;
  GgufMetadata meta;
};

// Greedy Jacobi and multiblock on `fwd` (a device forward of lm) return `ar`'s first n tokens of a code opening.
void expect_decoders_as_ar(ForwardPass& fwd, const LoadedModel& lm, int n, const std::string& what) {
  Session s(fwd, 512);
  GenerationConfig gen;
  gen.max_new_tokens = n;
  gen.eos_ids = lm.tokenizer->eog_ids();
  const std::vector<int32_t> prompt = lm.tokenizer->encode("def parse_args(argv):\n    parser = argparse.ArgumentParser(", true, false);
  const GenerationResult ar = run(s, dec("ar"), prompt, gen);
  for (const char* spec : {"jacobi:block=16", "multiblock:block=16:K=3"})
    ASSERT_EQ(run(s, dec(spec), prompt, gen).tokens, ar.tokens) << what << " " << spec;
}

// The low-bit files the GPU runs like every other (issue 59): the default code model written by jf's converter
// (byte-identical to llama.cpp's quantizer) as Q2_K, Q3_K_M (mostly Q3_K), IQ4_NL and IQ4_XS. On
// each, greedy decoders return `ar`'s tokens on the device, and its perplexity is within 0.1% of the CPU's.
TEST(VulkanDecoders, LowBitFilesDecodeAsArWithTheCpusPerplexity) {
  JF_VULKAN_DEVICE(device);
  JF_SHARED_PATH(text, "data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt");
  const std::string code = code_model();
  if (!test::path_exists(code)) GTEST_FAIL() << code << " is missing";
  const CodeModelConversions conversions;
  for (const char* scheme : {"q2_k", "q3_k_m", "iq4_nl", "iq4_xs"}) {
    const std::string path = conversions.write(scheme);
    LoadedModel lm = load_for_device(path);
    vulkan::VulkanForward fwd(device, lm.model->config(), lm.model->weights());
    expect_decoders_as_ar(fwd, lm, 16, scheme);
    if (HasFatalFailure()) return;
    Transformer cpu(lm.model->config(), lm.model->weights());
    const double want = perplexity(cpu, *lm.tokenizer, text, 400), got = perplexity(fwd, *lm.tokenizer, text, 400);
    EXPECT_NEAR(got / want, 1.0, 1e-3) << scheme << ": CPU " << want << ", device " << got;
    std::remove(path.c_str());
  }
}

// A whole forward on an int8 member (matmul_family.h's -dot: inputs quantized to int8s as the CPU's int8 panels
// quantize them, which the family test checks product by product; OpSDot): the code model (Q8_0) and its Q4_K_M
// conversion (Q4_K and Q6_K) with every matrix on vec-wg32-o8-r4-dot (lavapipe's fastest vec shape) decode as
// `ar` on the device, not in the fp32 twin's bits; the Q4_K_M file scores within 0.1% of the CPU's (fp32)
// perplexity over 1,200 tokens. (Where a value sits within rounding of a half step, int8 inputs round either
// way, and the difference grows through the layers: int8 runs that differ only in fp32 rounding order score
// 0.01-0.05% apart here, the CPU's own scalar and AVX-512 int8 paths 0.04%; fewer tokens scatter more.)
TEST(VulkanDecoders, IntDotMembersDecodeAsArWithTheCpusPerplexity) {
  JF_VULKAN_DEVICE(device);
  JF_SHARED_PATH(text, "data/tinystories/TinyStories-valid_sample_Ahmedessaa.txt");
  if (!vulkan::Context(device).info().int_dot) GTEST_SKIP() << "no integer dot product on this device";
  const std::string code = code_model();
  if (!test::path_exists(code)) GTEST_FAIL() << code << " is missing";
  const std::string q4 = CodeModelConversions().write("q4_k_m");
  const vulkan::MatmulKernel dot = vulkan::parse_matmul_kernel("vec-wg32-o8-r4-dot");
  vulkan::MatmulKernel fp32 = dot;
  fp32.dot = false;
  for (const std::string& path : {code, q4}) {
    LoadedModel lm = load_for_device(path);
    vulkan::VulkanForward fwd(device, lm.model->config(), lm.model->weights(), dot);
    expect_decoders_as_ar(fwd, lm, 12, path);
    if (HasFatalFailure()) return;
    vulkan::VulkanForward fwd32(device, lm.model->config(), lm.model->weights(), fp32);
    EXPECT_NE(perplexity(fwd, *lm.tokenizer, text, 128), perplexity(fwd32, *lm.tokenizer, text, 128)) << path << ": the fp32 twin's bits";
  }
  LoadedModel lm = load_for_device(q4);
  vulkan::VulkanForward fwd(device, lm.model->config(), lm.model->weights(), dot);
  Transformer cpu(lm.model->config(), lm.model->weights());
  const double want = perplexity(cpu, *lm.tokenizer, text, 1200, 255), got = perplexity(fwd, *lm.tokenizer, text, 1200, 255);
  std::printf("%s, 1,200 tokens: perplexity on the CPU %.9g, on the device's int8 member %.9g (ratio - 1: %.2g)\n", q4.c_str(), want, got, got / want - 1);
  EXPECT_NEAR(got / want, 1.0, 1e-3) << q4 << ": CPU " << want << ", device " << got;
  std::remove(q4.c_str());
}

}  // namespace
}  // namespace jf
