#include "viz/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/mapped_file.h"

namespace jf::viz {

namespace {

constexpr double kW = 860, kH = 440, kLeft = 70, kRight = 290, kTop = 40, kBottom = 70;
const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string tick_label(double v) {
  char b[32];
  if (v != 0 && (std::fabs(v) >= 1e4 || std::fabs(v) < 1e-2)) std::snprintf(b, sizeof b, "%.2g", v);
  else std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// A point's mark: shape 0 a circle, 1 a square, 2 a diamond, radius r around (x, y); with a tooltip when
// `title` is given (the plotted points carry class "mark", the legend's swatches do not).
std::string mark(int shape, double x, double y, double r, const char* col, const std::string& title) {
  const char* tag = shape == 0 ? "circle" : shape == 1 ? "rect" : "polygon";
  std::string geometry;
  if (shape == 0) {
    geometry = "cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"" + num(r) + "\"";
  } else if (shape == 1) {
    geometry = "x=\"" + num(x - r) + "\" y=\"" + num(y - r) + "\" width=\"" + num(2 * r) + "\" height=\"" + num(2 * r) + "\"";
  } else {
    const double d = r + 1;  // a diamond of the same visual weight as the circle
    geometry = "points=\"" + num(x) + "," + num(y - d) + " " + num(x + d) + "," + num(y) + " " + num(x) + "," +
               num(y + d) + " " + num(x - d) + "," + num(y) + "\"";
  }
  const std::string cls = title.empty() ? "" : " class=\"mark\"";
  const std::string tip = title.empty() ? "" : "<title>" + title + "</title>";
  std::string el = "<";  // appended, not chained with +: GCC 12 gives a false -Wrestrict warning on that
  el.append(tag).append(cls).append(" ").append(geometry).append(" fill=\"").append(col).append("\">");
  el.append(tip).append("</").append(tag).append(">\n");
  return el;
}

// A "nice" tick step so an axis up to `hi` has about five ticks.
double tick_step(double hi) {
  if (hi <= 0) return 1;
  const double raw = hi / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

// `height`: taller than kH when a legend needs the room (the plot keeps its size).
std::string header(const std::string& title, double height = kH) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kW) + "\" height=\"" + num(height) +
         "\" viewBox=\"0 0 " + num(kW) + " " + num(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n"
         "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"" + num(kW / 2) +
         "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" + xml_escape(title) + "</text>\n";
}

struct Axis {
  double from = 0, to = 1, step = 1;
};

// An axis from `lo` to `hi`, both rounded outwards to a tick.
Axis axis(double lo, double hi) {
  const double step = tick_step(std::max(hi - lo, 1e-9)), from = std::floor(lo / step) * step;
  return {from, std::max(from + step, std::ceil(hi / step) * step), step};
}

// Y axis from `lo` to `hi` with grid lines.
Axis y_axis(std::string& s, double lo, double hi, const std::string& label) {
  const Axis a = axis(lo, hi);
  const double plot_h = kH - kTop - kBottom;
  for (double v = a.from; v <= a.to + a.step / 2; v += a.step) {
    const double y = kTop + plot_h * (1 - (v - a.from) / (a.to - a.from));
    s += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(y) + "\" x2=\"" + num(kW - kRight) + "\" y2=\"" + num(y) +
         "\" stroke=\"#ddd\"/>\n<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" +
         tick_label(v) + "</text>\n";
  }
  s += "<text transform=\"translate(16," + num(kTop + plot_h / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
       xml_escape(label) + "</text>\n";
  return a;
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default: o += c;
    }
  return o;
}

std::string bar_chart_svg(const std::string& title, const std::string& y_label, const std::vector<Bar>& bars,
                          double reference) {
  std::string s = header(title);
  double hi = std::isnan(reference) ? 0 : reference;
  for (const Bar& b : bars) hi = std::max(hi, std::isfinite(b.value) ? b.value : 0);
  const double top = y_axis(s, 0, hi * 1.05, y_label).to, plot_h = kH - kTop - kBottom, plot_w = kW - kLeft - kRight;
  const double slot = bars.empty() ? plot_w : plot_w / bars.size(), bw = slot * 0.6;
  for (size_t i = 0; i < bars.size(); i++) {
    const double v = std::isfinite(bars[i].value) ? std::max(0.0, bars[i].value) : 0, h = plot_h * v / top;
    const double x = kLeft + slot * i + (slot - bw) / 2, y = kTop + plot_h - h;
    s += "<rect class=\"mark\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(bw) + "\" height=\"" + num(h) +
         "\" fill=\"" + kColors[i % 8] + "\"><title>" + xml_escape(bars[i].label) + ": " + tick_label(v) +
         "</title></rect>\n<text x=\"" + num(x + bw / 2) + "\" y=\"" + num(y - 4) + "\" text-anchor=\"middle\">" +
         tick_label(v) + "</text>\n<text transform=\"translate(" + num(x + bw / 2) + "," + num(kTop + plot_h + 14) +
         ") rotate(20)\" font-size=\"11\">" + xml_escape(bars[i].label) + "</text>\n";
  }
  if (!std::isnan(reference)) {
    const double y = kTop + plot_h * (1 - reference / top);
    s += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(y) + "\" x2=\"" + num(kW - kRight) + "\" y2=\"" + num(y) +
         "\" stroke=\"#333\" stroke-dasharray=\"5,4\"/>\n";
  }
  s += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(kTop + plot_h) + "\" x2=\"" + num(kW - kRight) + "\" y2=\"" +
       num(kTop + plot_h) + "\" stroke=\"#333\"/>\n</svg>\n";
  return s;
}

std::string line_chart_svg(const LineChart& c) {
  // The legend's entries are 18 apart from kTop + 10: a long one makes the picture taller, never clips.
  std::string s = header(c.title, std::max(kH, kTop + 18.0 * static_cast<double>(c.series.size()) + 12));
  double xhi = c.x_from, yhi = c.y_from;
  for (const Series& se : c.series)
    for (size_t i = 0; i < se.x.size() && i < se.y.size(); i++) xhi = std::max(xhi, se.x[i]), yhi = std::max(yhi, se.y[i]);
  for (double m : c.x_marks) xhi = std::max(xhi, m);
  for (double m : c.y_marks) yhi = std::max(yhi, m);
  const double ytop = c.y_from + (yhi - c.y_from) * 1.05;
  const Axis ya = y_axis(s, c.y_from, ytop, c.y_label), xa = axis(c.x_from, xhi);
  const double plot_h = kH - kTop - kBottom, plot_w = kW - kLeft - kRight;
  auto X = [&](double x) { return kLeft + plot_w * (x - xa.from) / (xa.to - xa.from); };
  auto Y = [&](double y) { return kTop + plot_h * (1 - (y - ya.from) / (ya.to - ya.from)); };
  for (double v = xa.from; v <= xa.to + xa.step / 2; v += xa.step)
    s += "<text x=\"" + num(X(v)) + "\" y=\"" + num(kTop + plot_h + 16) + "\" text-anchor=\"middle\">" + tick_label(v) +
         "</text>\n";
  s += "<text x=\"" + num(kLeft + plot_w / 2) + "\" y=\"" + num(kH - 24) + "\" text-anchor=\"middle\">" +
       xml_escape(c.x_label) + "</text>\n";
  for (size_t m = 0; m < c.y_marks.size(); m++) {
    const double y = Y(c.y_marks[m]);
    s += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(y) + "\" x2=\"" + num(kW - kRight) + "\" y2=\"" + num(y) +
         "\" stroke=\"#999\" stroke-dasharray=\"4,3\"/>\n";
    if (m < c.y_mark_labels.size())
      s += "<text x=\"" + num(kLeft + 4) + "\" y=\"" + num(y - 4) + "\" font-size=\"11\" fill=\"#555\">" +
           xml_escape(c.y_mark_labels[m]) + "</text>\n";
  }
  for (size_t m = 0; m < c.x_marks.size(); m++) {
    const double x = X(c.x_marks[m]);
    s += "<line x1=\"" + num(x) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(x) + "\" y2=\"" + num(kTop + plot_h) +
         "\" stroke=\"#999\" stroke-dasharray=\"4,3\"/>\n";
    const bool right_half = x > kLeft + plot_w / 2;  // then the label goes left of the line, clear of the legend
    if (m < c.x_mark_labels.size())
      s += "<text x=\"" + num(right_half ? x - 3 : x + 3) + "\" y=\"" + num(kTop + 12 + 14 * m) + "\" text-anchor=\"" +
           (right_half ? "end" : "start") + "\" font-size=\"11\" fill=\"#555\">" +
           xml_escape(c.x_mark_labels[m]) + "</text>\n";
  }
  for (size_t k = 0; k < c.series.size(); k++) {
    const Series& se = c.series[k];
    const char* col = kColors[k % 8];
    std::string pts;
    const size_t n = std::min(se.x.size(), se.y.size());
    for (size_t i = 0; i < n; i++) {
      if (i) pts += ' ';
      pts.append(num(X(se.x[i]))).append(",").append(num(Y(se.y[i])));
    }
    const int shape = static_cast<int>(k / 8 % 3);  // once the colours repeat, the marks differ
    const std::string dash = se.reference ? "\" stroke-dasharray=\"6,4" : "";
    s += "<polyline fill=\"none\" stroke=\"" + std::string(col) + dash + "\" stroke-width=\"1.5\" points=\"" + pts + "\"/>\n";
    for (size_t i = 0; i < n && !se.reference; i++)
      s += mark(shape, X(se.x[i]), Y(se.y[i]), 3, col,
                xml_escape(se.name) + ": " + tick_label(se.x[i]) + ", " + tick_label(se.y[i]));
    const double ly = kTop + 10 + 18 * k;
    const std::string swatch = se.reference ? "<line x1=\"" + num(kW - kRight + 10) + "\" y1=\"" + num(ly - 3) + "\" x2=\"" +
                                                  num(kW - kRight + 22) + "\" y2=\"" + num(ly - 3) + "\" stroke=\"" + col + dash + "\"/>"
                                            : mark(shape, kW - kRight + 17, ly - 3, 5, col, "");
    s += swatch + "<text x=\"" + num(kW - kRight + 26) + "\" y=\"" + num(ly + 1) + "\">" + xml_escape(se.name) + "</text>\n";
  }
  s += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(kTop + plot_h) + "\" x2=\"" + num(kW - kRight) + "\" y2=\"" +
       num(kTop + plot_h) + "\" stroke=\"#333\"/>\n</svg>\n";
  return s;
}

void write_svg(const std::string& path, const std::string& svg) { write_file_atomic(path, svg.data(), svg.size()); }

}  // namespace jf::viz
