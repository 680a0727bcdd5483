#include "viz/trajectory_page.h"

#include <algorithm>
#include <cstdio>

#include "base/mapped_file.h"

namespace jf::viz {

namespace {

// "#id" for a token without text (GCC 12 warns falsely about `"#" + std::to_string(id)`).
std::string unknown_piece(int32_t id) { return std::string(1, '#').append(std::to_string(id)); }

// How far from its own position a wrong guess may find its token in the final text and count as misplaced:
// the Jacobi Forcing paper's observation is that drafts often hold the right token one or two slots off.
constexpr int kMisplacedReach = 3;

std::string piece_html(const TraceDoc& d, int32_t id) {
  auto it = d.pieces.find(id);
  std::string s = it == d.pieces.end() ? unknown_piece(id) : it->second;
  std::string out;
  // A token of spaces only (indentation) would be an empty box: show its spaces as middle dots.
  if (!s.empty() && s.find_first_not_of(' ') == std::string::npos) {
    for (size_t i = 0; i < s.size(); i++) out += "\xC2\xB7";
    return out;
  }
  for (char c : html_escape(s)) {
    if (c == '\n') out += "\xE2\x86\xB5";  // ↵: a newline token stays visible in its cell
    else if (c == '\t') out += "\xE2\x87\xA5";
    else out += c;
  }
  return out.empty() ? "&#8709;" : out;
}

const char* kStyle = R"(body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}table{border-collapse:collapse}td,th{padding:2px 6px;vertical-align:top;border-bottom:1px solid #eee}
th{text-align:left;font-weight:600}.n{text-align:right;color:#666}
.tok{display:inline-block;font:13px/1.5 ui-monospace,monospace;white-space:pre;padding:0 3px;margin:1px;border-radius:3px;border:1px solid #ccc}
.pending{background:#e0e0e0}.accepted{background:#7ad67a;border-color:#3a3}.correct{background:#d8f5d0;border-color:#9c9}
.misplaced{background:#ffe27a;border-color:#da3}.rejected{background:#f6c3c3;border-color:#d99}
.window{font-style:italic}.candidate{border-style:dashed}.blk1{box-shadow:inset 0 -3px #36c}.blk2{box-shadow:inset 0 -3px #c3c}
.blk3{box-shadow:inset 0 -3px #3cc}.blk4{box-shadow:inset 0 -3px #c93}
.grp{color:#888;font-size:11px;margin:0 2px 0 8px}.bar{display:inline-block;height:10px;background:#3a3;vertical-align:middle}
.tree{list-style:none;margin:0;padding-left:16px;border-left:1px dotted #bbb}details>.tree{border:0;padding-left:0}
summary{cursor:pointer}.out span{white-space:pre-wrap}.out .f0{background:#eef6ff}.out .f1{background:#fff4e6}.legend .tok{margin-right:8px})";

}  // namespace

const char* row_fate_name(RowFate f) {
  switch (f) {
    case RowFate::Pending: return "pending";
    case RowFate::Accepted: return "accepted";
    case RowFate::Correct: return "correct";
    case RowFate::Misplaced: return "misplaced";
    case RowFate::Rejected: return "rejected";
  }
  return "?";
}

std::vector<RowFate> classify_rows(const ForwardRecord& f, const std::vector<int32_t>& full) {
  std::vector<RowFate> out(f.tokens.size(), RowFate::Rejected);
  if (f.tokens.empty()) return out;
  const int base = f.positions[0];  // the pending token's position
  const int n_committed = static_cast<int>(f.committed.size());
  const int n = static_cast<int>(full.size());
  for (size_t r = 0; r < f.tokens.size(); r++) {
    const int p = f.positions[r];
    const int32_t t = f.tokens[r];
    const RowRole role = f.tags[r].role;
    if (role == RowRole::Pending) {
      out[r] = RowFate::Pending;
      continue;
    }
    const bool right = p >= 0 && p < n && full[p] == t;
    // Committed tokens fill positions base+1 .. base+n_committed; the last of them is the model's own
    // (bonus) prediction, so verified guesses are accepted up to base+n_committed-1.
    const bool verified = role == RowRole::Draft || role == RowRole::Candidate;
    if (right && verified && p > base && p < base + n_committed) out[r] = RowFate::Accepted;
    else if (right) out[r] = RowFate::Correct;
    else {
      for (int q = std::max(0, p - kMisplacedReach); q <= std::min(n - 1, p + kMisplacedReach); q++)
        if (q != p && full[q] == t) out[r] = RowFate::Misplaced;
    }
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  return o;
}

// A forward's tree of drafts, folded: the summary shows the path the model took, the details every branch.
std::string tree_html(const TraceDoc& d, const ForwardRecord& f, const std::vector<RowFate>& fate) {
  const int n = static_cast<int>(f.tokens.size());
  std::vector<std::vector<int>> children(static_cast<size_t>(n));
  for (int r = 1; r < n; r++) children[static_cast<size_t>(f.parents[static_cast<size_t>(r)])].push_back(r);
  auto tok = [&](int r) {
    return "<span class=\"tok " + std::string(row_fate_name(fate[static_cast<size_t>(r)])) + "\" title=\"position " +
           std::to_string(f.positions[static_cast<size_t>(r)]) + ", " + row_fate_name(fate[static_cast<size_t>(r)]) + "\">" +
           piece_html(d, f.tokens[static_cast<size_t>(r)]) + "</span>";
  };
  std::string path = tok(0);
  for (int r = 0;;) {
    int next = -1;
    for (int c : children[static_cast<size_t>(r)])
      if (fate[static_cast<size_t>(c)] == RowFate::Accepted) next = c;
    if (next < 0) break;
    path += tok(r = next);
  }
  std::string h = "<details><summary>" + path + " <span class=\"grp\">tree of " + std::to_string(n) + " rows</span></summary><ul class=\"tree\">";
  std::vector<std::pair<int, bool>> stack = {{0, true}};  // (row, opening): an iterative walk, depth-first
  while (!stack.empty()) {
    auto [r, opening] = stack.back();
    stack.pop_back();
    if (!opening) {
      h += "</ul></li>";
      continue;
    }
    h += "<li>" + tok(r) + "<ul class=\"tree\">";
    stack.push_back({r, false});
    const auto& c = children[static_cast<size_t>(r)];
    for (auto it = c.rbegin(); it != c.rend(); ++it) stack.push_back({*it, true});
  }
  return h + "</ul></details>";
}

std::string trajectory_html(const TraceDoc& d) {
  const std::vector<int32_t> full = d.full_tokens();
  const auto& fw = d.trace.forwards;
  size_t max_committed = 1, rows = 0;
  for (const auto& f : fw) max_committed = std::max(max_committed, f.committed.size()), rows += f.tokens.size();
  std::string h = "<!doctype html>\n<html><head><meta charset=\"utf-8\"/><title>jf trajectory: " + html_escape(d.decoder) +
                  "</title>\n<style>" + kStyle + "</style></head><body>\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%zu forwards, %zu tokens, %.2f tokens/forward, %.1f rows/forward",
                fw.size(), d.output.size(), fw.empty() ? 0.0 : double(d.output.size()) / fw.size(),
                fw.empty() ? 0.0 : double(rows) / fw.size());
  h += "<h1>jf trajectory &mdash; " + html_escape(d.decoder) + "</h1>\n<p>" + buf + "</p>\n";
  h += "<p class=\"legend\"><span class=\"tok pending\">pending</span><span class=\"tok accepted\">accepted</span>"
       "<span class=\"tok correct\">right token, not committed here</span><span class=\"tok misplaced\">right token, "
       "wrong position</span><span class=\"tok rejected\">rejected</span><span class=\"tok candidate\">candidate</span>"
       "<span class=\"tok window\">window</span><span class=\"tok blk1\">pseudo-block 1</span>"
       "<span class=\"tok blk2\">pseudo-block 2</span></p>\n";
  // The output, each forward's committed tokens shaded alternately.
  h += "<h2>Output</h2>\n<p class=\"out\">";
  for (size_t i = 0; i < fw.size(); i++) {
    h += "<span class=\"f" + std::to_string(i % 2) + "\" title=\"forward " + std::to_string(i) + "\">";
    for (int32_t t : fw[i].committed) {
      auto it = d.pieces.find(t);
      h += html_escape(it == d.pieces.end() ? unknown_piece(t) : it->second);
    }
    h += "</span>";
  }
  h += "</p>\n<h2>Forwards</h2>\n<table>\n<tr><th>#</th><th>committed</th><th></th><th>rows (pending, draft, "
       "window, candidates, pseudo-blocks)</th><th>committed tokens</th></tr>\n";
  for (size_t i = 0; i < fw.size(); i++) {
    const ForwardRecord& f = fw[i];
    const std::vector<RowFate> fate = classify_rows(f, full);
    // Rows grouped by role and block, each group in position order.
    std::vector<size_t> order(f.tokens.size());
    for (size_t r = 0; r < order.size(); r++) order[r] = r;
    auto group = [&](size_t r) { return static_cast<int>(f.tags[r].role) * 64 + f.tags[r].block; };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return group(a) != group(b) ? group(a) < group(b) : f.positions[a] < f.positions[b];
    });
    h += "<tr class=\"fwd\"><td class=\"n\">" + std::to_string(i) + "</td><td class=\"n\">" +
         std::to_string(f.committed.size()) + "</td><td><span class=\"bar\" style=\"width:" +
         std::to_string(40 * f.committed.size() / max_committed) + "px\"></span></td><td>";
    int last_group = -1;
    if (f.tree()) {
      h += tree_html(d, f, fate);
      order.clear();
    }
    for (size_t r : order) {
      const RowTag tag = f.tags[r];
      if (group(r) != last_group && tag.role != RowRole::Pending && tag.role != RowRole::Draft) {
        std::string label = row_role_name(tag.role);
        if (tag.role == RowRole::Block) {
          label += ' ';
          label += std::to_string(tag.block);
        }
        h += "<span class=\"grp\">" + label + "</span>";
      }
      last_group = group(r);
      std::string cls = std::string("tok ") + row_fate_name(fate[r]);
      if (tag.role == RowRole::Window) cls += " window";
      if (tag.role == RowRole::Candidate) cls += " candidate";
      if (tag.role == RowRole::Block) cls += " blk" + std::to_string(std::min(tag.block, 4));
      std::snprintf(buf, sizeof buf, "position %d, %s, block %d, %s", f.positions[r], row_role_name(tag.role), tag.block,
                    row_fate_name(fate[r]));
      h += "<span class=\"" + cls + "\" title=\"" + buf + "\">" + piece_html(d, f.tokens[r]) + "</span>";
    }
    h += "</td><td>";
    for (int32_t t : f.committed) h += "<span class=\"tok accepted\">" + piece_html(d, t) + "</span>";
    h += "</td></tr>\n";
  }
  h += "</table>\n</body></html>\n";
  return h;
}

void write_trajectory_html(const std::string& path, const TraceDoc& d) {
  const std::string s = trajectory_html(d);
  write_file_atomic(path, s.data(), s.size());
}

}  // namespace jf::viz
