// The trajectory page of `jf viz`: one line per forward, in the style of the Jacobi Forcing paper's
// trajectory figure, as one self-contained HTML file (inline CSS, no scripts or external assets).
#pragma once
#include <string>
#include <vector>

#include "viz/trace_doc.h"

namespace jf::viz {

// How a row of a forward relates to the final text.
enum class RowFate {
  Pending,    // the committed token the forward starts from
  Accepted,   // a verified guess (draft / candidate) that was committed by this forward
  Correct,    // equals the final text at its position but was not committed by this forward
  Misplaced,  // wrong at its position, but the final text has it a few positions away
  Rejected,   // neither
};
const char* row_fate_name(RowFate f);

// Fates of forward `i`'s rows against prompt + output (`full`). Pure, so tests can check it directly.
std::vector<RowFate> classify_rows(const ForwardRecord& f, const std::vector<int32_t>& full);

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string html_escape(const std::string& s);

std::string trajectory_html(const TraceDoc& d);
// Writes the page atomically (temp file + rename); errors name the path.
void write_trajectory_html(const std::string& path, const TraceDoc& d);

}  // namespace jf::viz
