// jf's speed charts: the cost curve (ms per forward vs rows M, one line per context, a dashed mark where extra
// rows stop being nearly free: CostTable::free_rows), devices' cost curves relative to their own one row side
// by side, and decoders' speedup against their tokens per forward.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tune/cost_table.h"
#include "viz/svg.h"

namespace jf::tune {

viz::LineChart cost_chart(const CostTable& cost, const std::string& title);

// time(M) / time(1) at each curve's first context, one line per (name, cost): a GPU's beside the CPU's shows
// how many rows each runs for about the price of one.
viz::LineChart relative_cost_chart(const std::vector<std::pair<std::string, CostTable>>& curves,
                                   const std::string& title);

struct DecoderPoint {
  std::string name;
  double tpf = 0, speedup = 0;  // tokens per forward; tokens/s relative to ar
};
// One point per decoder, with y = TPF (every extra row free) and y = 0.85 TPF as guides.
viz::LineChart speedup_chart(const std::vector<DecoderPoint>& points, const std::string& title);

}  // namespace jf::tune
