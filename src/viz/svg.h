// Small SVG charts written by jf itself (no plotting dependency): a bar chart and a line chart (cost curves for
// `jf tune --plot`, speedup against tokens per forward for `jf bench --plot`). Every data point is one element
// of class "mark", so tests and scripts can count them.
#pragma once
#include <string>
#include <vector>

namespace jf::viz {

struct Bar {
  std::string label;
  double value = 0;
};

struct Series {
  std::string name;
  std::vector<double> x, y;
  bool reference = false;  // a dashed guide line (e.g. y = x) without marks: not data
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  std::vector<double> x_marks;     // vertical dashed lines (e.g. where extra rows stop being nearly free)
  std::vector<std::string> x_mark_labels;
  std::vector<double> y_marks;     // horizontal dashed lines (e.g. a target)
  std::vector<std::string> y_mark_labels;
  double x_from = 0, y_from = 0;   // where the axes start (rounded down to a tick)
};

// `reference`: a horizontal dashed line (e.g. speedup 1.0 = ar); NaN for none.
std::string bar_chart_svg(const std::string& title, const std::string& y_label, const std::vector<Bar>& bars,
                          double reference);
std::string line_chart_svg(const LineChart& c);
// Escapes &, <, > and quotes for SVG text and attributes.
std::string xml_escape(const std::string& s);
// Writes atomically; errors name the path.
void write_svg(const std::string& path, const std::string& svg);

}  // namespace jf::viz
