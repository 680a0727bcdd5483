// Deterministic collection of training text: sorted directory walks, byte budget, binary/invalid files skipped.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error.h"
#include "tokenizer/bpe_train.h"
#include "tokenizer/internal.h"

namespace jf {

namespace {

namespace fs = std::filesystem;

struct Walk {
  std::string ext;
  size_t max_bytes;
  CorpusStats st;
  std::vector<std::string> docs;

  bool wanted(const fs::path& p) const {
    const std::string name = p.filename().string();
    return ext.empty() || (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0);
  }

  void read_file(const fs::path& p) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(p, ec);
    if (ec) {
      st.skipped_unreadable++;
      return;
    }
    if (max_bytes > 0 && st.bytes + size > max_bytes) {
      st.skipped_budget++;
      return;
    }
    std::ifstream f(p, std::ios::binary);
    std::string text;
    if (f) text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (!f && !f.eof()) {
      st.skipped_unreadable++;
      return;
    }
    if (max_bytes > 0 && st.bytes + text.size() > max_bytes) {  // grew since stat
      st.skipped_budget++;
      return;
    }
    if (std::memchr(text.data(), 0, text.size()) != nullptr) {
      st.skipped_binary++;
      return;
    }
    if (!tok::utf8_valid(text)) {
      st.skipped_invalid_utf8++;
      return;
    }
    st.files++;
    st.bytes += text.size();
    docs.push_back(std::move(text));
  }

  void walk_dir(const fs::path& dir) {
    std::error_code ec;
    std::vector<fs::path> entries;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(it->path());
    if (ec) {
      st.skipped_unreadable++;
      return;
    }
    std::sort(entries.begin(), entries.end(), [](const fs::path& a, const fs::path& b) {
      return a.filename().string() < b.filename().string();
    });
    for (const fs::path& p : entries) {
      const fs::file_status s = fs::symlink_status(p, ec);
      if (ec || fs::is_symlink(s)) continue;
      if (fs::is_directory(s)) {
        walk_dir(p);
      } else if (fs::is_regular_file(s) && wanted(p)) {
        read_file(p);
      }
    }
  }
};

}  // namespace

std::vector<std::string> read_corpus(const std::vector<std::string>& roots, const std::string& extension, size_t max_bytes,
                                     CorpusStats* stats) {
  Walk w;
  w.ext = extension.empty() || extension[0] == '.' ? extension : "." + extension;
  w.max_bytes = max_bytes;
  for (const std::string& root : roots) {
    std::error_code ec;
    const fs::file_status s = fs::status(root, ec);  // a root may itself be a link
    if (ec || !fs::exists(s)) throw Error("corpus path '" + root + "' does not exist");
    if (fs::is_directory(s)) {
      w.walk_dir(root);
    } else {
      w.read_file(root);
    }
  }
  if (stats) *stats = w.st;
  return std::move(w.docs);
}

}  // namespace jf
