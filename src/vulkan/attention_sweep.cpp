#include "vulkan/attention_sweep.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/error.h"
#include "base/rng.h"
#include "vulkan/vulkan_forward.h"

namespace jf::vulkan {

namespace {
constexpr int kDraftRows = 16;
constexpr double kWithin = 1.03;  // times at one row this close count as equal (the 16-row time decides)

// The least device time of `reps` forwards of `m` rows after the cache's `context` tokens.
double time_forward(VulkanForward& fwd, KvCache& cache, int context, int m, int reps, Rng& rng) {
  double best = 1e30;
  SequenceInput in;
  for (int r = 0; r < reps; r++) {
    std::vector<int32_t> toks(static_cast<size_t>(m));
    for (int32_t& t : toks) t = static_cast<int32_t>(rng.below(static_cast<uint32_t>(fwd.config().vocab_size)));
    in.set_causal(&cache, toks, SequenceInput::Logits::Last);
    fwd.forward(in);
    best = std::min(best, fwd.last_device_seconds());
    cache.truncate(context);
  }
  return best;
}
}  // namespace

std::string attention_name(AttentionChoice a) {
  if (a.chunk == 0) return "whole";
  return "split-" + std::to_string(a.chunk) + (a.rows > 1 ? "-r" + std::to_string(a.rows) : "");
}

AttentionChoice parse_attention_name(const std::string& s) {
  if (s == "whole") return {};
  char* end = nullptr;
  const unsigned long c = s.rfind("split-", 0) == 0 ? std::strtoul(s.c_str() + 6, &end, 10) : 0;
  unsigned long rows = 1;
  if (end && end[0] == '-' && end[1] == 'r' && end[2] >= '0' && end[2] <= '9') rows = std::strtoul(end + 2, &end, 10);
  if (!end || *end || c < 64 || c > 65536 || c % 64 || (rows != 1 && rows != 2 && rows != 4))
    throw Error("attention must be 'whole' or 'split-C[-rR]' with C a multiple of 64 up to 65536 (slots a chunk) and R 1, 2 or 4 (rows a "
                "workgroup), got '" + s + "'");
  return {static_cast<uint32_t>(c), static_cast<uint32_t>(rows)};
}

size_t choose_attention(const std::vector<AttentionTimes>& options) {
  JF_CHECK(!options.empty(), "no attention options timed");
  size_t fastest = 0;
  for (size_t i = 1; i < options.size(); i++)
    if (options[i].one_row < options[fastest].one_row) fastest = i;
  size_t best = fastest;
  for (size_t i = 0; i < options.size(); i++)
    if (options[i].one_row <= options[fastest].one_row * kWithin && options[i].rows < options[best].rows) best = i;
  return best;
}

AttentionSweep sweep_attention(VulkanForward& fwd, int context, int reps) {
  if (!fwd.context().timestamps()) throw Error("Vulkan: " + fwd.device().name + " has no timestamps to time attention with");
  AttentionSweep s;
  const int longest = fwd.config().context_length > 0 ? fwd.config().context_length - kDraftRows : context;
  s.context = std::max(1, std::min(context, longest));
  KvCache cache = fwd.make_cache(s.context + kDraftRows);
  Rng rng(7);
  for (int done = 0; done < s.context;) {  // the context, in prompt-sized forwards
    const int n = std::min(512, s.context - done);
    std::vector<int32_t> toks(static_cast<size_t>(n));
    for (int32_t& t : toks) t = static_cast<int32_t>(rng.below(static_cast<uint32_t>(fwd.config().vocab_size)));
    SequenceInput in;
    in.set_causal(&cache, toks, SequenceInput::Logits::None);
    fwd.forward(in);
    done += n;
  }
  const AttentionChoice before = fwd.attention();
  const AttentionChoice kernels[] = {{0, 1}, {64, 1}, {256, 1}, {1024, 1}, {64, 2}, {256, 2}, {64, 4}, {256, 4}};
  for (const AttentionChoice& k : kernels) {
    fwd.set_attention(k);
    if (!(fwd.attention() == k)) continue;  // (this model's query groups: whole rows only, or fewer rows a workgroup)
    AttentionTimes t;
    t.kernel = k;
    // (one row runs the one-row kernel whatever the rows a workgroup: the same chunk's one-row time, not again)
    const auto one = std::find_if(s.options.begin(), s.options.end(), [&](const AttentionTimes& o) { return o.kernel == AttentionChoice{k.chunk, 1}; });
    t.one_row = k.rows > 1 && one != s.options.end() ? one->one_row : time_forward(fwd, cache, s.context, 1, reps, rng);
    t.rows = time_forward(fwd, cache, s.context, kDraftRows, reps, rng);
    s.options.push_back(t);
  }
  fwd.set_attention(before);
  s.chosen = choose_attention(s.options);
  return s;
}

std::string attention_table(const AttentionSweep& s) {
  std::string out = "attention at a context of " + std::to_string(s.context) + " tokens (a forward's device ms)\n";
  out += "| kernel | 1 row | " + std::to_string(kDraftRows) + " rows | |\n|---|---|---|---|\n";
  char line[160];
  for (size_t i = 0; i < s.options.size(); i++) {
    const AttentionTimes& t = s.options[i];
    std::snprintf(line, sizeof line, "| %s | %.3f | %.3f | %s |\n", attention_name(t.kernel).c_str(), t.one_row * 1e3, t.rows * 1e3,
                  i == s.chosen ? "chosen" : "");
    out += line;
  }
  return out;
}

}  // namespace jf::vulkan
