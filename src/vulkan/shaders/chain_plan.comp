#version 450
// Step j of the draft chains asked for up front (SequenceInput::chain_depth), planned on the device right after
// the forward, so the chain runs in the forward's own submission: one workgroup per chaining sequence finds
// its last verified row as greedy verification does (decode/draft_tree.h: a row is verified when its parent is
// and its token is the parent's greedy token; the deepest verified row ends the path, rows in tree order so a
// parent comes before its children), then writes step j's row: its visible slots (the cache before the forward,
// the verified path's slots in order, the chain's own slots up to step j), their end in the row table, and the
// RoPE angles of its position (the path end's + 1 + j, from the host's table of every candidate). Step 0 also
// writes the chain's first token (the path end's greedy draft), the draft-layer row its hidden state comes
// from, and the path end itself for the host.
#include "common.glsl"
#include "kv.glsl"
layout(local_size_x = WG) in;
// Per chaining sequence c: META[c * 4 ..] = first logit row, logit rows, cache size before the forward, its
// table's first entry; per logit row i: ROWS[rows_off + 5 i ..] = parent logit row (-1 the root, -2 not
// verified), token, cache slot, draft-layer row, draft-logit row.
layout(std430, binding = 0) readonly buffer Meta { int META[]; };
layout(std430, binding = 1) readonly buffer Picks { int PICKS[]; };         // each logit row's greedy token
layout(std430, binding = 2) readonly buffer DraftPicks { int DPICKS[]; };   // each draft-logit row's
layout(std430, binding = 3) buffer Step { int STEP[]; };                    // step j's arena (floats are bits)
layout(std430, binding = 4) buffer Tokens { int TOKENS[]; };                // [step][c]: step 0's input
layout(std430, binding = 5) buffer Source { int SOURCE[]; };                // [c]: x's draft-layer row, then [C + c]: the path end
layout(push_constant) uniform Params {
  uint n_chains, rows_off, step, half_dim;
  uint info_off, slots_off, cos_off, sin_off, table_off;  // in the step's arena
} p;

const uint MAX_ROWS = 1024;  // (the host asks for no chain from a sequence with more logit rows)
shared int parent[MAX_ROWS], token[MAX_ROWS], pick[MAX_ROWS];
shared uint path[MAX_ROWS];
shared uint path_len, path_end;

void main() {
  const uint c = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  if (c >= p.n_chains) return;
  const uint l0 = uint(META[4 * c]), nl = uint(META[4 * c + 1]), past = uint(META[4 * c + 2]), table = uint(META[4 * c + 3]);
  for (uint i = t; i < nl; i += WG) {
    const uint row = p.rows_off + 5 * (l0 + i);
    parent[i] = META[row] < 0 ? META[row] : META[row] - int(l0);
    token[i] = META[row + 1];
    pick[i] = PICKS[l0 + i];
  }
  barrier();
  if (t == 0) {  // the walk: parents precede children, and at most one child of a verified row is verified
    uint n = 1, end = 0;
    path[0] = 0;
    int verified_at = 0;  // the deepest verified row
    for (uint i = 1; i < nl; i++) {
      const int par = parent[i];
      if (par >= 0 && par == verified_at && token[i] == pick[par]) {
        path[n++] = i;
        verified_at = int(i);
        end = i;
      }
    }
    path_len = n, path_end = end;
  }
  barrier();
  const uint n = path_len, end = path_end;
  const uint info = p.info_off + c * ROW_INFO, begin = p.slots_off + uint(STEP[info + 1]);
  const int slot0 = STEP[info] - int(p.step);  // the chain's first slot (the host wrote step j's own)
  for (uint i = t; i < n; i += WG) STEP[begin + past + i] = META[p.rows_off + 5 * (l0 + path[i]) + 2];
  // (its own slot, which step j's attention writes, as -(row + 2): read from the step's keys; attention.comp)
  for (uint k = t; k <= p.step; k += WG) STEP[begin + past + n + k] = k == p.step ? -int(c) - 2 : slot0 + int(k);
  for (uint k = t; k < p.half_dim; k += WG) {  // the angles of position pos(end) + 1 + j
    const uint from = p.table_off + 2 * (table + end) * p.half_dim;
    STEP[p.cos_off + c * p.half_dim + k] = STEP[from + k];
    STEP[p.sin_off + c * p.half_dim + k] = STEP[from + p.half_dim + k];
  }
  if (t == 0) {
    const int list_end = STEP[info + 1] + int(past + n + p.step + 1);
    STEP[info + 2] = list_end, STEP[info + 4] = list_end;  // (the draft layer attends globally: local = all)
    if (p.step == 0) {
      const uint row = p.rows_off + 5 * (l0 + end);
      TOKENS[c] = DPICKS[META[row + 4]];
      SOURCE[c] = META[row + 3];
      SOURCE[p.n_chains + c] = int(l0 + end);
    }
  }
}
