#include "tune/cost_chart.h"

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

}  // namespace jf::tune
