#include "train/packing.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/rng.h"

namespace jf {

std::string noise_schedule_name(NoiseSchedule s) {
  return s == NoiseSchedule::Linear ? "linear" : s == NoiseSchedule::Random ? "random" : "reverse";
}

bool noise_schedule_from_name(const std::string& s, NoiseSchedule* out) {
  for (NoiseSchedule n : {NoiseSchedule::Linear, NoiseSchedule::Random, NoiseSchedule::Reverse})
    if (s == noise_schedule_name(n)) {
      *out = n;
      return true;
    }
  return false;
}

std::string mask_kind_name(MaskKind m) {
  return m == MaskKind::NC ? "nc" : m == MaskKind::NCIC ? "nc-ic" : "clean-context";
}

bool mask_kind_from_name(const std::string& s, MaskKind* out) {
  for (MaskKind m : {MaskKind::NC, MaskKind::NCIC, MaskKind::CleanContext})
    if (s == mask_kind_name(m)) {
      *out = m;
      return true;
    }
  return false;
}

int first_mismatch(const std::vector<int32_t>& state, const std::vector<int32_t>& fixed) {
  const int n = static_cast<int>(fixed.size());
  for (int i = 0; i < n; i++)
    if (i >= static_cast<int>(state.size()) || state[i] != fixed[i]) return i;
  return n;
}

double noise_ratio(const std::vector<int32_t>& state, const std::vector<int32_t>& fixed) {
  const int n = static_cast<int>(fixed.size());
  return n ? double(n - first_mismatch(state, fixed)) / n : 0.0;
}

int schedule_window(const PackOptions& o, int record_blocks) {
  const int w = std::max(1, o.window);
  return o.fit_window ? std::max(1, std::min(w, record_blocks)) : w;
}

double schedule_target(const PackOptions& o, int w, int k, uint64_t* rng_state) {
  w = std::max(1, w);
  auto level = [w](int i) { return w == 1 ? 0.0 : double(i) / (w - 1); };  // linspace(0, 1, w)[i]
  switch (o.schedule) {
    case NoiseSchedule::Linear: return level(k % w);
    case NoiseSchedule::Reverse: return level(w - 1 - k % w);
    case NoiseSchedule::Random: {
      Rng rng(*rng_state);
      const int i = static_cast<int>(rng.below(static_cast<uint32_t>(w)));
      *rng_state = rng.state();
      return level(i);
    }
  }
  return 0.0;
}

std::string PackedSequence::to_json() const {
  nlohmann::json j = {{"tokens", tokens}, {"positions", positions}, {"context_len", context_len}, {"n", n},
                      {"first_mismatch", first_mismatch}, {"mask", mask_kind_name(mask)}, {"window", window},
                      {"block0", block0}};
  if (eos >= 0) j["eos"] = eos;
  if (context_noise_cap < 1.0) j["context_noise_cap"] = context_noise_cap;
  return j.dump();
}

PackedSequence PackedSequence::from_json(const std::string& line) {
  PackedSequence p;
  try {
    const nlohmann::json j = nlohmann::json::parse(line);
    p.tokens = j.at("tokens").get<std::vector<int32_t>>();
    p.positions = j.at("positions").get<std::vector<int32_t>>();
    p.context_len = j.at("context_len").get<int>();
    p.n = j.at("n").get<int>();
    p.first_mismatch = j.at("first_mismatch").get<std::vector<int>>();
    if (!mask_kind_from_name(j.at("mask").get<std::string>(), &p.mask)) throw Error("unknown mask kind");
    p.window = j.value("window", 0);
    p.block0 = j.value("block0", 0);
    p.eos = j.value("eos", -1);
    p.context_noise_cap = j.value("context_noise_cap", 1.0);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("malformed packed sequence: ") + e.what());
  }
  if (p.n <= 0 || p.context_len < 1 || p.tokens.size() != p.positions.size() ||
      static_cast<int>(p.tokens.size()) != p.context_len + 2 * p.n * p.blocks())
    throw Error("malformed packed sequence: layout does not add up");
  if (p.eos >= p.n || (p.eos >= 0 && p.blocks() == 0)) throw Error("malformed packed sequence: eos index");
  if (p.mask == MaskKind::NCIC && p.window < 1)
    throw Error("malformed packed sequence: nc-ic needs the noise window (repack with this jf)");
  return p;
}

void PackedSequence::build_mask(VisibilityMask& m) const {
  const int T = static_cast<int>(tokens.size()), C = context_len;
  m.reset(T);
  for (int i = 0; i < C; i++)
    for (int j = 0; j <= i; j++) m.set(i, j);
  for (int k = 0; k < blocks(); k++) {
    for (int side = 0; side < 2; side++) {  // 0 noisy, 1 clean
      const int begin = side == 0 ? noisy_begin(k) : clean_begin(k);
      for (int t = 0; t < n; t++) {
        const int row = begin + t;
        for (int j = 0; j < C; j++) m.set(row, j);
        for (int e = 0; e < k; e++) {
          bool sees_noisy = false;
          if (side == 0 && mask == MaskKind::NC) sees_noisy = true;
          if (side == 0 && mask == MaskKind::NCIC) sees_noisy = (block0 + e) / window == (block0 + k) / window;
          if (noise(e) > context_noise_cap) sees_noisy = false;
          const int eb = sees_noisy ? noisy_begin(e) : clean_begin(e);
          for (int j = 0; j < n; j++) m.set(row, eb + j);
        }
        for (int j = 0; j <= t; j++) m.set(row, begin + j);
      }
    }
  }
}

std::vector<PackedSequence> pack_record(const TrajectoryRecord& r, const PackOptions& o, uint64_t* rng_state) {
  const int n = r.n;
  if (o.max_len < 2 * n + 2) throw Error("max packed length " + std::to_string(o.max_len) + " cannot hold a block pair of " + std::to_string(n));
  const std::vector<int32_t> full = r.full();
  const int w = schedule_window(o, static_cast<int>(r.blocks.size()));
  std::vector<PackedSequence> out;
  PackedSequence cur;
  auto start_sequence = [&](int64_t block_start, int k) {
    // Context: the clean text before the block, cut from the left so at least one block pair fits.
    const int64_t keep = std::min<int64_t>(block_start, o.max_len - 2 * n);
    cur = PackedSequence();
    cur.n = n;
    cur.mask = o.mask;
    cur.window = w;
    cur.block0 = k;
    cur.context_noise_cap = o.context_noise_cap;
    cur.tokens.assign(full.begin() + (block_start - keep), full.begin() + block_start);
    for (int i = 0; i < keep; i++) cur.positions.push_back(i);
    cur.context_len = static_cast<int>(keep);
  };
  int64_t expected_start = -1;  // blocks must be consecutive within one sequence
  for (size_t k = 0; k < r.blocks.size(); k++) {
    const TrajectoryBlock& b = r.blocks[k];
    if (cur.tokens.empty() || b.start != expected_start || static_cast<int>(cur.tokens.size()) + 2 * n > o.max_len) {
      if (cur.blocks() > 0) out.push_back(std::move(cur));
      if (b.start < 1) continue;  // a block needs at least one token of context
      start_sequence(b.start, static_cast<int>(k));
    }
    const double target = schedule_target(o, w, static_cast<int>(k), rng_state);
    size_t best = 0;
    double best_d = 2;
    for (size_t s = 0; s < b.states.size(); s++) {
      const double d = std::fabs(noise_ratio(b.states[s], b.fixed) - target);
      if (d < best_d) best_d = d, best = s;  // earliest state wins ties
    }
    const int pos0 = cur.positions.empty() ? 0 : cur.positions[cur.context_len - 1] + 1 + cur.blocks() * n;
    cur.tokens.insert(cur.tokens.end(), b.states[best].begin(), b.states[best].end());
    cur.tokens.insert(cur.tokens.end(), b.fixed.begin(), b.fixed.end());
    for (int side = 0; side < 2; side++)
      for (int i = 0; i < n; i++) cur.positions.push_back(pos0 + i);
    cur.first_mismatch.push_back(first_mismatch(b.states[best], b.fixed));
    expected_start = b.start + n;
    if (b.eos >= 0) {  // the block that ends the response: nothing follows it
      cur.eos = b.eos;
      expected_start = -1;
    }
  }
  if (cur.blocks() > 0) out.push_back(std::move(cur));
  return out;
}

}  // namespace jf
