// What `jf imagine` and `jf image-bench` share: a text-to-image model opened with its image vocabulary, and
// one image sampled by any decoder, with the forward that committed each pixel.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cli/options.h"
#include "decode/session.h"
#include "tokenizer/image_vocab.h"

namespace jf::cli {

// The text-to-image model shipped in models/ (scripts/train_image_model.sh makes it).
inline constexpr const char* kImageModel = "emoji16-q8_0.gguf";

struct ImageModel {
  LoadedModel lm;
  ImageVocab vocab;
  std::unique_ptr<ForwardPass> forward;
  std::unique_ptr<ForwardPass> guided;  // model/guided_forward.h over `forward`; null without guidance
  std::unique_ptr<Session> session;     // what images are sampled from: guided where guidance is on
  std::unique_ptr<Session> plain;       // the model's own distribution (held-out perplexity)
};

struct ImageModelOptions {
  ModelOptions model;
  float guidance = 1.0f;  // classifier-free guidance scale (--cfg); 1: off
};

// -m (default: the shipped image model), -t, --device and --cfg, for the image commands.
void add_image_model_options(CLI::App* cmd, ImageModelOptions& o);
// Throws jf::Error when no model was given or found, it cannot be loaded, or its vocabulary has no image tokens.
ImageModel open_image_model(const ImageModelOptions& o);
// Non-empty lines of a captions file, at most `max`; throws jf::Error when unreadable or empty.
std::vector<std::string> read_captions(const std::string& path, size_t max = SIZE_MAX);

// Sampling for images: colour tokens only (every other token banned), exactly one image's worth of them.
GenerationConfig image_generation(const ImageVocab& iv, int n_vocab, const SamplingParams& sampling);

struct ImageSample {
  std::vector<int32_t> tokens;        // the image's colour tokens
  std::vector<int> forward_of_token;  // which generation forward (0-based) committed each
  GenerationStats stats;
};

ImageSample sample_image(ImageModel& m, Decoder& decoder, const std::string& caption, const GenerationConfig& cfg);

}  // namespace jf::cli
