// A record of every forward of one generation, for visualising how a strategy drafts and accepts
// (`jf generate --trace`, `jf viz`). Strategies only label their rows (DecodeContext::tag_rows); the
// driver (class Generation) copies tokens, positions and committed tokens, so tracing never changes an
// algorithm and costs nothing when off.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace jf {

// What a row of a forward is. Untagged rows default to Pending (row 0) and Draft (the others).
enum class RowRole : uint8_t {
  Pending,    // the last committed token (no KV entry yet)
  Draft,      // a guess verified by this forward (jacobi/pld/sjd chain, multiblock's real-active block)
  Window,     // lookahead's n-gram generation window (never committed directly)
  Candidate,  // a verification candidate: lookahead's pool n-grams, multiblock's recycled drafts
  Block,      // a multiblock pseudo-active block (RowTag::block says which, from 1)
};
const char* row_role_name(RowRole r);
// Throws jf::Error for an unknown name.
RowRole parse_row_role(const std::string& name);

struct RowTag {
  RowRole role = RowRole::Draft;
  int block = 0;  // multiblock: 0 = real-active block, b >= 1 = pseudo-active block b
};

struct ForwardRecord {
  std::vector<int32_t> tokens;     // the rows' input tokens
  std::vector<int32_t> positions;  // each row's position in prompt + output (row r guesses text[position])
  std::vector<RowTag> tags;
  std::vector<int32_t> committed;  // tokens this forward committed (the end-of-generation token excluded)
  // A forward that verified a tree with branches (decode/tree_draft.h): each row's parent row (-1: the root);
  // empty for chains.
  std::vector<int32_t> parents;
  bool tree() const { return !parents.empty(); }
};

struct ForwardTrace {
  std::vector<ForwardRecord> forwards;
};

}  // namespace jf
