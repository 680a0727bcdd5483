// A progress bar on stderr for long runs (shown after a few seconds; a line per 10% when not a terminal).
#pragma once
#include <unistd.h>

#include <cstdio>
#include <string>

#include "base/timer.h"

namespace jf::cli {

class Progress {
 public:
  Progress(int total, std::string label) : total_(total), start_(now_seconds()), tty_(isatty(2)), label_(std::move(label)) {}
  void update(int done, const std::string& what) {
    if (now_seconds() - start_ < 2.0) return;
    if (tty_) {
      const int width = 30, fill = total_ ? width * done / total_ : width;
      std::fprintf(stderr, "\r[%s%s] %d/%d %-40.40s", std::string(fill, '#').c_str(), std::string(width - fill, '.').c_str(),
                   done, total_, what.c_str());
    } else if (total_ > 0 && done * 10 / total_ != last_decile_) {
      last_decile_ = done * 10 / total_;
      std::fprintf(stderr, "jf %s: %d/%d\n", label_.c_str(), done, total_);
    }
  }
  void finish() {
    if (tty_ && now_seconds() - start_ >= 2.0) std::fprintf(stderr, "\r%80s\r", "");
  }

 private:
  int total_;
  double start_;
  bool tty_;
  std::string label_;
  int last_decile_ = 0;
};

}  // namespace jf::cli
