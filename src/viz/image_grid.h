// A grid of images with its labels, as one SVG: a caption beside each row and a label over each column (e.g.
// the decoder and seed), the images embedded as PNG data URIs. What a person needs to judge whether pictures
// show their captions; `jf imagine -o grid.svg` writes it.
#pragma once
#include <string>
#include <vector>

#include "formats/image.h"

namespace jf::viz {

struct ImageGrid {
  std::vector<std::string> row_labels, column_labels;
  std::vector<Image> tiles;  // row-major, row_labels.size() x column_labels.size(), all one size
};

// Throws jf::Error when the tiles do not fill the grid or differ in size. Each tile is an <image> of class
// "tile" with its row and column label in a <title>.
std::string image_grid_svg(const ImageGrid& g);
// "data:image/png;base64,..." of an image.
std::string png_data_uri(const Image& img);

}  // namespace jf::viz
