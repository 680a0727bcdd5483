// RGBA images: PNG read and written through libpng, and the two operations image tokens need (a background
// under transparent pixels, a box-filter downscale), plus nearest-neighbour upscaling and grids for display.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace jf {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgba;  // row-major, 4 bytes a pixel, straight (not premultiplied) alpha
  Image() = default;
  Image(int w, int h, uint32_t fill_rgba = 0xffffffffu);
  uint8_t* at(int x, int y) { return rgba.data() + (static_cast<size_t>(y) * width + x) * 4; }
  const uint8_t* at(int x, int y) const { return rgba.data() + (static_cast<size_t>(y) * width + x) * 4; }
};

// Throws jf::Error naming the path for an unreadable or malformed file.
Image read_png(const std::string& path);
// 8-bit RGBA PNG, written atomically (temp file + rename). Throws jf::Error naming the path.
void write_png(const std::string& path, const Image& img);
std::vector<uint8_t> encode_png(const Image& img);

// Alpha-blends every pixel over an opaque background colour (0xRRGGBB); the result is opaque.
Image flatten(const Image& img, uint32_t background_rgb);
// Downscale by averaging each output pixel's box of input pixels (fractional boxes weighted by coverage).
Image box_resize(const Image& img, int width, int height);
// Each pixel as a factor x factor block.
Image upscale(const Image& img, int factor);
// Images of one size side by side, `columns` a row, `gap` pixels of `background_rgb` between and around.
Image grid(const std::vector<Image>& tiles, int columns, int gap, uint32_t background_rgb);

}  // namespace jf
