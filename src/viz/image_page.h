// The image gallery page: generated images next to their "forward map" (each pixel coloured by the forward
// that committed it), with a slider that replays the generation, as one self-contained HTML file (inline
// CSS, SVG and script; the image itself as a PNG data URI). Shows at a glance how many pixels a parallel
// decoder (sjd, SJD-PAC) commits per forward against `ar`'s one.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace jf::viz {

struct ImageRun {
  std::string group;             // entries of one group share a row, labelled by it (e.g. the caption)
  std::string caption, decoder;  // decoder: the spec string, e.g. "ar" or "sjd:block=32,pac"
  uint64_t seed = 0;
  int width = 0, height = 0;
  std::vector<std::array<uint8_t, 3>> pixels;  // RGB, raster order, width*height entries
  std::vector<int> forward_of_pixel;           // 0-based forward that committed each pixel (same length)
};

// Groups appear in order of their first entry; entries keep their order within a group. Throws jf::Error
// naming the entry when a run's sizes disagree or a forward is negative. Pixels carry class "px" (map) or
// "ip" (image) and data-forward; the histogram's bars carry class "hbar", data-tokens and data-forwards.
std::string image_gallery_html(const std::string& title, const std::vector<ImageRun>& runs);
// Writes the page atomically (temp file + rename); errors name the path.
void write_image_gallery(const std::string& path, const std::string& title, const std::vector<ImageRun>& runs);

}  // namespace jf::viz
