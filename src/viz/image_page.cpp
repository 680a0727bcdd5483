#include "viz/image_page.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "base/error.h"
#include "base/mapped_file.h"
#include "formats/image.h"
#include "viz/image_grid.h"
#include "viz/svg.h"

namespace jf::viz {

namespace {

// The page draws one SVG rect per pixel, twice: past this it would be too heavy to open.
constexpr int kMaxSide = 512;
// Displayed images are about this many CSS pixels a side (16x16 tokens: 8x).
constexpr int kDisplaySide = 128;

// Consecutive forwards take clearly different hues (Tableau 10, in order), so a run of pixels committed by one
// forward reads as a block and ar's one pixel per forward as stripes.
constexpr const char* kForwardColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                           "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr int kNumForwardColours = sizeof kForwardColours / sizeof kForwardColours[0];

const char* kStyle = R"(body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}h1{font-size:1.3em}
h2{font-size:1.05em;margin:1.4em 0 .4em}.row{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
.run{border:1px solid #ddd;border-radius:6px;padding:8px 10px;max-width:440px}.cap{font-weight:600}.meta{color:#555;font-size:12px;overflow-wrap:anywhere}
.pics{display:flex;gap:10px;margin:6px 0}figure{margin:0;text-align:center}figcaption{font-size:11px;color:#777}
.pics img,.pics svg{image-rendering:pixelated;display:block;border:1px solid #ccc}.bg{fill:#f0f0f0}
.map .cur{stroke:#000;stroke-width:.12}.ctl{display:flex;gap:6px;align-items:center;font-size:12px}
.ctl input{flex:1}.ctl output{min-width:16em}.hist text{font-size:9px;fill:#555}.hbar{fill:#4e79a7})";

// Wires every card's slider: at value k only pixels of forwards 0..k show, forward k's outlined in the map.
// (No '<' or '&' in it, so the page stays well-formed XML.)
const char* kScript = R"(for (const run of document.querySelectorAll('.run')) {
  const s = run.querySelector('input'), out = run.querySelector('output'), btn = run.querySelector('button');
  const rects = [...run.querySelectorAll('rect[data-forward]')], total = run.querySelectorAll('rect.px').length;
  const show = () => {
    const k = +s.value;
    let n = 0, now = 0;
    for (const r of rects) {
      const f = +r.dataset.forward, on = k >= f, map = r.classList.contains('px');
      r.style.visibility = on ? '' : 'hidden';
      r.classList.toggle('cur', f === k);
      n += on ? +map : 0;
      now += f === k ? +map : 0;
    }
    out.textContent = `forward ${k} of 0..${s.max}: +${now}, ${n}/${total} pixels`;
  };
  let timer = 0;
  const stop = () => { clearInterval(timer); timer = 0; };
  btn.onclick = () => {
    if (timer) return stop();
    if (+s.value >= +s.max) s.value = 0;
    show();
    timer = setInterval(() => {
      if (+s.value >= +s.max) return stop();
      s.value = +s.value + 1;
      show();
    }, 60);
  };
  s.oninput = show;
  show();
})";

void check_run(const ImageRun& r, size_t index) {
  const std::string who = "image run " + std::to_string(index) + " ('" + r.caption + "', " + r.decoder + "): ";
  if (r.width < 1 || r.height < 1 || r.width > kMaxSide || r.height > kMaxSide)
    throw Error(who + std::to_string(r.width) + "x" + std::to_string(r.height) + " pixels (1 to " +
                std::to_string(kMaxSide) + " a side)");
  const size_t n = static_cast<size_t>(r.width) * r.height;
  if (r.pixels.size() != n || r.forward_of_pixel.size() != n)
    throw Error(who + std::to_string(r.pixels.size()) + " pixels and " + std::to_string(r.forward_of_pixel.size()) +
                " forwards for " + std::to_string(n) + " positions");
  for (int f : r.forward_of_pixel)
    if (f < 0) throw Error(who + "negative forward " + std::to_string(f));
}

// Pixels committed by each forward 0..max; forwards between that committed none count 0.
std::vector<int> pixels_per_forward(const ImageRun& r) {
  std::vector<int> n(static_cast<size_t>(*std::max_element(r.forward_of_pixel.begin(), r.forward_of_pixel.end())) + 1);
  for (int f : r.forward_of_pixel) n[static_cast<size_t>(f)]++;
  return n;
}

std::string run_data_uri(const ImageRun& r, int scale) {
  Image img(r.width, r.height);
  for (size_t i = 0; i < r.pixels.size(); i++) std::copy(r.pixels[i].begin(), r.pixels[i].end(), img.rgba.begin() + i * 4);
  return png_data_uri(upscale(img, scale));
}

// The image (true colours, class "ip") or its forward map (class "px", with tooltips), one rect per pixel over
// a grey background that shows where the replay has not reached yet.
std::string pixel_grid_svg(const ImageRun& r, int scale, const std::vector<int>& per_forward, bool map) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "<svg class=\"%s\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" shape-rendering=\"crispEdges\">",
                map ? "map" : "img", r.width, r.height, r.width * scale, r.height * scale);
  std::string s = buf;
  std::snprintf(buf, sizeof buf, "<rect class=\"bg\" width=\"%d\" height=\"%d\"/>", r.width, r.height);
  s += buf;
  for (int y = 0; y < r.height; y++)
    for (int x = 0; x < r.width; x++) {
      const size_t i = static_cast<size_t>(y) * r.width + x;
      const int f = r.forward_of_pixel[i];
      char colour[8];
      const auto& p = r.pixels[i];
      std::snprintf(colour, sizeof colour, "#%02x%02x%02x", p[0], p[1], p[2]);
      std::snprintf(buf, sizeof buf, "<rect class=\"%s\" data-forward=\"%d\" x=\"%d\" y=\"%d\" width=\"1\" height=\"1\" fill=\"%s\"",
                    map ? "px" : "ip", f, x, y, map ? kForwardColours[f % kNumForwardColours] : colour);
      s += buf;
      if (!map) {
        s += "/>";
        continue;
      }
      const int n = per_forward[static_cast<size_t>(f)];
      std::snprintf(buf, sizeof buf, "><title>pixel (%d, %d): forward %d, %d token%s in that forward</title></rect>", x, y, f,
                    n, n == 1 ? "" : "s");
      s += buf;
    }
  return s + "</svg>";
}

// How many forwards committed 1, 2, 3, ... pixels (0 only when some forward committed none).
std::string histogram_svg(const std::vector<int>& per_forward) {
  std::vector<int> hist(static_cast<size_t>(*std::max_element(per_forward.begin(), per_forward.end())) + 1);
  for (int n : per_forward) hist[static_cast<size_t>(n)]++;
  const int first = hist[0] ? 0 : 1, buckets = static_cast<int>(hist.size()) - first;
  const int top = *std::max_element(hist.begin(), hist.end());
  const double w = std::min(24.0, 160.0 / buckets);
  const int label_every = (buckets + 7) / 8;  // at most about 8 axis labels
  std::string s = "<svg class=\"hist\" width=\"180\" height=\"84\"><text x=\"10\" y=\"10\">forwards by pixels committed</text>";
  char buf[256];
  for (int b = 0; b < buckets; b++) {
    const int tokens = first + b, forwards = hist[static_cast<size_t>(tokens)];
    const double x = 10 + b * w, h = 44.0 * forwards / top;
    if (forwards > 0) {
      std::snprintf(buf, sizeof buf, "<rect class=\"hbar\" data-tokens=\"%d\" data-forwards=\"%d\" x=\"%.1f\" y=\"%.1f\" "
                    "width=\"%.1f\" height=\"%.1f\"><title>%d forward%s committed %d pixel%s</title></rect>",
                    tokens, forwards, x + 0.5, 66 - h, std::max(1.0, w - 1), h, forwards, forwards == 1 ? "" : "s", tokens,
                    tokens == 1 ? "" : "s");
      s += buf;
      if (w >= 12) {  // the count above its bar, where there is room
        std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>", x + w / 2, 64 - h, forwards);
        s += buf;
      }
    }
    if (b % label_every == 0 || b == buckets - 1) {
      std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"78\" text-anchor=\"middle\">%d</text>", x + w / 2, tokens);
      s += buf;
    }
  }
  std::snprintf(buf, sizeof buf, "<line x1=\"10\" y1=\"66\" x2=\"%.1f\" y2=\"66\" stroke=\"#999\"/></svg>", 10 + buckets * w);
  return s + buf;
}

std::string run_html(const ImageRun& r) {
  const std::vector<int> per_forward = pixels_per_forward(r);
  const int forwards = static_cast<int>(per_forward.size()), tokens = r.width * r.height;
  const int scale = std::max(1, kDisplaySide / std::max(r.width, r.height));
  char buf[256];
  std::snprintf(buf, sizeof buf, "seed %llu &middot; %d forwards &middot; %d tokens &middot; %.2f tokens/forward",
                static_cast<unsigned long long>(r.seed), forwards, tokens, double(tokens) / forwards);
  std::string h = "<div class=\"run\" data-forwards=\"" + std::to_string(forwards) + "\"><div class=\"cap\">" +
                  xml_escape(r.caption) + "</div><div class=\"meta\"><code>" + xml_escape(r.decoder) + "</code> &middot; " +
                  buf + "</div>\n<div class=\"pics\"><figure><img src=\"" + run_data_uri(r, scale) + "\" width=\"" +
                  std::to_string(r.width * scale) + "\" height=\"" + std::to_string(r.height * scale) + "\" alt=\"" +
                  xml_escape(r.caption) + "\"/><figcaption>image</figcaption></figure>\n<figure>" +
                  pixel_grid_svg(r, scale, per_forward, false) + "<figcaption>replay</figcaption></figure>\n<figure>" +
                  pixel_grid_svg(r, scale, per_forward, true) + "<figcaption>forward map</figcaption></figure></div>\n";
  h += "<div class=\"ctl\"><button type=\"button\" title=\"replay\">&#9654;</button><input type=\"range\" min=\"0\" max=\"" +
       std::to_string(forwards - 1) + "\" value=\"" + std::to_string(forwards - 1) + "\"/><output></output></div>\n";
  return h + histogram_svg(per_forward) + "</div>\n";
}

}  // namespace

std::string image_gallery_html(const std::string& title, const std::vector<ImageRun>& runs) {
  std::vector<std::string> groups;  // in order of first appearance
  std::map<std::string, std::vector<size_t>> members;
  for (size_t i = 0; i < runs.size(); i++) {
    check_run(runs[i], i);
    auto& m = members[runs[i].group];
    if (m.empty()) groups.push_back(runs[i].group);
    m.push_back(i);
  }
  std::string h = "<!doctype html>\n<html><head><meta charset=\"utf-8\"/><title>" + xml_escape(title) + "</title>\n<style>" +
                  kStyle + "</style></head><body>\n<h1>" + xml_escape(title) + "</h1>\n<p>Each image beside its forward " +
                  "map: every pixel coloured by the forward that committed it (one colour a forward, consecutive forwards " +
                  "in different colours). The slider replays the generation forward by forward.</p>\n";
  for (const std::string& g : groups) {
    if (!g.empty()) h += "<h2>" + xml_escape(g) + "</h2>\n";
    h += "<div class=\"row\">\n";
    for (size_t i : members[g]) h += run_html(runs[i]);
    h += "</div>\n";
  }
  return h + "<script>" + kScript + "</script>\n</body></html>\n";
}

void write_image_gallery(const std::string& path, const std::string& title, const std::vector<ImageRun>& runs) {
  const std::string s = image_gallery_html(title, runs);
  write_file_atomic(path, s.data(), s.size());
}

}  // namespace jf::viz
