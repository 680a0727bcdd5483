#include "formats/image.h"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/error.h"
#include "base/mapped_file.h"

namespace jf {

Image::Image(int w, int h, uint32_t fill) : width(w), height(h), rgba(static_cast<size_t>(w) * h * 4) {
  const uint8_t px[4] = {static_cast<uint8_t>(fill >> 24), static_cast<uint8_t>(fill >> 16), static_cast<uint8_t>(fill >> 8),
                         static_cast<uint8_t>(fill)};
  for (size_t i = 0; i < rgba.size(); i += 4) std::memcpy(&rgba[i], px, 4);
}

Image read_png(const std::string& path) {
  png_image im;
  std::memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&im, path.c_str()))
    throw Error(path + ": not a readable PNG (" + im.message + ")");
  im.format = PNG_FORMAT_RGBA;
  if (im.width == 0 || im.height == 0 || im.width > 16384 || im.height > 16384) {
    png_image_free(&im);
    throw Error(path + ": PNG of " + std::to_string(im.width) + "x" + std::to_string(im.height) + " pixels (at most 16384 a side)");
  }
  Image out(static_cast<int>(im.width), static_cast<int>(im.height), 0);
  if (!png_image_finish_read(&im, nullptr, out.rgba.data(), 0, nullptr))
    throw Error(path + ": malformed PNG (" + im.message + ")");
  return out;
}

std::vector<uint8_t> encode_png(const Image& img) {
  png_image im;
  std::memset(&im, 0, sizeof im);
  im.version = PNG_IMAGE_VERSION;
  im.width = static_cast<png_uint_32>(img.width);
  im.height = static_cast<png_uint_32>(img.height);
  im.format = PNG_FORMAT_RGBA;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&im, nullptr, &size, 0, img.rgba.data(), 0, nullptr))
    throw Error(std::string("PNG encoding failed: ") + im.message);
  std::vector<uint8_t> bytes(size);
  if (!png_image_write_to_memory(&im, bytes.data(), &size, 0, img.rgba.data(), 0, nullptr))
    throw Error(std::string("PNG encoding failed: ") + im.message);
  bytes.resize(size);
  return bytes;
}

void write_png(const std::string& path, const Image& img) {
  const std::vector<uint8_t> bytes = encode_png(img);
  write_file_atomic(path, bytes.data(), bytes.size());
}

Image flatten(const Image& img, uint32_t bg) {
  Image out = img;
  const int back[3] = {static_cast<int>(bg >> 16 & 255), static_cast<int>(bg >> 8 & 255), static_cast<int>(bg & 255)};
  for (size_t i = 0; i < out.rgba.size(); i += 4) {
    const int a = out.rgba[i + 3];
    for (int c = 0; c < 3; c++) out.rgba[i + c] = static_cast<uint8_t>((out.rgba[i + c] * a + back[c] * (255 - a) + 127) / 255);
    out.rgba[i + 3] = 255;
  }
  return out;
}

Image box_resize(const Image& img, int width, int height) {
  Image out(width, height, 0);
  const double sx = static_cast<double>(img.width) / width, sy = static_cast<double>(img.height) / height;
  for (int y = 0; y < height; y++) {
    for (int x = 0; x < width; x++) {
      double sum[4] = {0, 0, 0, 0}, area = 0;
      const double x0 = x * sx, x1 = (x + 1) * sx, y0 = y * sy, y1 = (y + 1) * sy;
      for (int iy = static_cast<int>(y0); iy < std::min(img.height, static_cast<int>(std::ceil(y1))); iy++) {
        const double wy = std::min<double>(iy + 1, y1) - std::max<double>(iy, y0);
        for (int ix = static_cast<int>(x0); ix < std::min(img.width, static_cast<int>(std::ceil(x1))); ix++) {
          const double w = wy * (std::min<double>(ix + 1, x1) - std::max<double>(ix, x0));
          const uint8_t* p = img.at(ix, iy);
          for (int c = 0; c < 4; c++) sum[c] += w * p[c];
          area += w;
        }
      }
      uint8_t* o = out.at(x, y);
      for (int c = 0; c < 4; c++) o[c] = static_cast<uint8_t>(std::clamp(std::lround(sum[c] / area), 0L, 255L));
    }
  }
  return out;
}

Image upscale(const Image& img, int f) {
  Image out(img.width * f, img.height * f, 0);
  for (int y = 0; y < out.height; y++)
    for (int x = 0; x < out.width; x++) std::memcpy(out.at(x, y), img.at(x / f, y / f), 4);
  return out;
}

Image grid(const std::vector<Image>& tiles, int columns, int gap, uint32_t bg) {
  if (tiles.empty()) return Image();
  const int w = tiles[0].width, h = tiles[0].height, n = static_cast<int>(tiles.size());
  columns = std::max(1, std::min(columns, n));
  const int rows = (n + columns - 1) / columns;
  Image out(gap + columns * (w + gap), gap + rows * (h + gap), (bg << 8) | 0xffu);
  for (int i = 0; i < n; i++) {
    JF_CHECK(tiles[i].width == w && tiles[i].height == h, "grid tiles differ in size");
    const int ox = gap + (i % columns) * (w + gap), oy = gap + (i / columns) * (h + gap);
    for (int y = 0; y < h; y++) std::memcpy(out.at(ox, oy + y), tiles[i].at(0, y), static_cast<size_t>(w) * 4);
  }
  return out;
}

}  // namespace jf
