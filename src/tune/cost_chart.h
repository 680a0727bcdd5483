// The cost curve as a chart: ms per forward vs rows M, one line per context, a dashed mark where extra
// rows stop being nearly free (CostTable::free_rows).
#pragma once
#include "tune/cost_table.h"
#include "viz/svg.h"

namespace jf::tune {

viz::LineChart cost_chart(const CostTable& cost, const std::string& title);

}  // namespace jf::tune
