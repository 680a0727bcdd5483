// Typed errors for bad input, raised at the boundary where the input is read; the CLI prints them on one line.
#pragma once
#include <stdexcept>
#include <string>

namespace jf {

// Something the user gave us is wrong (file, flag, request). Message names the problem; no trailing newline.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Always-on invariant check for programming errors (not user input). Throws, never aborts the process.
#define JF_CHECK(cond, msg)                                                                       \
  do {                                                                                            \
    if (!(cond)) throw std::logic_error(std::string("internal check failed: ") + #cond + " (" + \
                                        (msg) + ") at " + __FILE__ + ":" + std::to_string(__LINE__)); \
  } while (0)

}  // namespace jf
