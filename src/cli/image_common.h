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
  std::unique_ptr<Session> session;
};

// Throws jf::Error when the model cannot be loaded or its vocabulary has no image tokens.
ImageModel open_image_model(const ModelOptions& o);

// Sampling for images: colour tokens only (every other token banned), exactly one image's worth of them.
GenerationConfig image_generation(const ImageVocab& iv, int n_vocab, const SamplingParams& sampling);

struct ImageSample {
  std::vector<int32_t> tokens;        // the image's colour tokens
  std::vector<int> forward_of_token;  // which generation forward (0-based) committed each
  GenerationStats stats;
};

ImageSample sample_image(ImageModel& m, Decoder& decoder, const std::string& caption, const GenerationConfig& cfg);

}  // namespace jf::cli
