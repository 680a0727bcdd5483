// Reading a conversation's input: on a terminal a line editor with history (libedit, BSD-licensed), from a
// pipe plain lines. Ctrl-C is caught, not fatal: interrupt_requested() turns true, a running answer polls it
// and stops, and a read at the prompt returns.
#pragma once
#include <atomic>
#include <memory>
#include <string>

namespace jf::cli {

// Set by SIGINT once install_interrupt_handler() has run; whoever acts on it clears it.
std::atomic<bool>& interrupt_requested();
void install_interrupt_handler();

class LineReader {
 public:
  virtual ~LineReader() = default;
  // One line without its newline; false at end of input (Ctrl-D, end of the pipe) or on Ctrl-C (then
  // interrupt_requested() is true).
  virtual bool read(const std::string& prompt, std::string* line) = 0;
  // Remembers an entered message for the terminal's history (up/down arrows); no-op on a pipe.
  virtual void remember(const std::string& line) {}
};

// A line editor when stdin is a terminal (history kept in `history_path` when not empty), else plain lines.
std::unique_ptr<LineReader> open_line_reader(bool terminal, const std::string& history_path);

}  // namespace jf::cli
