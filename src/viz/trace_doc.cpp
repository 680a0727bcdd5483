#include "viz/trace_doc.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "base/mapped_file.h"

namespace jf::viz {

using nlohmann::json;

std::vector<int32_t> TraceDoc::full_tokens() const {
  std::vector<int32_t> t = prompt;
  t.insert(t.end(), output.begin(), output.end());
  return t;
}

std::string trace_to_json(const TraceDoc& d) {
  json j;
  j["format"] = "jf-trace-1";
  j["decoder"] = d.decoder;
  j["prompt"] = d.prompt;
  j["output"] = d.output;
  j["text"] = d.text;
  json pieces = json::object();
  for (const auto& [id, s] : d.pieces) pieces[std::to_string(id)] = s;
  j["pieces"] = pieces;
  json fw = json::array();
  for (const ForwardRecord& f : d.trace.forwards) {
    json rows = json::array();
    for (size_t r = 0; r < f.tokens.size(); r++) {
      rows.push_back({f.tokens[r], f.positions[r], row_role_name(f.tags[r].role), f.tags[r].block});
      if (f.tree()) rows.back().push_back(f.parents[r]);  // a tree's rows name their parent
    }
    fw.push_back({{"rows", rows}, {"committed", f.committed}});
  }
  j["forwards"] = fw;
  // One forward per line keeps a long trace readable and diffable.
  std::string out = "{";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "forwards") continue;
    out += (first ? "" : ",\n ") + json(it.key()).dump() + ": " + it.value().dump(-1, ' ', false, json::error_handler_t::replace);
    first = false;
  }
  out += ",\n \"forwards\": [";
  for (size_t i = 0; i < fw.size(); i++) out += (i ? ",\n  " : "\n  ") + fw[i].dump();
  out += "\n ]\n}\n";
  return out;
}

namespace {

std::vector<int32_t> ids(const json& j, const char* what) {
  if (!j.is_array()) throw Error(std::string("trace: '") + what + "' must be an array of token ids");
  std::vector<int32_t> v;
  for (const auto& x : j) {
    if (!x.is_number_integer()) throw Error(std::string("trace: '") + what + "' must hold integers");
    v.push_back(x.get<int32_t>());
  }
  return v;
}

}  // namespace

TraceDoc trace_from_json(const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(std::string("trace: not JSON: ") + e.what());
  }
  if (!j.is_object() || j.value("format", "") != "jf-trace-1") throw Error("trace: not a jf trace (format jf-trace-1)");
  TraceDoc d;
  try {
    d.decoder = j.at("decoder").get<std::string>();
    d.prompt = ids(j.at("prompt"), "prompt");
    d.output = ids(j.at("output"), "output");
    d.text = j.at("text").get<std::string>();
    for (auto it = j.at("pieces").begin(); it != j.at("pieces").end(); ++it)
      d.pieces[std::stoi(it.key())] = it.value().get<std::string>();
    for (const json& f : j.at("forwards")) {
      ForwardRecord rec;
      for (const json& row : f.at("rows")) {
        if (!row.is_array() || row.size() < 4 || row.size() > 5)
          throw Error("trace: a row must be [token, position, role, block] or, in a tree, [token, position, role, block, parent]");
        rec.tokens.push_back(row[0].get<int32_t>());
        rec.positions.push_back(row[1].get<int32_t>());
        rec.tags.push_back({parse_row_role(row[2].get<std::string>()), row[3].get<int>()});
        if (row.size() == 5) rec.parents.push_back(row[4].get<int32_t>());
      }
      if (!rec.parents.empty()) {
        if (rec.parents.size() != rec.tokens.size()) throw Error("trace: either every row of a forward names its parent or none");
        for (size_t r = 0; r < rec.parents.size(); r++)
          if (r == 0 ? rec.parents[r] != -1 : rec.parents[r] < 0 || rec.parents[r] >= static_cast<int32_t>(r))
            throw Error("trace: a tree row's parent must be an earlier row (the first row's -1)");
      }
      rec.committed = ids(f.at("committed"), "committed");
      d.trace.forwards.push_back(std::move(rec));
    }
  } catch (const json::exception& e) {
    throw Error(std::string("trace: ") + e.what());
  } catch (const std::invalid_argument&) {
    throw Error("trace: 'pieces' keys must be token ids");
  }
  return d;
}

TraceDoc read_trace(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(path + ": cannot open the trace file");
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return trace_from_json(ss.str());
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

void write_trace(const std::string& path, const TraceDoc& d) {
  const std::string s = trace_to_json(d);
  write_file_atomic(path, s.data(), s.size());
}

}  // namespace jf::viz
