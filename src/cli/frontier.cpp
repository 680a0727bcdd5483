// `jf frontier`: Jacobi Forcing's trade-off as a picture. Each `jf eval --json` result is one point, its
// held-out text agreement with the base against its tokens-per-forward gain over the base; points with the
// same label (a recipe) are joined into one curve, and the base itself sits at (1, 1).
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "viz/svg.h"

namespace jf::cli {

namespace {

struct FrontierArgs {
  std::vector<std::string> points;  // LABEL=EVAL.json
  std::string out, decoder;
  std::string target;  // "AGREEMENT,GAIN": dashed lines marking the corner to reach
};

struct Point {
  double agreement = 0, gain = 0;
};

// One evaluation's point: held-out agreement and the TPF ratio of `decoder` (the file's first when empty).
Point read_point(const std::string& path, const std::string& decoder) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  if (!j.contains("text") || !j["text"].contains("top1_agreement"))
    throw Error(path + ": no held-out text agreement (run jf eval with --text and --json)");
  if (!j.contains("decoders") || !j["decoders"].is_array() || j["decoders"].empty())
    throw Error(path + ": no tokens per forward (run jf eval with --prompts and --json)");
  Point p;
  p.agreement = j["text"]["top1_agreement"].get<double>();
  for (const auto& d : j["decoders"])
    if (decoder.empty() || d["decoder"].get<std::string>() == decoder) {
      p.gain = d["tpf_ratio"].get<double>();
      return p;
    }
  throw Error(path + ": no decoder '" + decoder + "' in its evaluation");
}

std::pair<double, double> parse_target(const std::string& spec) {
  const std::vector<std::string> parts = split_list(spec);
  double agreement = 0, gain = 0;
  try {
    if (parts.size() == 2) agreement = std::stod(parts[0]), gain = std::stod(parts[1]);
  } catch (const std::exception&) {
  }
  if (!(agreement > 0 && agreement <= 1 && gain > 0))
    throw Error("--target '" + spec + "': expected AGREEMENT,GAIN with agreement in (0, 1] and gain > 0, e.g. 0.95,1.3");
  return {agreement, gain};
}

int run_frontier(const FrontierArgs& a) {
  // Curves in the order their labels first appear (the legend's order, and the colours with it).
  std::vector<std::pair<std::string, std::vector<Point>>> curves;
  std::map<std::string, size_t> curve_of;
  for (const std::string& spec : a.points) {
    const size_t eq = spec.rfind('=');  // the last: a label may hold '=' ("K=2")
    if (eq == std::string::npos || eq == 0) throw Error("point '" + spec + "': expected LABEL=EVAL.json");
    const std::string label = spec.substr(0, eq);
    const auto [at, is_new] = curve_of.try_emplace(label, curves.size());
    if (is_new) curves.push_back({label, {}});
    curves[at->second].second.push_back(read_point(spec.substr(eq + 1), a.decoder));
  }
  viz::LineChart chart;
  chart.title = "Tokens per forward gained against agreement with the base on held-out text";
  chart.x_label = "top-1 agreement with the base on held-out text";
  chart.y_label = "tokens per forward / base's" + (a.decoder.empty() ? std::string() : " (" + a.decoder + ")");
  chart.series.push_back({"base", {1.0}, {1.0}});
  // The axes start just below the lowest point (and the base): the differences that matter are small.
  double lowest_agreement = 1, lowest_gain = 1;
  for (const auto& [label, pts] : curves)
    for (const Point& p : pts) lowest_agreement = std::min(lowest_agreement, p.agreement), lowest_gain = std::min(lowest_gain, p.gain);
  if (!a.target.empty()) {
    const auto [agreement, gain] = parse_target(a.target);
    lowest_agreement = std::min(lowest_agreement, agreement);
    chart.x_marks = {agreement};
    chart.x_mark_labels = {"target agreement"};
    chart.y_marks = {gain};
    chart.y_mark_labels = {"target gain"};
  }
  chart.x_from = std::max(0.0, lowest_agreement - 0.02);
  chart.y_from = std::max(0.0, lowest_gain - 0.02);
  for (auto& [label, pts] : curves) {
    std::sort(pts.begin(), pts.end(), [](const Point& x, const Point& y) { return x.agreement < y.agreement; });
    viz::Series s{label, {}, {}};
    for (const Point& p : pts) {
      s.x.push_back(p.agreement);
      s.y.push_back(p.gain);
    }
    chart.series.push_back(std::move(s));
  }
  viz::write_svg(a.out, viz::line_chart_svg(chart));
  std::fprintf(stderr, "jf frontier: %zu points in %zu curves -> %s\n", a.points.size(), curves.size(), a.out.c_str());
  return 0;
}

}  // namespace

Command add_frontier_command(CLI::App& app) {
  auto a = std::make_shared<FrontierArgs>();
  CLI::App* cmd = app.add_subcommand(
      "frontier", "Draw jf eval results as tokens-per-forward gain against held-out agreement (SVG)");
  cmd->add_option("points", a->points, "LABEL=EVAL.json, one per evaluated model (jf eval --json); a label is a curve")
      ->required();
  cmd->add_option("--decoder", a->decoder, "Whose tokens per forward (default: each file's first decoder)");
  cmd->add_option("-o,--output", a->out, "SVG file (written atomically)")->required();
  cmd->add_option("--target", a->target, "AGREEMENT,GAIN: dashed lines at the target (e.g. 0.95,1.3)");
  return [a] { return run_frontier(*a); };
}

}  // namespace jf::cli
