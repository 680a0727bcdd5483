#include "tune/cost_chart.h"

#include <algorithm>

namespace jf::tune {

viz::LineChart cost_chart(const CostTable& cost, const std::string& title) {
  viz::LineChart c;
  c.title = title;
  c.x_label = "rows per forward (M)";
  c.y_label = "ms per forward";
  for (size_t k = 0; k < cost.contexts.size(); k++) {
    viz::Series s;
    s.name = "context " + std::to_string(cost.contexts[k]);
    for (size_t i = 0; i < cost.rows.size(); i++) {
      s.x.push_back(cost.rows[i]);
      s.y.push_back(1e3 * cost.seconds[k][i]);
    }
    c.series.push_back(std::move(s));
    const int knee = cost.free_rows(k);
    c.x_marks.push_back(knee);
    c.x_mark_labels.push_back("<=15% over 1 row up to M=" + std::to_string(knee) + " (ctx " + std::to_string(cost.contexts[k]) + ")");
  }
  return c;
}

viz::LineChart relative_cost_chart(const std::vector<std::pair<std::string, CostTable>>& curves,
                                   const std::string& title) {
  viz::LineChart c;
  c.title = title;
  c.x_label = "rows per forward (M)";
  c.y_label = "time(M) / time(1)";
  c.y_from = 1;
  for (const auto& [name, cost] : curves) {
    if (cost.empty()) continue;
    viz::Series s;
    s.name = name + ", context " + std::to_string(cost.contexts[0]);
    for (size_t i = 0; i < cost.rows.size(); i++) {
      s.x.push_back(cost.rows[i]);
      s.y.push_back(cost.seconds[0][i] / cost.seconds[0][0]);
    }
    c.series.push_back(std::move(s));
  }
  c.y_marks = {1.15};
  c.y_mark_labels = {"15% over one row"};
  return c;
}

viz::LineChart speedup_chart(const std::vector<DecoderPoint>& points, const std::string& title) {
  viz::LineChart c;
  c.title = title;
  c.x_label = "tokens per forward (TPF)";
  c.y_label = "tokens/s relative to ar";
  c.x_from = c.y_from = 0;
  double top = 1;
  for (const DecoderPoint& p : points) {
    c.series.push_back({p.name, {p.tpf}, {p.speedup}});
    top = std::max({top, p.tpf, p.speedup});
  }
  c.series.push_back({"every row free (= TPF)", {0, top}, {0, top}, true});
  c.series.push_back({"0.85 x TPF", {0, top}, {0, 0.85 * top}, true});
  c.y_marks = {1.0};
  c.y_mark_labels = {"ar"};
  return c;
}

}  // namespace jf::tune
