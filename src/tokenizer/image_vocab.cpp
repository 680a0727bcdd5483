#include "tokenizer/image_vocab.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "base/error.h"
#include "base/rng.h"

namespace jf {

namespace {

int distance2(const Rgb& a, const Rgb& b) {
  const int dr = a[0] - b[0], dg = a[1] - b[1], db = a[2] - b[2];
  return dr * dr + dg * dg + db * db;
}

bool parse_colour(const std::string& piece, Rgb* c) {
  unsigned r, g, b;
  char tail;
  if (piece.size() != 9 || std::sscanf(piece.c_str(), "<#%2x%2x%2x%c", &r, &g, &b, &tail) != 4 || tail != '>') return false;
  *c = {static_cast<uint8_t>(r), static_cast<uint8_t>(g), static_cast<uint8_t>(b)};
  return true;
}

bool parse_marker(const std::string& piece, int* w, int* h) {
  char tail;
  return piece.starts_with("<image ") && std::sscanf(piece.c_str(), "<image %dx%d%c", w, h, &tail) == 3 && tail == '>' &&
         *w > 0 && *h > 0 && *w <= 4096 && *h <= 4096;
}

}  // namespace

std::string image_marker_piece(int width, int height) {
  return "<image " + std::to_string(width) + "x" + std::to_string(height) + ">";
}

std::string colour_piece(const Rgb& c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "<#%02x%02x%02x>", c[0], c[1], c[2]);
  return buf;
}

std::optional<ImageVocab> ImageVocab::find(const Tokenizer& tok) {
  ImageVocab v;
  const VocabSpec& s = tok.spec();
  v.index_.assign(s.tokens.size(), -1);
  for (size_t i = 0; i < s.tokens.size(); i++) {
    if (s.types[i] != TokenKind::UserDefined) continue;
    int w, h;
    Rgb c;
    if (parse_marker(s.tokens[i], &w, &h)) {
      if (v.marker_ >= 0) throw Error("the vocabulary has two image markers ('" + s.tokens[v.marker_] + "', '" + s.tokens[i] + "')");
      v.marker_ = static_cast<int32_t>(i);
      v.width_ = w, v.height_ = h;
    } else if (parse_colour(s.tokens[i], &c)) {
      v.index_[i] = static_cast<int>(v.tokens_.size());
      v.tokens_.push_back(static_cast<int32_t>(i));
      v.palette_.push_back(c);
    }
  }
  if (v.marker_ < 0) return std::nullopt;
  if (v.tokens_.empty()) throw Error("the vocabulary has an image marker but no colour tokens ('<#rrggbb>')");
  return v;
}

std::vector<int32_t> ImageVocab::prompt(const Tokenizer& tok, const std::string& caption) const {
  std::vector<int32_t> ids = tok.encode(caption, /*add_special=*/true, /*parse_special=*/false);
  ids.push_back(marker_);
  return ids;
}

std::vector<int32_t> ImageVocab::unconditional_prefix(const Tokenizer& tok) const {
  std::vector<int32_t> ids = prompt(tok, "");
  ids.pop_back();  // (the marker)
  return ids;
}

std::vector<int32_t> ImageVocab::other_tokens(int n_vocab) const {
  std::vector<int32_t> out;
  for (int32_t id = 0; id < n_vocab; id++)
    if (!is_colour(id)) out.push_back(id);
  return out;
}

std::vector<int32_t> ImageVocab::encode(const Image& img) const {
  if (img.width != width_ || img.height != height_)
    throw Error("image of " + std::to_string(img.width) + "x" + std::to_string(img.height) + " pixels; the vocabulary's are " +
                std::to_string(width_) + "x" + std::to_string(height_));
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(pixels()));
  for (int y = 0; y < height_; y++)
    for (int x = 0; x < width_; x++) {
      const uint8_t* p = img.at(x, y);
      out.push_back(tokens_[static_cast<size_t>(nearest_colour(palette_, {p[0], p[1], p[2]}))]);
    }
  return out;
}

Image ImageVocab::decode(std::span<const int32_t> tokens, uint32_t missing) const {
  Image img(width_, height_, (missing << 8) | 0xffu);
  for (size_t i = 0; i < tokens.size() && i < static_cast<size_t>(pixels()); i++) {
    const int k = index_of(tokens[i]);
    if (k < 0) continue;
    uint8_t* p = img.at(static_cast<int>(i) % width_, static_cast<int>(i) / width_);
    p[0] = palette_[k][0], p[1] = palette_[k][1], p[2] = palette_[k][2];
  }
  return img;
}

int nearest_colour(const std::vector<Rgb>& palette, const Rgb& c) {
  int best = 0, best_d = std::numeric_limits<int>::max();
  for (size_t i = 0; i < palette.size(); i++) {
    const int d = distance2(palette[i], c);
    if (d < best_d) best_d = d, best = static_cast<int>(i);
  }
  return best;
}

std::vector<Rgb> fit_palette(std::span<const Rgb> pixels, int k, int iterations, uint64_t seed) {
  if (pixels.empty() || k < 1) throw Error("a palette needs pixels and at least one colour");
  Rng rng(seed);
  // k-means++ seeding: each next centre drawn with probability proportional to its squared distance.
  std::vector<Rgb> centres = {pixels[rng.below(static_cast<uint32_t>(pixels.size()))]};
  std::vector<double> d2(pixels.size());
  for (size_t i = 0; i < pixels.size(); i++) d2[i] = distance2(pixels[i], centres[0]);
  while (static_cast<int>(centres.size()) < k) {
    double total = 0;
    for (double d : d2) total += d;
    if (total <= 0) break;  // fewer distinct colours than k
    double r = rng.uniform() * total;
    size_t pick = pixels.size() - 1;
    for (size_t i = 0; i < pixels.size(); i++)
      if ((r -= d2[i]) < 0) {
        pick = i;
        break;
      }
    centres.push_back(pixels[pick]);
    for (size_t i = 0; i < pixels.size(); i++) d2[i] = std::min<double>(d2[i], distance2(pixels[i], centres.back()));
  }
  // Lloyd iterations.
  const size_t n = centres.size();
  for (int it = 0; it < iterations; it++) {
    std::vector<double> sum(n * 3, 0.0);
    std::vector<size_t> count(n, 0);
    for (const Rgb& p : pixels) {
      const size_t c = static_cast<size_t>(nearest_colour(centres, p));
      for (int ch = 0; ch < 3; ch++) sum[c * 3 + ch] += p[ch];
      count[c]++;
    }
    for (size_t c = 0; c < n; c++)
      if (count[c])
        for (int ch = 0; ch < 3; ch++) centres[c][ch] = static_cast<uint8_t>(sum[c * 3 + ch] / count[c] + 0.5);
  }
  // Distinct colours only (two centres may round to one), sorted so the palette reads dark to light.
  std::sort(centres.begin(), centres.end(), [](const Rgb& a, const Rgb& b) {
    const int la = 299 * a[0] + 587 * a[1] + 114 * a[2], lb = 299 * b[0] + 587 * b[1] + 114 * b[2];
    return la != lb ? la < lb : a < b;
  });
  centres.erase(std::unique(centres.begin(), centres.end()), centres.end());
  return centres;
}

VocabSpec with_image_tokens(VocabSpec s, const std::vector<Rgb>& palette, int width, int height) {
  auto add = [&](const std::string& piece) {
    s.tokens.push_back(piece);
    s.types.push_back(TokenKind::UserDefined);
    if (!s.scores.empty()) s.scores.push_back(0.0f);
  };
  add(image_marker_piece(width, height));
  for (const Rgb& c : palette) add(colour_piece(c));
  return s;
}

}  // namespace jf
