// Read-only memory map of a whole file: model weights are used in place, never copied.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace jf {

class MappedFile {
 public:
  MappedFile() = default;
  explicit MappedFile(const std::string& path);  // throws jf::Error naming the path on failure
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Gives back this process's copy of the whole pages inside [p, p + n), for data already copied
  // elsewhere: they stay in the page cache and are read again from it if touched (the mapping is
  // read-only, so nothing is lost). No-op for ranges outside this mapping.
  void drop_pages(const void* p, size_t n) const;

 private:
  void release();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Zero-filled anonymous memory for large derived copies (the weights' panel layout): mapped directly and
// marked for transparent huge pages, so filling gigabytes costs a few thousand page faults instead of
// hundreds of thousands, and no separate zeroing pass.
class PageBuffer {
 public:
  PageBuffer() = default;
  explicit PageBuffer(size_t n);  // throws jf::Error when the memory is not available
  ~PageBuffer();
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  PageBuffer(PageBuffer&& o) noexcept;
  PageBuffer& operator=(PageBuffer&& o) noexcept;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Whole file as a string (small text files: config.json, prompts). Throws jf::Error.
std::string read_text_file(const std::string& path);

// Streams a file to `path` atomically: bytes go to a temp file in the same directory, and commit()
// fsyncs and renames it into place. If commit() is never reached (error, interruption) the temp file is
// removed and any existing file at `path` is untouched.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* bytes, size_t n);
  uint64_t written() const { return written_; }
  void commit();

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

void write_file_atomic(const std::string& path, const void* bytes, size_t n);

bool file_exists(const std::string& path);
bool is_directory(const std::string& path);

}  // namespace jf
