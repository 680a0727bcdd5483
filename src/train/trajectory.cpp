#include "train/trajectory.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/mapped_file.h"
#include "decode/generation_batch.h"
#include "decode/jacobi.h"

namespace jf {

// ---------------------------------------------------------------- records

std::string TrajectoryRecord::to_json() const {
  nlohmann::json b = nlohmann::json::array();
  for (const TrajectoryBlock& blk : blocks) {
    nlohmann::json jb = {{"start", blk.start}, {"states", blk.states}, {"fixed", blk.fixed}};
    if (blk.eos >= 0) jb["eos"] = blk.eos;
    b.push_back(jb);
  }
  nlohmann::json j = {{"id", id}, {"n", n}, {"prompt", prompt}, {"tokens", tokens}, {"stop", stop}, {"blocks", b}};
  return j.dump();
}

TrajectoryRecord TrajectoryRecord::from_json(const std::string& line) {
  TrajectoryRecord r;
  try {
    const nlohmann::json j = nlohmann::json::parse(line);
    r.id = j.at("id").get<int64_t>();
    r.n = j.at("n").get<int>();
    r.prompt = j.at("prompt").get<std::vector<int32_t>>();
    r.tokens = j.at("tokens").get<std::vector<int32_t>>();
    r.stop = j.at("stop").get<std::string>();
    for (const auto& b : j.at("blocks")) {
      TrajectoryBlock blk;
      blk.start = b.at("start").get<int64_t>();
      blk.states = b.at("states").get<std::vector<std::vector<int32_t>>>();
      blk.fixed = b.at("fixed").get<std::vector<int32_t>>();
      blk.eos = b.value("eos", -1);
      r.blocks.push_back(std::move(blk));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("malformed trajectory record: ") + e.what());
  }
  const int64_t total = static_cast<int64_t>(r.prompt.size() + r.tokens.size());
  if (r.n <= 0) throw Error("malformed trajectory record: block size " + std::to_string(r.n));
  for (const TrajectoryBlock& b : r.blocks) {
    const int text_len = b.eos >= 0 ? b.eos : r.n;  // EOS is not in prompt ++ tokens
    if (static_cast<int>(b.fixed.size()) != r.n || b.eos >= r.n || b.start < 0 || b.start + text_len > total ||
        b.states.empty())
      throw Error("malformed trajectory record " + std::to_string(r.id) + ": block at " + std::to_string(b.start));
    for (const auto& s : b.states)
      if (static_cast<int>(s.size()) != r.n) throw Error("malformed trajectory record " + std::to_string(r.id) + ": state size");
  }
  return r;
}

std::vector<int32_t> TrajectoryRecord::full() const {
  std::vector<int32_t> f = prompt;
  f.insert(f.end(), tokens.begin(), tokens.end());
  return f;
}

// ---------------------------------------------------------------- files

std::vector<int64_t> completed_ids(const std::string& path) {
  std::vector<int64_t> ids;
  if (!file_exists(path)) return ids;
  const std::string text = read_text_file(path);
  size_t good_end = 0;  // bytes of complete, valid lines
  for (size_t pos = 0; pos < text.size();) {
    const size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // an unterminated last line was cut by an interruption
    try {
      ids.push_back(TrajectoryRecord::from_json(text.substr(pos, nl - pos)).id);
    } catch (const Error&) {
      break;  // a damaged line ends the usable part
    }
    pos = good_end = nl + 1;
  }
  if (good_end != text.size()) write_file_atomic(path, text.data(), good_end);
  return ids;
}

std::vector<TrajectoryRecord> read_trajectories(const std::string& path) {
  std::istringstream in(read_text_file(path));
  std::vector<TrajectoryRecord> out;
  std::string line;
  for (int lineno = 1; std::getline(in, line); lineno++) {
    if (line.empty()) continue;
    try {
      out.push_back(TrajectoryRecord::from_json(line));
    } catch (const Error& e) {
      throw Error(path + ":" + std::to_string(lineno) + ": " + e.what());
    }
  }
  return out;
}

namespace {

// Groups the decoder's observations into blocks.
class Recorder : public JacobiObserver {
 public:
  void on_state(int64_t start, std::span<const int32_t> state) override {
    if (blocks.empty() || blocks.back().start != start || !blocks.back().fixed.empty()) {
      blocks.emplace_back();
      blocks.back().start = start;
    }
    blocks.back().states.emplace_back(state.begin(), state.end());
  }
  void on_fixed_point(int64_t start, std::span<const int32_t> tokens) override {
    if (blocks.empty() || blocks.back().start != start || tokens.empty()) return;
    TrajectoryBlock& b = blocks.back();
    // A block ended by EOS reports the text up to and including it: shorter than the block (pad with EOS), or,
    // when EOS follows a complete block, one longer (EOS is not in this block). collect_trajectories marks EOS.
    const size_t n = b.states.front().size();
    b.fixed.assign(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(std::min(tokens.size(), n)));
    b.fixed.resize(n, tokens.back());
  }
  std::vector<TrajectoryBlock> blocks;
};

// Appends lines with a flush and fsync each, so an interrupted run loses at most the line being written.
class LineAppender {
 public:
  explicit LineAppender(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("cannot open '" + path + "' for appending");
  }
  ~LineAppender() {
    if (fd_ >= 0) ::close(fd_);
  }
  void append(const std::string& line) {
    std::string s = line + "\n";
    const char* p = s.data();
    size_t left = s.size();
    while (left > 0) {
      ssize_t w = ::write(fd_, p, left);
      if (w < 0) throw Error("cannot write '" + path_ + "'");
      p += w, left -= static_cast<size_t>(w);
    }
    ::fsync(fd_);
  }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace

namespace {

// The record of prompt `id` from its Jacobi generation and the blocks the recorder saw.
TrajectoryRecord make_record(int64_t id, const std::vector<int32_t>& prompt, const CollectOptions& opt, Recorder& rec,
                             GenerationResult&& r, CollectSummary& sum) {
  TrajectoryRecord record;
  record.id = id;
  record.n = opt.block;
  record.prompt = prompt;
  record.tokens = std::move(r.tokens);
  record.stop = stop_reason_name(r.stop);
  for (TrajectoryBlock& b : rec.blocks)
    if (!b.fixed.empty()) {
      sum.blocks++;
      sum.states += static_cast<int64_t>(b.states.size());
      record.blocks.push_back(std::move(b));
    }
  // EOS sits right after the history; it belongs to the last block unless that block is complete without it.
  if (r.stop == StopReason::Eos && !record.blocks.empty()) {
    TrajectoryBlock& last = record.blocks.back();
    const int64_t eos_slot = static_cast<int64_t>(record.prompt.size() + record.tokens.size()) - last.start;
    if (eos_slot < opt.block) last.eos = static_cast<int>(eos_slot);
  }
  return record;
}

// One prompt's Jacobi decoder (whole iterations: it has an observer) and what it observed.
struct PromptRun {
  Recorder recorder;
  std::unique_ptr<JacobiDecoder> decoder;
};

}  // namespace

CollectSummary collect_trajectories(ForwardPass& fwd, const std::vector<std::vector<int32_t>>& prompts,
                                    const CollectOptions& opt, const std::string& path,
                                    const std::function<void(int64_t, int64_t)>& progress) {
  if (opt.block < 2) throw Error("trajectory block size must be >= 2, got " + std::to_string(opt.block));
  if (opt.shards < 1 || opt.shard < 0 || opt.shard >= opt.shards)
    throw Error("invalid shard " + std::to_string(opt.shard) + "/" + std::to_string(opt.shards));
  const std::vector<int64_t> done_ids = completed_ids(path);
  const std::set<int64_t> done(done_ids.begin(), done_ids.end());
  CollectSummary sum;
  std::vector<int64_t> todo;
  for (int64_t i = 0; i < static_cast<int64_t>(prompts.size()); i++) {
    if (i % opt.shards != opt.shard) continue;
    if (done.count(i)) sum.skipped++;
    else todo.push_back(i);
  }
  LineAppender out(path);
  GenerationConfig cfg;
  cfg.max_new_tokens = opt.max_new_tokens;
  cfg.eos_ids = opt.eos_ids;
  std::map<int, PromptRun> running;
  // Lines go out in prompt order whatever order the batch finishes them in: the file is the same for any
  // number in flight, and a resumed run skips exactly the lines written.
  std::map<int, std::string> finished;
  int written = 0;
  auto start = [&](int t, Session& session) {
    const int64_t i = todo[t];
    PromptRun& run = running[t];
    JacobiOptions jo;
    jo.block = opt.block;
    jo.seed = opt.seed + static_cast<uint64_t>(i);
    jo.observer = &run.recorder;
    run.decoder = std::make_unique<JacobiDecoder>(jo);
    return std::make_unique<Generation>(*run.decoder, session, prompts[i], cfg);
  };
  auto finish = [&](int t, GenerationResult&& r) {
    const int64_t i = todo[t];
    finished[t] = make_record(i, prompts[i], opt, running[t].recorder, std::move(r), sum).to_json();
    running.erase(t);
    for (auto it = finished.begin(); it != finished.end() && it->first == written; it = finished.erase(it)) {
      out.append(it->second);
      sum.prompts++;
      written++;
      if (progress) progress(written, static_cast<int64_t>(todo.size()));
    }
  };
  run_generation_batch(fwd, static_cast<int>(todo.size()), opt.parallel, opt.context_size, opt.kv_type, start, finish);
  return sum;
}

}  // namespace jf
