// `jf chat` used as a person uses it: through a pseudo-terminal (two turns, /stats, /save then /load, an
// interrupt mid-answer, Ctrl-C and Ctrl-D at the prompt) and through a pipe; every answer must equal
// `jf generate --chat` for the same conversation and seed. Usage: test_chat_terminal JF_BINARY.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "test_support.h"

namespace {

std::string g_jf;  // the jf binary under test

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command, returning its standard output.
std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

// The sampling flags `jf chat` uses by default, spelled out for `jf generate`.
const std::string kChatSampling = " --temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05";

// jf generate's answer for a chat turn: its stdout without the final newline.
std::string generate_answer(const std::string& model_flags, const std::string& message, const std::string& messages_file) {
  std::string cmd = g_jf + " generate " + model_flags + kChatSampling + " --chat --no-echo -p " + quote(message);
  if (!messages_file.empty()) cmd += " --messages " + quote(messages_file);
  std::string out = run(cmd + " 2>/dev/null");
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// A child process on a pseudo-terminal; `screen` is everything it printed, with \r and escape sequences removed.
class Terminal {
 public:
  explicit Terminal(const std::string& command) {
    winsize ws{40, 200, 0, 0};
    pid_ = forkpty(&fd_, nullptr, nullptr, &ws);
    if (pid_ == 0) {
      // exec: the shell must not stay as the parent, or the terminal's Ctrl-C would end it
      const std::string exec = "exec " + command;
      execl("/bin/sh", "sh", "-c", exec.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) close(fd_);
  }
  bool started() const { return pid_ > 0; }

  void send(const std::string& keys) {
    mark_ = screen_.size();
    ssize_t n = write(fd_, keys.data(), keys.size());
    (void)n;
  }
  // Waits until `text` is on the screen after the last send; false after `seconds`.
  bool expect(const std::string& text, double seconds = 30) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (screen_.find(text, mark_) == std::string::npos) {
      if (std::chrono::steady_clock::now() > end || !pump(50)) return screen_.find(text, mark_) != std::string::npos;
    }
    return true;
  }
  // Everything printed since the last send.
  std::string since_send() const { return screen_.substr(mark_); }
  const std::string& screen() const { return screen_; }
  // The exit status once the child ends within `seconds`, else -1.
  int wait_exit(double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      pump(20);
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }

 private:
  // Reads what is available within `ms`; false once the terminal is closed.
  bool pump(int ms) {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, ms) <= 0) return true;
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof buf);
    if (n <= 0) return false;
    for (ssize_t i = 0; i < n; i++) add(buf[i]);
    return true;
  }
  void add(char c) {
    if (escape_ == 1) {  // after ESC: '[' opens a control sequence, anything else ends a two-byte one
      escape_ = c == '[' ? 2 : 0;
      return;
    }
    if (escape_ == 2) {  // a control sequence ends with a byte in 0x40..0x7e
      if (c >= 0x40 && c <= 0x7e) escape_ = 0;
      return;
    }
    if (c == '\x1b') escape_ = 1;
    else if (c != '\r' && c != '\a') screen_ += c;
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  bool exited_ = false;
  int escape_ = 0;
  size_t mark_ = 0;
  std::string screen_;
};

int reused_in(const std::string& stats) {
  std::smatch m;
  static const std::regex re("prompt: [0-9]+ tokens, ([0-9]+) reused from the cache");
  return std::regex_search(stats, m, re) ? std::stoi(m[1]) : -1;
}

class ChatTerminal : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string shared = jf::test::shared_dir();
    model_ = shared + "/models/stories260K/stories260K.gguf";
    if (shared.empty() || !jf::test::path_exists(model_)) {
      if (jf::test::in_ci()) FAIL() << "CI=true but ../shared/models/stories260K is missing";
      GTEST_SKIP() << "SKIPPED: ../shared/models/stories260K not found";
    }
    flags_ = "-m " + quote(model_) + " --chat-format chatml --seed 9 -n 40 -t 1 --decoder pld";
  }
  std::string model_, flags_;
  jf::test::TempDir dir_{"chat-terminal"};
};

// Types `keys`, then waits for `text` and for the next prompt; what was printed in between.
std::string step(Terminal& t, const std::string& keys, const std::string& text) {
  t.send(keys);
  const bool got = t.expect(text) && t.expect("\n> ");
  EXPECT_TRUE(got) << "no '" << text << "' and prompt after " << keys << ":\n" << t.screen();
  return t.since_send();
}

TEST_F(ChatTerminal, TwoTurnsStatsSaveLoadAndExitAsGenerateAnswers) {
  Terminal t("env HOME=" + quote(dir_.path) + " " + g_jf + " chat " + flags_);
  ASSERT_TRUE(t.started());
  ASSERT_TRUE(t.expect("> ")) << t.screen();
  EXPECT_NE(t.screen().find("chat format chatml"), std::string::npos) << t.screen();

  std::string shown = step(t, "Once upon a time\r", "\n");
  EXPECT_NE(shown.find(generate_answer(flags_, "Once upon a time", "")), std::string::npos) << shown;
  step(t, "/save " + dir_.path + "/turn1.json\r", "saved 2 messages");
  EXPECT_EQ(reused_in(step(t, "/stats\r", "prefilled")), 0);

  shown = step(t, "Tell me more\r", "\n");
  EXPECT_NE(shown.find(generate_answer(flags_, "Tell me more", dir_.path + "/turn1.json")), std::string::npos) << shown;
  const int reused2 = reused_in(step(t, "/stats\r", "prefilled"));
  EXPECT_GT(reused2, 20);  // the first turn came from the cache

  step(t, "/save " + dir_.path + "/turn2.json\r", "saved 4 messages");
  step(t, "/reset\r", "conversation cleared");
  step(t, "/load " + dir_.path + "/turn2.json\r", "loaded 4 messages");
  shown = step(t, "And then?\r", "\n");
  EXPECT_NE(shown.find(generate_answer(flags_, "And then?", dir_.path + "/turn2.json")), std::string::npos) << shown;
  EXPECT_GT(reused_in(step(t, "/stats\r", "prefilled")), reused2);  // the loaded conversation matched the cache

  step(t, "/nonsense\r", "unknown command /nonsense");
  t.send("\x1b[A\x1b[A");  // the line editor's history: up twice brings back the message before /nonsense
  EXPECT_TRUE(t.expect("/stats")) << t.since_send();
  t.send("\x15");  // Ctrl-U clears the line
  t.send("\x04");  // Ctrl-D at an empty prompt
  EXPECT_EQ(t.wait_exit(10), 0) << t.screen();
  std::ifstream history(dir_.path + "/.cache/jf/chat-history");  // kept for the next session
  std::stringstream lines;
  lines << history.rdbuf();
  EXPECT_NE(lines.str().find("/nonsense"), std::string::npos) << lines.str();
}

TEST_F(ChatTerminal, CtrlCStopsTheAnswerThenExitsAtThePrompt) {
  // A model slow enough to interrupt: llama-1b's widths, one layer, Llama's 32000-token vocabulary; greedy.
  const std::string vocab = jf::test::shared_dir() + "/models/tokenizers/ggml-vocab-llama-spm.gguf";
  const std::string model = dir_.path + "/slow.gguf";
  ASSERT_EQ(std::system((g_jf + " random --preset llama-1b --layers 1 --type q8_0 --vocab-from " + quote(vocab) +
                         " -o " + quote(model) + " >/dev/null 2>&1").c_str()), 0);
  Terminal t("env HOME=" + quote(dir_.path) + " " + g_jf + " chat -m " + quote(model) +
             " --chat-format chatml --temp 0 -n 4000 -c 4096 -t 1 --decoder ar");
  ASSERT_TRUE(t.expect("> ", 60)) << t.screen();
  t.send("Hello\r");
  ASSERT_TRUE(t.expect("Hello\n", 10)) << t.screen();
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // a few hundred tokens into a 4000-token answer
  const auto t0 = std::chrono::steady_clock::now();
  t.send("\x03");
  ASSERT_TRUE(t.expect("[interrupted]", 10)) << t.screen();
  ASSERT_TRUE(t.expect("\n> ", 10)) << t.screen();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3.0);
  const std::string stats = step(t, "/stats\r", "prefilled");
  EXPECT_NE(stats.find("stop: interrupted"), std::string::npos) << stats;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(stats, m, std::regex("last answer: ([0-9]+) tokens"))) << stats;
  EXPECT_GT(std::stoi(m[1]), 0);
  EXPECT_LT(std::stoi(m[1]), 4000);
  t.send("\x03");  // Ctrl-C at the prompt leaves
  EXPECT_EQ(t.wait_exit(10), 0) << t.screen();
}

TEST_F(ChatTerminal, PipedTurnsPrintPlainAnswersEqualToGenerate) {
  const std::string input = dir_.path + "/input.txt";
  std::ofstream(input) << "Once upon a time\n/save " << dir_.path << "/p1.json\nTell me \\\na story\n/save " << dir_.path
                       << "/p2.json\n\"\"\"\nTwo lines\nin a block\n\"\"\"\n";
  const std::string out = run(g_jf + " chat " + flags_ + " < " + quote(input) + " 2>/dev/null");
  const std::string a1 = generate_answer(flags_, "Once upon a time", "");
  const std::string a2 = generate_answer(flags_, "Tell me \na story", dir_.path + "/p1.json");
  EXPECT_FALSE(a1.empty());
  const std::string a3 = generate_answer(flags_, "Two lines\nin a block", dir_.path + "/p2.json");
  EXPECT_EQ(out, a1 + "\nsaved 2 messages to " + dir_.path + "/p1.json\n" + a2 + "\nsaved 4 messages to " + dir_.path +
                     "/p2.json\n" + a3 + "\n");
}

TEST_F(ChatTerminal, CommandsAndBadInputAnswerWithOneLine) {
  const std::string input = dir_.path + "/commands.txt";
  std::ofstream(input) << "/help\n/decoder lookahead:W=2:N=3:G=2\n/decoder jacobi\n/decoder nonsense\n/system Be brief.\n"
                          "/save\n/load " << dir_.path << "/missing.json\n/stats\n";
  const std::string out = run(g_jf + " chat " + flags_ + " < " + quote(input) + " 2>&1");
  for (const char* expected : {"Commands:", "decoder lookahead", "error: decoder 'jacobi' is greedy only",
                               "error: unknown decoder 'nonsense'", "system text set", "error: /save needs a file name",
                               "missing.json", "no answer yet"})
    EXPECT_NE(out.find(expected), std::string::npos) << expected << " in:\n" << out;
  // Bad flags and files fail before any conversation, with one line and a non-zero status.
  EXPECT_NE(std::system((g_jf + " chat " + flags_ + " --temp -1 </dev/null >/dev/null 2>&1").c_str()), 0);
  const std::string missing = run(g_jf + " chat -m " + quote(dir_.path + "/none.gguf") + " </dev/null 2>&1; echo status=$?");
  EXPECT_NE(missing.find("none.gguf"), std::string::npos) << missing;
  EXPECT_NE(missing.find("status=1"), std::string::npos) << missing;
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: test_chat_terminal JF_BINARY\n");
    return 2;
  }
  g_jf = argv[1];
  return RUN_ALL_TESTS();
}
