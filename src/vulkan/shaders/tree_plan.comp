#version 450
// The draft trees asked for up front (SequenceInput::grow_tree), grown on the device right after the forward by
// the rule of model/tree_growth.h, so every level runs in the forward's own submission. One workgroup per
// tree; step k of the recording (VulkanForward::record_grown_trees):
//  - k = 0: finds the sequence's last verified row as greedy verification does (as chain_plan.comp) and names
//    its draft-logit row, whose top guesses (taken by top_k.comp) are the first level;
//  - k >= 1: appends the children of the last level expanded (k = 1: the first level's guesses) with their
//    scores; then, for k <= levels, chooses level k - 1's expanded candidates (the best `beam` at or above the
//    floor, ties by index) and writes the level's pass: each row's token and the row its hidden state comes
//    from, its visible slots (the cache before the forward, the verified path's slots, its ancestors' and
//    its own) and the RoPE angles of its position (the path end's + k). A row not chosen sees only itself.
// STATE (read by the host after the submission), per tree: [0] candidates, [1] the path end (a logit row of
// the sequence), [2] the newest level's first candidate, [3 ..] each level's rows' candidates (-1: none),
// then CAND words per candidate.
#include "common.glsl"
#include "kv.glsl"
layout(local_size_x = WG) in;
// META as chain_plan.comp's, then per tree at tree_off + t * (1 + 2 * depths * buckets): the first cache slot
// of its expanded rows, then the estimate's tables a and b (float bits).
layout(std430, binding = 0) readonly buffer Meta { int META[]; };
layout(std430, binding = 1) readonly buffer Picks { int PICKS[]; };   // each logit row's greedy token
layout(std430, binding = 2) readonly buffer TopK { uint TOPK[]; };    // [tree][2 width] the first level's; per level at topk_off
layout(std430, binding = 3) buffer Step { int STEP[]; };              // level k - 1's arena (floats are bits)
layout(std430, binding = 4) buffer Gather { int GATHER[]; };          // [tree] the lead's draft-logit row; per level [rows] tokens, [rows] x rows
layout(std430, binding = 5) buffer State { int STATE[]; };
layout(push_constant) uniform Params {
  uint n_trees, rows_off, step, levels, half_dim, width, beam, max_nodes;
  uint depths, buckets, tree_off, state_stride, topk_off;
  uint info_off, slots_off, cos_off, sin_off, table_off;
} p;

const uint MAX_ROWS = 1024, MAX_CANDS = 1024, CAND = 6;  // token, prob, score, parent, depth, expanded row (-1)
shared uint path[MAX_ROWS];
shared uint path_len, path_end;
shared float score[MAX_CANDS];
shared float floor_score;

// The walk of chain_plan.comp: parents precede children, and at most one child of a verified row is verified.
void walk(uint l0, uint nl) {
  uint n = 1, end = 0;
  path[0] = 0;
  for (uint i = 1; i < nl; i++) {
    const uint row = p.rows_off + 5 * (l0 + i);
    const int par = META[row] < 0 ? META[row] : META[row] - int(l0);
    if (par >= 0 && uint(par) == end && META[row + 1] == PICKS[l0 + uint(par)]) path[n++] = i, end = i;
  }
  path_len = n, path_end = end;
}

float estimate(uint t, uint depth, float prob) {
  const uint table = p.tree_off + t * (1 + 2 * p.depths * p.buckets) + 1;
  const uint i = (min(depth, p.depths) - 1) * p.buckets + min(uint(prob * float(p.buckets)), p.buckets - 1);
  precise float product = prob * intBitsToFloat(META[table + p.depths * p.buckets + i]);
  precise float sum = intBitsToFloat(META[table + i]) + product;
  return sum;
}

// Appends the children of the rows expanded at step k - 1 (k = 1: the path end's guesses), as the rows' ranks
// and then their guesses order them; returns the first new candidate's index.
uint append_children(uint t, uint S, uint k) {
  const uint R = p.n_trees * p.beam, first = uint(STATE[S]), w = p.width, cands = S + 3 + p.levels * p.beam;
  const uint sources = k == 1 ? 1 : p.beam;
  uint used = 0;
  for (uint r = 0; r < sources; r++) used += k == 1 || STATE[S + 3 + (k - 2) * p.beam + r] >= 0 ? 1 : 0;
  for (uint i = gl_LocalInvocationID.x; i < used * w; i += WG) {
    const uint r = i / w, g = i % w;
    int parent = -1;
    float parent_score = 1.0;
    uint at = t * 2 * w;
    if (k > 1) {
      parent = STATE[S + 3 + (k - 2) * p.beam + r];
      parent_score = intBitsToFloat(STATE[cands + uint(parent) * CAND + 2]);
      at = p.topk_off + ((k - 2) * R + t * p.beam + r) * 2 * w;
    }
    const float prob = uintBitsToFloat(TOPK[at + w + g]);
    precise float s = parent_score * estimate(t, k, prob);
    const uint c = cands + (first + i) * CAND;
    STATE[c] = int(TOPK[at + g]), STATE[c + 1] = floatBitsToInt(prob), STATE[c + 2] = floatBitsToInt(s);
    STATE[c + 3] = parent, STATE[c + 4] = int(k), STATE[c + 5] = -1;
  }
  memoryBarrierBuffer();
  barrier();
  if (gl_LocalInvocationID.x == 0) STATE[S] = int(first + used * w), STATE[S + 2] = int(first);
  memoryBarrierBuffer();
  barrier();
  return first;
}

// Level k - 1's rows: the candidates chosen (STATE's row table and each one's expanded row).
void choose(uint S, uint k, uint first) {
  const uint t0 = gl_LocalInvocationID.x, n = uint(STATE[S]), cands = S + 3 + p.levels * p.beam;
  for (uint i = t0; i < n; i += WG) score[i] = intBitsToFloat(STATE[cands + i * CAND + 2]);
  if (t0 == 0) floor_score = 0.0;
  for (uint r = t0; r < p.beam; r += WG) STATE[S + 3 + (k - 1) * p.beam + r] = -1;
  memoryBarrierBuffer();
  barrier();
  if (n >= p.max_nodes && p.max_nodes > 0)  // the max_nodes-th best score: fewer above it, enough at or above
    for (uint i = t0; i < n; i += WG) {
      uint above = 0, at_least = 0;
      for (uint j = 0; j < n; j++) above += score[j] > score[i] ? 1 : 0, at_least += score[j] >= score[i] ? 1 : 0;
      if (above < p.max_nodes && at_least >= p.max_nodes) floor_score = score[i];  // (all such are equal)
    }
  barrier();
  for (uint i = first + t0; i < n; i += WG) {
    uint rank = 0;
    for (uint j = first; j < n; j++) rank += score[j] > score[i] || (score[j] == score[i] && j < i) ? 1 : 0;
    if (rank < p.beam && score[i] >= floor_score) {
      STATE[S + 3 + (k - 1) * p.beam + rank] = int(i);
      STATE[cands + i * CAND + 5] = int((k - 1) * p.beam + rank);
    }
  }
  memoryBarrierBuffer();
  barrier();
}

// Level k - 1's pass rows of tree t (rows t * beam + r).
void write_rows(uint t, uint S, uint k) {
  const uint t0 = gl_LocalInvocationID.x, R = p.n_trees * p.beam, cands = S + 3 + p.levels * p.beam;
  const uint l0 = uint(META[4 * t]), past = uint(META[4 * t + 2]), table = uint(META[4 * t + 3]);
  const int base = META[p.tree_off + t * (1 + 2 * p.depths * p.buckets)];
  const uint n = path_len, end = path_end, gather = p.n_trees + (k - 1) * 2 * R;
  for (uint r = 0; r < p.beam; r++) {
    const uint row = t * p.beam + r, info = p.info_off + row * ROW_INFO, begin = p.slots_off + uint(STEP[info + 1]);
    const int c = STATE[S + 3 + (k - 1) * p.beam + r];
    for (uint i = t0; i < p.half_dim; i += WG) {  // the angles of position pos(end) + k
      const uint from = p.table_off + 2 * (table + end) * p.half_dim;
      STEP[p.cos_off + row * p.half_dim + i] = STEP[from + i];
      STEP[p.sin_off + row * p.half_dim + i] = STEP[from + p.half_dim + i];
    }
    if (c < 0) {  // not chosen: its own slot alone, a harmless row
      if (t0 == 0) {
        STEP[begin] = -int(row) - 2;
        STEP[info + 2] = STEP[info + 1] + 1, STEP[info + 3] = STEP[info + 1], STEP[info + 4] = STEP[info + 1] + 1;
        GATHER[gather + row] = 0, GATHER[gather + R + row] = 0;
      }
      continue;
    }
    for (uint i = t0; i < n; i += WG) STEP[begin + past + i] = META[p.rows_off + 5 * (l0 + path[i]) + 2];
    if (t0 == 0) {
      STEP[begin + past + n + k - 1] = -int(row) - 2;  // its own slot: read from the pass's keys (attention.comp)
      int a = STATE[cands + uint(c) * CAND + 3];
      for (uint d = k - 1; d >= 1; d--, a = STATE[cands + uint(a) * CAND + 3])  // ancestors, root-most first
        STEP[begin + past + n + d - 1] = base + STATE[cands + uint(a) * CAND + 5];
      const int list_end = STEP[info + 1] + int(past + n + k);
      STEP[info + 2] = list_end, STEP[info + 4] = list_end;  // (the draft layer attends globally: local = all)
      GATHER[gather + row] = STATE[cands + uint(c) * CAND];
      const int parent = STATE[cands + uint(c) * CAND + 3];  // its hidden state: the path end's, or its parent's row
      GATHER[gather + R + row] = k == 1 ? META[p.rows_off + 5 * (l0 + end) + 3]
                                        : int((k - 2) * R + t * p.beam) + STATE[cands + uint(parent) * CAND + 5] - int((k - 2) * p.beam);
    }
  }
}

void main() {
  const uint t = gl_WorkGroupID.x, t0 = gl_LocalInvocationID.x;
  if (t >= p.n_trees) return;
  const uint S = t * p.state_stride, l0 = uint(META[4 * t]), nl = uint(META[4 * t + 1]);
  if (t0 == 0) walk(l0, nl);
  barrier();
  if (p.step == 0) {
    if (t0 == 0) {
      STATE[S] = 0, STATE[S + 1] = int(path_end), STATE[S + 2] = 0;
      GATHER[t] = META[p.rows_off + 5 * (l0 + path_end) + 4];
    }
    for (uint r = t0; r < p.levels * p.beam; r += WG) STATE[S + 3 + r] = -1;
    return;
  }
  const uint first = append_children(t, S, p.step);
  if (p.step > p.levels) return;
  choose(S, p.step, first);
  write_rows(t, S, p.step);
}
