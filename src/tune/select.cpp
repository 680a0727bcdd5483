#include "tune/select.h"

#include <algorithm>
#include <cstdio>

namespace jf::tune {

std::vector<std::string> tuning_grid(int free_rows, bool draft_trees) {
  // Round-robin over the families, narrow drafts first: a small budget that stops part-way through still
  // has measured the cheapest configuration of every decoder.
  std::vector<std::string> grid = {
      "ar",
      "pld:draft-max=2", "lookahead:W=2:N=2:G=2", "jacobi:block=4", "multiblock:block=4:K=2",
      "pld:draft-max=4", "jacobi:block=2", "lookahead:W=3:N=3:G=3", "multiblock:block=8:K=2",
      "pld:draft-max=8", "jacobi:block=3", "lookahead:W=4:N=3:G=4", "multiblock:block=4:K=3",
      "pld:draft-max=16", "jacobi:block=6", "lookahead:W=8:N=4:G=8", "jacobi:block=8"};
  if (draft_trees) {
    grid.insert(grid.begin() + 3, "jacobi:tree=8");
    for (int rows : {16, 32, 64, 128})
      if (rows <= free_rows) grid.push_back("jacobi:tree=" + std::to_string(rows));
  }
  if (free_rows < 16) return grid;
  struct Wide {
    const char* spec;
    int rows;  // rows a forward carries with every block in flight and every candidate sent
  };
  // (n, K, r and the pool as Figure 7 sweeps them; narrowest first again)
  const Wide wide[] = {
      {"jacobi:block=16", 16}, {"multiblock:block=16:K=2", 32}, {"pld:draft-max=32", 32}, {"lookahead:W=16:N=5:G=16", 64},
      {"multiblock:block=16:K=3:r=0.5", 48}, {"jacobi:block=32", 32}, {"multiblock:block=16:K=2:r=0.5:pool=8", 48},
      {"multiblock:block=32:K=2", 64}, {"multiblock:block=16:K=4:r=0.5:pool=8", 80}, {"jacobi:block=64", 64},
      {"multiblock:block=32:K=3:r=0.5:pool=8", 128}, {"multiblock:block=64:K=2:r=0.5", 128},
      {"multiblock:block=64:K=4:r=0.5:pool=8", 320}};
  for (const Wide& w : wide)
    if (w.rows <= 4 * free_rows) grid.push_back(w.spec);
  return grid;
}

void predict(const CostTable& cost, double ctx, std::vector<Candidate>& cands) {
  for (Candidate& c : cands)
    c.predicted_tps = c.measured && c.tpf > 0 ? c.tpf / cost.at(std::max(1.0, c.rows_per_forward), ctx) : 0;
}

std::vector<size_t> to_verify(const std::vector<Candidate>& cands, size_t n) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < cands.size(); i++)
    if (cands[i].measured && cands[i].lossless && cands[i].spec != "ar") idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return cands[a].predicted_tps > cands[b].predicted_tps; });
  if (idx.size() > n) idx.resize(n);
  return idx;
}

std::string choose(const std::vector<Candidate>& cands, double margin, std::string* why) {
  double ar = 0;
  for (const Candidate& c : cands)
    if (c.spec == "ar" && c.verified) ar = c.measured_tps;
  const Candidate* best = nullptr;
  for (const Candidate& c : cands)
    if (c.spec != "ar" && c.verified && c.lossless && (!best || c.measured_tps > best->measured_tps)) best = &c;
  char b[256];
  if (best && ar > 0 && best->measured_tps > ar * (1 + margin)) {
    std::snprintf(b, sizeof b, "%s: %.1f tokens/s against ar's %.1f (%.2fx), lossless on every sample prompt",
                  best->spec.c_str(), best->measured_tps, ar, best->measured_tps / ar);
    if (why) *why = b;
    return best->spec;
  }
  if (best)
    std::snprintf(b, sizeof b, "ar: the best other configuration, %s, reached %.1f tokens/s against ar's %.1f",
                  best->spec.c_str(), best->measured_tps, ar);
  else
    std::snprintf(b, sizeof b, "ar: no other configuration was verified lossless and timed");
  if (why) *why = b;
  return "ar";
}

std::string rule_from_cost(const CostTable& cost, std::string* why, bool draft_trees) {
  // The most free rows at any measured context: load on a shared machine only makes rows look costlier
  // (a slow run of M rows), so the largest knee seen is the least disturbed one.
  int k = 1;
  size_t at = 0;
  for (size_t c = 0; c < cost.contexts.size(); c++)
    if (cost.free_rows(c) > k) k = cost.free_rows(c), at = c;
  std::string spec = k < 2 ? "ar" : k < 8 ? "pld:draft-max=" + std::to_string(std::min(k, 4)) : "lookahead:W=4:N=3:G=4";
  if (draft_trees && k >= 8) spec = "jacobi:tree=" + std::to_string(std::min(k, 64));  // the draft layer's trees, to the knee
  if (why)
    *why = spec + ": up to " + std::to_string(k) + " rows per forward cost at most 15% more than one (context " +
           std::to_string(cost.contexts[at]) + ")";
  return spec;
}

}  // namespace jf::tune
