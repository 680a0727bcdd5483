// A generation's forward trace as a self-describing document (`jf generate --trace FILE`): the decoder, the
// prompt and output token ids, each token's text, and every forward's rows. `jf viz` reads it back without
// the model or tokenizer, which is why the token texts travel with it.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "decode/trace.h"

namespace jf::viz {

struct TraceDoc {
  std::string decoder;                  // e.g. "jacobi" or a full spec "lookahead:W=4"
  std::vector<int32_t> prompt;          // prompt token ids
  std::vector<int32_t> output;          // generated ids (what the committed tokens concatenate to)
  std::string text;                     // the output as text
  std::map<int32_t, std::string> pieces;  // text of every token id that appears in the trace
  ForwardTrace trace;

  // prompt + output: text position p holds full_text()[p]; row r of a forward guesses full_text()[position].
  std::vector<int32_t> full_tokens() const;
};

// JSON text of the document (one object; forwards as arrays of rows [token, position, role, block]).
std::string trace_to_json(const TraceDoc& d);
// Throws jf::Error naming what is wrong when `json` is not a trace document.
TraceDoc trace_from_json(const std::string& json);
// Reads / writes (atomically) a trace file; errors name the path.
TraceDoc read_trace(const std::string& path);
void write_trace(const std::string& path, const TraceDoc& d);

}  // namespace jf::viz
