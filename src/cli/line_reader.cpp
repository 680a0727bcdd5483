#include "cli/line_reader.h"

#include <histedit.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cwchar>
#include <filesystem>
#include <iostream>

namespace jf::cli {

std::atomic<bool>& interrupt_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {

void on_sigint(int) { interrupt_requested().store(true); }

// Lines from a pipe or file.
class PlainReader : public LineReader {
 public:
  bool read(const std::string&, std::string* line) override {
    if (interrupt_requested().load()) return false;
    if (!std::getline(std::cin, *line)) return false;
    if (!line->empty() && line->back() == '\r') line->pop_back();
    return true;
  }
};

// libedit with our own character reader: it waits with poll() so that Ctrl-C (a signal, or the raw ^C byte
// where the editor turned signals off) ends the read instead of being retried inside the library.
class EditorReader : public LineReader {
 public:
  explicit EditorReader(std::string history_path) : history_path_(std::move(history_path)) {
    history_ = history_init();
    HistEvent ev;
    history(history_, &ev, H_SETSIZE, 1000);
    history(history_, &ev, H_SETUNIQUE, 1);
    if (!history_path_.empty()) history(history_, &ev, H_LOAD, history_path_.c_str());
    el_ = el_init("jf", stdin, stdout, stderr);
    el_set(el_, EL_EDITOR, "emacs");
    el_set(el_, EL_SIGNAL, 0);
    el_set(el_, EL_HIST, history, history_);
    el_set(el_, EL_CLIENTDATA, this);
    el_set(el_, EL_PROMPT, &EditorReader::prompt_text);
    el_set(el_, EL_GETCFN, &EditorReader::read_char);
  }
  ~EditorReader() override {
    save_history();
    el_end(el_);
    history_end(history_);
  }

  bool read(const std::string& prompt, std::string* line) override {
    if (interrupt_requested().load()) return false;
    prompt_ = prompt;
    int count = 0;
    const char* text = el_gets(el_, &count);
    if (!text || count <= 0) return false;
    *line = text;
    while (!line->empty() && (line->back() == '\n' || line->back() == '\r')) line->pop_back();
    return true;
  }

  void remember(const std::string& line) override {
    if (line.empty()) return;
    HistEvent ev;
    history(history_, &ev, H_ENTER, line.c_str());
  }

 private:
  static char* prompt_text(EditLine* el) {
    void* self = nullptr;
    el_get(el, EL_CLIENTDATA, &self);
    return const_cast<char*>(static_cast<EditorReader*>(self)->prompt_.c_str());
  }

  // One wide character from stdin; -1 on Ctrl-C or a read error, 0 at end of input.
  static int read_char(EditLine* el, wchar_t* out) {
    void* self = nullptr;
    el_get(el, EL_CLIENTDATA, &self);
    std::mbstate_t& state = static_cast<EditorReader*>(self)->mb_state_;
    for (;;) {
      if (interrupt_requested().load()) return -1;
      pollfd p{STDIN_FILENO, POLLIN, 0};
      if (::poll(&p, 1, -1) < 0) {
        if (errno == EINTR) continue;  // the loop's first check sees a Ctrl-C
        return -1;
      }
      char c = 0;
      const ssize_t n = ::read(STDIN_FILENO, &c, 1);
      if (n == 0) return 0;
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return -1;
      }
      if (c == '\x03') {  // ^C delivered as a byte
        interrupt_requested().store(true);
        return -1;
      }
      wchar_t wc = 0;
      const size_t used = std::mbrtowc(&wc, &c, 1, &state);
      if (used == static_cast<size_t>(-2)) continue;  // inside a multi-byte character
      if (used == static_cast<size_t>(-1)) {          // not valid in this locale: pass the byte on
        state = std::mbstate_t{};
        wc = static_cast<unsigned char>(c);
      }
      *out = wc;
      return 1;
    }
  }

  // Written to a temp file renamed into place, so an interrupted save never truncates the history.
  void save_history() {
    if (history_path_.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(history_path_).parent_path(), ec);
    const std::string tmp = history_path_ + ".tmp";
    HistEvent ev;
    if (history(history_, &ev, H_SAVE, tmp.c_str()) >= 0) std::filesystem::rename(tmp, history_path_, ec);
    std::filesystem::remove(tmp, ec);
  }

  std::string history_path_;
  std::string prompt_;
  std::mbstate_t mb_state_{};
  History* history_ = nullptr;
  EditLine* el_ = nullptr;
};

}  // namespace

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read or poll returns EINTR and sees the flag
  sigaction(SIGINT, &sa, nullptr);
}

std::unique_ptr<LineReader> open_line_reader(bool terminal, const std::string& history_path) {
  if (terminal) return std::make_unique<EditorReader>(history_path);
  return std::make_unique<PlainReader>();
}

}  // namespace jf::cli
