#include "viz/image_grid.h"

#include <algorithm>

#include "base/error.h"
#include "viz/svg.h"

namespace jf::viz {

namespace {

std::string base64(const std::vector<uint8_t>& b) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string o;
  o.reserve((b.size() + 2) / 3 * 4);
  for (size_t i = 0; i < b.size(); i += 3) {
    const bool has1 = i + 1 < b.size(), has2 = i + 2 < b.size();
    const uint32_t n = uint32_t{b[i]} << 16 | (has1 ? uint32_t{b[i + 1]} << 8 : 0) | (has2 ? uint32_t{b[i + 2]} : 0);
    o += k[n >> 18 & 63];
    o += k[n >> 12 & 63];
    o += has1 ? k[n >> 6 & 63] : '=';
    o += has2 ? k[n & 63] : '=';
  }
  return o;
}

// Room for the longest of `labels` (at most 60 characters) at `px_per_char`.
int label_width(const std::vector<std::string>& labels, int px_per_char) {
  size_t longest = 0;
  for (const std::string& l : labels) longest = std::max(longest, l.size());
  return static_cast<int>(std::min<size_t>(longest, 60)) * px_per_char + 16;
}

}  // namespace

std::string png_data_uri(const Image& img) { return "data:image/png;base64," + base64(encode_png(img)); }

std::string image_grid_svg(const ImageGrid& g) {
  const size_t rows = g.row_labels.size(), cols = g.column_labels.size();
  if (rows == 0 || cols == 0 || g.tiles.size() != rows * cols)
    throw Error("image grid: " + std::to_string(g.tiles.size()) + " images for " + std::to_string(rows) + " rows of " +
                std::to_string(cols));
  const int tw = g.tiles[0].width, th = g.tiles[0].height, gap = 6;
  for (const Image& t : g.tiles)
    if (t.width != tw || t.height != th) throw Error("image grid: images of more than one size");
  const int left = label_width(g.row_labels, 7), top = 24;
  const int cw = std::max(tw + gap, label_width(g.column_labels, 6) - 8);  // a column: its image or its label
  const int width = left + static_cast<int>(cols) * cw + gap, height = top + static_cast<int>(rows) * (th + gap) + gap;
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
                  std::to_string(height) + "\" font-family=\"sans-serif\" font-size=\"13\">\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  for (size_t c = 0; c < cols; c++)
    s += "<text x=\"" + std::to_string(left + static_cast<int>(c) * cw + cw / 2) + "\" y=\"16\" text-anchor=\"middle\" font-size=\"11\" fill=\"#555\">" +
         xml_escape(g.column_labels[c]) + "</text>\n";
  for (size_t r = 0; r < rows; r++) {
    const int y = top + static_cast<int>(r) * (th + gap);
    std::string label = g.row_labels[r].size() > 60 ? g.row_labels[r].substr(0, 57) + "..." : g.row_labels[r];
    s += "<text x=\"" + std::to_string(left - 8) + "\" y=\"" + std::to_string(y + th / 2 + 4) + "\" text-anchor=\"end\">" +
         xml_escape(label) + "</text>\n";
    for (size_t c = 0; c < cols; c++)
      s += "<image class=\"tile\" x=\"" + std::to_string(left + static_cast<int>(c) * cw + (cw - tw) / 2) + "\" y=\"" + std::to_string(y) +
           "\" width=\"" + std::to_string(tw) + "\" height=\"" + std::to_string(th) + "\" href=\"" +
           png_data_uri(g.tiles[r * cols + c]) + "\"><title>" + xml_escape(g.row_labels[r] + " (" + g.column_labels[c] + ")") +
           "</title></image>\n";
  }
  return s + "</svg>\n";
}

}  // namespace jf::viz
