// Image tokens inside an ordinary vocabulary (ImageGPT-style colour clusters): a marker token "<image WxH>"
// opens an image of W x H pixels in raster order, and each pixel is one token "<#rrggbb>", a palette colour.
// Both are user-defined tokens, so a caption followed by an image is plain text to the tokenizer, and a
// text-to-image model is a causal LM in GGUF that every decoder and the server run unchanged.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "formats/image.h"
#include "tokenizer/tokenizer.h"

namespace jf {

using Rgb = std::array<uint8_t, 3>;

std::string image_marker_piece(int width, int height);  // "<image 16x16>"
std::string colour_piece(const Rgb& c);                 // "<#ff8800>"

// The image part of a tokenizer's vocabulary.
class ImageVocab {
 public:
  // The vocabulary's image tokens; nullopt when it has no marker. Throws jf::Error when it has a marker but
  // no colour tokens, or more than one marker.
  static std::optional<ImageVocab> find(const Tokenizer& tok);

  int width() const { return width_; }
  int height() const { return height_; }
  int pixels() const { return width_ * height_; }
  int32_t marker() const { return marker_; }
  std::span<const int32_t> colour_tokens() const { return tokens_; }
  const std::vector<Rgb>& palette() const { return palette_; }
  bool is_colour(int32_t id) const { return id >= 0 && static_cast<size_t>(id) < index_.size() && index_[id] >= 0; }
  // Palette index of a colour token (-1 for any other token).
  int index_of(int32_t id) const { return is_colour(id) ? index_[id] : -1; }

  // A caption as a text-to-image prompt: BOS (when the vocabulary adds one), the caption's tokens, the marker.
  std::vector<int32_t> prompt(const Tokenizer& tok, const std::string& caption) const;
  // What stands before the marker where the caption was dropped (BOS, or nothing): classifier-free guidance's
  // unconditional prefix (model/guided_forward.h).
  std::vector<int32_t> unconditional_prefix(const Tokenizer& tok) const;
  // Every token of a vocabulary of n_vocab that is not a colour: what image sampling bans.
  std::vector<int32_t> other_tokens(int n_vocab) const;

  // An opaque image of width x height as its colour tokens, each pixel the nearest palette colour.
  std::vector<int32_t> encode(const Image& img) const;
  // Tokens (at most pixels(); missing or non-colour ones shown as `missing_rgb`) back to an image.
  Image decode(std::span<const int32_t> tokens, uint32_t missing_rgb = 0xff00ff) const;

 private:
  int width_ = 0, height_ = 0;
  int32_t marker_ = -1;
  std::vector<int32_t> tokens_;  // palette order
  std::vector<Rgb> palette_;
  std::vector<int> index_;       // token id -> palette index, -1 elsewhere
};

// k-means colour clusters (k-means++ seeding from `seed`, then `iterations` Lloyd steps) of the pixels.
std::vector<Rgb> fit_palette(std::span<const Rgb> pixels, int k, int iterations, uint64_t seed);
// Index of the palette colour nearest to c (squared RGB distance; the lowest index among equals).
int nearest_colour(const std::vector<Rgb>& palette, const Rgb& c);
// A text vocabulary with the marker and one token per palette colour appended as user-defined tokens.
VocabSpec with_image_tokens(VocabSpec text, const std::vector<Rgb>& palette, int width, int height);

}  // namespace jf
