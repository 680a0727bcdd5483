// A progress bar on stderr for long runs: on a terminal a redrawn bar with rate and ETA (shown after a
// couple of seconds, so quick runs stay quiet); otherwise plain lines at every 10% or every 30 s, which
// read well in logs and CI.
#pragma once
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "base/timer.h"

namespace jf::cli {

// "1:05" / "1:02:03": short enough for a bar.
inline std::string format_duration(double seconds) {
  if (!(seconds >= 0) || std::isinf(seconds)) return "?";
  const long s = std::lround(seconds);
  char b[32];
  if (s >= 3600) std::snprintf(b, sizeof b, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else std::snprintf(b, sizeof b, "%ld:%02ld", s / 60, s % 60);
  return b;
}

// The text of one update: bar (when width > 0), count, rate, ETA and what is being done.
inline std::string progress_text(int done, int total, double elapsed, const std::string& what, int width) {
  std::string s;
  if (width > 0) {
    const int fill = total > 0 ? width * std::min(done, total) / total : 0;
    s = "[" + std::string(fill, '#') + std::string(width - fill, '.') + "] ";
  }
  char b[128];
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double eta = rate > 0 ? (total - done) / rate : -1;
  std::snprintf(b, sizeof b, "%d/%d  %.2f/s  ETA %s", done, total, rate, done > 0 ? format_duration(eta).c_str() : "?");
  s += b;
  if (!what.empty()) s += "  " + what;
  return s;
}

class Progress {
 public:
  Progress(int total, std::string label) : total_(total), start_(now_seconds()), tty_(isatty(2)), label_(std::move(label)) {}
  // For runs whose length is re-estimated on the way (jf tune's timing phase).
  void set_total(int total) { total_ = total; }
  void update(int done, const std::string& what) {
    const double t = now_seconds(), elapsed = t - start_;
    if (elapsed < 2.0) return;
    if (tty_) {
      line_ = progress_text(done, total_, elapsed, what, 30);
      if (line_.size() > 100) line_.resize(100);
      std::fprintf(stderr, "\r%-100s", line_.c_str());
      shown_ = true;
    } else if (total_ > 0 && (done * 10 / total_ != last_decile_ || t - last_line_ >= 30)) {
      last_decile_ = done * 10 / total_;
      last_line_ = t;
      std::fprintf(stderr, "jf %s: %s\n", label_.c_str(), progress_text(done, total_, elapsed, what, 0).c_str());
    }
  }
  // A log line that must not be overwritten by the bar.
  void log(const std::string& line) {
    if (tty_ && shown_) std::fprintf(stderr, "\r%100s\r", "");
    std::fprintf(stderr, "%s\n", line.c_str());
    if (tty_ && shown_) std::fprintf(stderr, "%-100s", line_.c_str());
  }
  void finish() {
    if (tty_ && shown_) std::fprintf(stderr, "\r%100s\r", "");
    shown_ = false;
  }

 private:
  int total_;
  double start_;
  bool tty_;
  std::string label_;
  int last_decile_ = 0;
  double last_line_ = 0;
  bool shown_ = false;
  std::string line_;
};

}  // namespace jf::cli
